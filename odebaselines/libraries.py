"""Adapters that make symbolic-regression libraries follow the FD regressor contract of
`odebaselines.fd`: scikit-learn parameters, `fit(X, dy)` with X = the y column, and
`expression_`, the found f(y) as a string in y with constants at full precision.

Each adapter converts the library's fitted model through the library's own structure (FFX
bases, BSR node trees, Operon's postfix node array, gplearn's prefix program, PySR's sympy
export) or, for FEAT, whose model is only available as text, through Python's `ast` with a
whitelist; nothing is ever passed to `eval`. Libraries are imported inside `fit`, so this
module imports without them and `methods/*.py` can report them unavailable.
"""
from __future__ import annotations

import ast
import contextlib
import io
import math

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin

from odecore.expressions import parse, to_string
from odecore.expressions import Y


def _c(value: float) -> str:
    """A constant at full precision, parenthesised so that signs and powers bind correctly."""
    return f"({float(value)!r})"


# ---------------------------------------------------------------------------- FFX
class FFXRegressor(BaseEstimator, RegressorMixin):
    """Fast Function Extraction (McConaghy 2011), `ffx` package. FFX has no hyperparameters
    (SRBench's grid is empty); the most accurate model of its Pareto front is kept, as in
    SRBench. FFX may call `sys.exit` on a failed ElasticNet fit and uses SIGALRM: run it only
    in a process's main thread (TimeLimited's child does), where SystemExit is caught."""

    def fit(self, X, y):
        import ffx

        X, y = np.asarray(X, float), np.asarray(y, float)
        if np.ptp(X) == 0 or np.ptp(y) == 0:  # FFX scales its bases by their spread, and exits where there is none:
            self.expression_ = _c(np.mean(y))  # its answer where no basis helps, the mean (a record at rest: 0)
            return self
        try:  # FFX prints its failures (whole data arrays) and then calls sys.exit(1)
            with contextlib.redirect_stdout(io.StringIO()):
                model = ffx.FFXRegressor().fit(X, y).model_
        except SystemExit:
            raise RuntimeError("FFX's ElasticNet fit failed (FFX exits on a ValueError, e.g. non-finite bases)") from None
        self.expression_ = ffx_expression(model)
        return self


def ffx_expression(model) -> str:
    if type(model).__name__ == "ConstantModel":  # no basis helped: FFX answers with the mean (no coefs_n)
        if not math.isfinite(model.constant):
            raise ValueError("FFX's constant model is not a number")
        return _c(model.constant)
    numerator = " + ".join([_c(model.coefs_n[0])] + [f"{_c(c)}*({_ffx_base(b)})" for c, b in zip(model.coefs_n[1:], model.bases_n)])
    if not model.bases_d:
        return numerator
    denominator = " + ".join(["1.0"] + [f"{_c(c)}*({_ffx_base(b)})" for c, b in zip(model.coefs_d, model.bases_d)])
    return f"({numerator})/({denominator})"


def _ffx_base(base) -> str:
    from ffx.core.constants import OP_ABS, OP_GTH, OP_LOG10, OP_LTH, OP_MAX0, OP_MIN0

    kind = type(base).__name__
    if kind == "SimpleBase":
        return "y" if base.exponent == 1 else f"y**{_c(base.exponent)}"
    if kind == "ProductBase":
        return f"({_ffx_base(base.base1)})*({_ffx_base(base.base2)})"
    if kind == "OperatorBase":
        s = _ffx_base(base.simple_base)
        hinge = lambda a: f"(({a}) + abs({a}))/2"  # max(0, a)
        return {
            OP_ABS: lambda: f"abs({s})", OP_MAX0: lambda: hinge(s), OP_MIN0: lambda: f"(({s}) - abs({s}))/2",
            OP_LOG10: lambda: f"log({s})*{_c(1 / math.log(10))}",
            OP_GTH: lambda: hinge(f"{_c(base.thr)} - ({s})"), OP_LTH: lambda: hinge(f"({s}) - {_c(base.thr)}"),
        }[base.nonlin_op]()
    raise ValueError(f"unknown FFX base {kind}")


# ---------------------------------------------------------------------------- BSR
# autora-theorist-bsr 1.0.0's proposal (funcs.prop_new) fills every column of its design matrix
# with the output of the tree being changed, not each tree's own; the rank test then rejects every
# move, and the answer is a least-squares fit on the initial random trees. Said in each row.
BSR_STUCK = ("autora-theorist-bsr accepted no MCMC move (its prop_new rejects every proposal for rank): the answer "
             "is a linear fit on the initial random trees, not a posterior sample")


class BSRRegressor(BaseEstimator, RegressorMixin):
    """Bayesian symbolic regression (Jin et al. 2019), `autora-theorist-bsr`: a linear
    combination of `tree_num` trees sampled by MCMC. The last sample is returned; `accepted_`
    counts the moves the sampler accepted (none with autora 1.0.0: then `defect_` is `BSR_STUCK`)."""

    def __init__(self, tree_num=3, itr_num=50, val=100, alpha1=0.4, alpha2=0.4, beta=-1.0, random_state=0):
        self.tree_num = tree_num
        self.itr_num = itr_num
        self.val = val
        self.alpha1 = alpha1
        self.alpha2 = alpha2
        self.beta = beta
        self.random_state = random_state

    def fit(self, X, y):
        from autora.theorist.bsr import BSRRegressor as BSR

        np.random.seed(self.random_state)  # BSR samples with numpy's and scipy's global state
        model = BSR(tree_num=self.tree_num, itr_num=self.itr_num, val=self.val, alpha1=self.alpha1,
                    alpha2=self.alpha2, beta=self.beta).fit(np.asarray(X, float), np.asarray(y, float))
        self.accepted_ = sum(len(errors) for errors in model.train_errs_)  # one error per accepted move
        self.defect_ = None if self.accepted_ else BSR_STUCK  # the FD machinery warns with it, in the row
        beta = np.asarray(model.betas_[-1], dtype=float).reshape(-1)
        trees = [_bsr_node(root) for root in model.roots_[-1]]
        self.expression_ = " + ".join([_c(beta[0])] + [f"{_c(b)}*({tree})" for b, tree in zip(beta[1:], trees)])
        return self


def _bsr_node(node) -> str:
    kind = node.node_type.name
    if kind == "LEAF":
        return "y"
    p = node.params or {}
    if kind == "UNARY":
        x = _bsr_node(node.left)
        return {
            "ln": lambda: f"{_c(p.get('a', 1.0))}*({x}) + {_c(p.get('b', 0.0))}",  # BSR's "ln" is linear a*x + b
            "exp": lambda: f"1/({_c(p.get('cutoff', 1e-10))} + exp(-({x})))",
            "inv": lambda: f"1/({_c(p.get('cutoff', 1e-10))} + ({x}))",
            "neg": lambda: f"-({x})", "sin": lambda: f"sin({x})", "cos": lambda: f"cos({x})",
            "pow2": lambda: f"({x})**2", "pow3": lambda: f"({x})**3",
        }[node.op_name]()
    if kind == "BINARY" and node.op_name in ("+", "-", "*"):
        return f"({_bsr_node(node.left)}) {node.op_name} ({_bsr_node(node.right)})"
    raise ValueError(f"unknown BSR node {kind} {node.op_name}")


# ---------------------------------------------------------------------------- Operon
OPERON_UNARY = {"Exp": "exp({})", "Log": "log({})", "Sin": "sin({})", "Cos": "cos({})", "Tan": "tan({})",
                "Tanh": "tanh({})", "Sqrt": "sqrt({})", "Square": "({})**2", "Abs": "abs({})",
                "Logabs": "log(abs({}))", "Sqrtabs": "sqrt(abs({}))", "Cbrt": "({})**(1/3)"}
OPERON_BINARY = {"Add": "({}) + ({})", "Sub": "({}) - ({})", "Mul": "({})*({})", "Div": "({})/({})",
                 "Pow": "({})**({})", "Aq": "({})/sqrt(1 + ({})**2)"}


def operon_expression(tree) -> str:
    """Infix string of an Operon tree from its postfix node array (a node's children precede
    it; the first operand is the nearest, each next one starts before the previous subtree)."""
    nodes = tree.Nodes

    def build(i: int) -> str:
        node = nodes[i]
        kind = node.Type.name
        if kind == "Constant":
            return _c(node.Value)
        if kind == "Variable":
            return f"{_c(node.Value)}*y"  # Operon variables carry a weight
        children, j = [], i - 1
        for _ in range(node.Arity):
            children.append(build(j))
            j -= nodes[j].Length + 1
        if node.Arity == 1 and kind in OPERON_UNARY:
            return OPERON_UNARY[kind].format(children[0])
        if kind in OPERON_BINARY:  # n-ary nodes fold left to right
            out = children[0]
            for child in children[1:]:
                out = OPERON_BINARY[kind].format(out, child)
            return out
        raise ValueError(f"Operon node {kind} has no translation")

    return build(len(nodes) - 1)


class OperonRegressor(BaseEstimator, RegressorMixin):
    """pyoperon's SymbolicRegressor with `expression_`. A module-level (picklable) wrapper that
    builds the library's regressor in `fit`, so this module imports without pyoperon; None
    leaves a parameter at pyoperon's default."""

    def __init__(self, allowed_symbols=None, population_size=None, pool_size=None, optimizer_iterations=None,
                 max_length=None, generations=None, n_threads=1, random_state=None):
        self.allowed_symbols = allowed_symbols
        self.population_size = population_size
        self.pool_size = pool_size
        self.optimizer_iterations = optimizer_iterations
        self.max_length = max_length
        self.generations = generations
        self.n_threads = n_threads
        self.random_state = random_state

    def fit(self, X, y):
        from pyoperon.sklearn import SymbolicRegressor

        params = {k: v for k, v in self.get_params().items() if v is not None}
        self.model_ = SymbolicRegressor(**params).fit(np.asarray(X, float), np.asarray(y, float))
        self.expression_ = operon_expression(self.model_.model_)
        return self


# ---------------------------------------------------------------------------- gplearn
GPLEARN = {"add": "({}) + ({})", "sub": "({}) - ({})", "mul": "({})*({})", "div": "({})/({})",
           "sqrt": "sqrt(abs({}))", "log": "log(abs({}))", "neg": "-({})", "inv": "1/({})",
           "abs": "abs({})", "sin": "sin({})", "cos": "cos({})", "tan": "tan({})"}


def gplearn_expression(program: list) -> str:
    """Infix string of a gplearn prefix program (functions, feature indices, float constants).
    Protected division, log and inverse are written as plain ones: they differ only where the
    denominator or argument is within 0.001 of zero, and validation scores the written form."""
    position = 0

    def build() -> str:
        nonlocal position
        node = program[position]
        position += 1
        if isinstance(node, (int, np.integer)):
            return "y"
        if isinstance(node, (float, np.floating)):
            return _c(node)
        args = [build() for _ in range(node.arity)]
        if node.name not in GPLEARN:
            raise ValueError(f"gplearn function {node.name} has no translation")
        return GPLEARN[node.name].format(*args)

    return build()


class GplearnRegressor(BaseEstimator, RegressorMixin):
    """gplearn's SymbolicRegressor fitted to the standardised target, so that the parsimony
    coefficient and the constant range mean the same for every ODE (derivatives are often of
    order 0.01), and scaled back. Module-level (picklable); gplearn is imported in `fit`; None
    leaves a parameter at gplearn's default."""

    def __init__(self, population_size=None, generations=None, function_set=None, const_range=None,
                 init_depth=None, p_crossover=None, p_subtree_mutation=None, p_hoist_mutation=None,
                 p_point_mutation=None, parsimony_coefficient=None, metric=None, n_jobs=1, random_state=None):
        self.population_size = population_size
        self.generations = generations
        self.function_set = function_set
        self.const_range = const_range
        self.init_depth = init_depth
        self.p_crossover = p_crossover
        self.p_subtree_mutation = p_subtree_mutation
        self.p_hoist_mutation = p_hoist_mutation
        self.p_point_mutation = p_point_mutation
        self.parsimony_coefficient = parsimony_coefficient
        self.metric = metric
        self.n_jobs = n_jobs
        self.random_state = random_state

    def fit(self, X, y, sample_weight=None):
        from gplearn.genetic import SymbolicRegressor

        y = np.asarray(y, float)
        mean, std = float(np.mean(y)), float(np.std(y)) or 1.0
        params = {k: v for k, v in self.get_params().items() if v is not None}
        self.model_ = SymbolicRegressor(**params).fit(np.asarray(X, float), (y - mean) / std, sample_weight)
        self.expression_ = f"{_c(mean)} + {_c(std)}*({gplearn_expression(self.model_._program.program)})"
        return self


# ---------------------------------------------------------------------------- PySR
class PySRAdapter(BaseEstimator, RegressorMixin):
    """PySR (Cranmer 2023) with the paper's settings; needs Julia. The best equation is taken
    from PySR's own sympy export and printed with full-precision floats."""

    def __init__(self, niterations=40, binary_operators=("+", "-", "*", "/", "^"),
                 unary_operators=("cos", "exp", "sin", "neg", "log", "sqrt"), populations=15, random_state=0):
        self.niterations = niterations
        self.binary_operators = binary_operators
        self.unary_operators = unary_operators
        self.populations = populations
        self.random_state = random_state

    def fit(self, X, y):
        from pysr import PySRRegressor

        model = PySRRegressor(niterations=self.niterations, binary_operators=list(self.binary_operators),
                              unary_operators=list(self.unary_operators), populations=self.populations,
                              random_state=self.random_state, deterministic=True, parallelism="serial",
                              progress=False, verbosity=0, temp_equation_file=True)
        model.fit(np.asarray(X, float), np.asarray(y, float), variable_names=["y"])
        expr = model.sympy()
        self.expression_ = to_string(expr.xreplace({s: Y for s in expr.free_symbols if s.name == "y"}))
        return self


# ---------------------------------------------------------------------------- FEAT
class FEATAdapter(BaseEstimator, RegressorMixin):
    """FEAT (La Cava et al. 2019), `feat-ml`: its model is available only as text, which is read
    with a whitelisting parser (`feat_expression`)."""

    def __init__(self, pop_size=100, gens=100, max_depth=6, max_dim=10, random_state=0):
        self.pop_size = pop_size
        self.gens = gens
        self.max_depth = max_depth
        self.max_dim = max_dim
        self.random_state = random_state

    def fit(self, X, y):
        from feat import Feat

        model = Feat(pop_size=self.pop_size, gens=self.gens, max_depth=self.max_depth, max_dim=self.max_dim,
                     random_state=self.random_state, n_jobs=1, verbosity=0)
        model.fit(np.asarray(X, float), np.asarray(y, float))
        self.expression_ = feat_expression(model.get_eqn())
        return self


def feat_expression(text: str) -> str:
    """FEAT's equation text (features x_0 / x0, '^' for powers) -> our expression string."""
    tree = ast.parse(text.replace("^", "**").strip(), mode="eval")
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in ("x_0", "x0", "X0", "X_0"):
            node.id = "y"
    return to_string(parse(ast.unparse(tree)))  # parse() whitelists every remaining node
