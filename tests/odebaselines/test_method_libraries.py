"""The library-based FD regressors (issue 6): each available one fits y' = 0.23 y (1 - y) from
y0 = 4.9 (n = 256, no noise) to R^2 > 0.99 with a small budget, fails cleanly on a bad
trajectory, and unavailable ones (PySR without Julia, FEAT without feat-ml) skip with the reason."""
import math
import re
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from odebaselines.libraries import feat_expression, ffx_expression, gplearn_expression, operon_expression
from odecore.expressions import ExpressionError, compile_vector, parse
from bench.method import InvalidInput, Prediction
from baselines_support import load, r2_on, run

# small budgets: a few seconds per fit on one core
SMALL = {
    "ffx": {},
    "bsr": {"grid": {"itr_num": [50]}},  # 20 read the curved logistic at R^2 0.50
    "operon": {"grid": {"generations": [30], "max_length": [20]}},
    "gplearn": {"grid": {"generations": [10], "parsimony_coefficient": [0.01]}},
    "pysr": {"grid": {"niterations": [5]}},
    "feat": {"grid": {"pop_size": [100], "gens": [50]}},
}


@pytest.mark.parametrize("name", sorted(SMALL))
@pytest.mark.filterwarnings("ignore:autora-theorist-bsr accepted no MCMC move")  # said and tested below
def test_method_fits_the_logistic_equation(name, logistic, logistic_observations):
    method = load(name)(**SMALL[name])
    prediction = run(method, logistic_observations)
    parse(prediction.expression)
    assert r2_on(logistic, prediction) > 0.99, prediction.expression


@pytest.mark.parametrize("wrong", ["0.2*y", "-0.9*y", "-2.0"])
def test_the_logistic_check_refuses_simpler_laws(wrong, logistic):
    """The check above discriminates: on the curved record no one-term law reaches R^2 0.99."""
    assert r2_on(logistic, Prediction(wrong)) < 0.99


@pytest.mark.parametrize("name", ["ffx", "operon"])
def test_a_trajectory_whose_powers_overflow_gives_a_law_or_a_clean_failure(name, overflowing_observations):
    try:
        parse(run(load(name)(**SMALL[name]), overflowing_observations).expression)
    except (InvalidInput, RuntimeError) as failure:  # a clean failure names what overflowed, not any error
        assert "\n" not in str(failure) and re.search("nan|finite|overflow|infinit", str(failure), re.I), failure


@pytest.mark.parametrize("name", ["pysr", "feat"])
def test_unavailable_method_says_why_in_one_line(name):
    from bench.registry import discover

    reason = discover()[name].instantiate().unavailable_reason()
    if reason is None:
        pytest.skip(f"{name} is available on this machine")
    assert reason and "\n" not in reason


def test_pysr_asks_for_julia_before_importing_pysr(monkeypatch):
    """Importing pysr downloads Julia where it is missing (minutes); listing methods must not."""
    import juliapkg
    from bench.registry import discover

    monkeypatch.setattr(juliapkg, "resolve", lambda dry_run=False, **_: False)  # Julia missing
    monkeypatch.setitem(sys.modules, "pysr", None)  # any import of pysr would now fail
    reason = discover()["pysr"].instantiate().unavailable_reason()
    assert "not installed here" in reason and "\n" not in reason


def test_an_ffx_constant_model_is_a_constant_law():
    # FFX answers with a ConstantModel when no basis helps; reading its coefficients failed the task
    pytest.importorskip("ffx")
    from ffx.core.models import ConstantModel

    from odebaselines.libraries import ffx_expression

    assert parse(ffx_expression(ConstantModel(-0.25, 1))) == parse("-0.25")
    with pytest.raises(ValueError, match="not a number"):
        ffx_expression(ConstantModel(float("nan"), 1))


def test_ffx_on_a_record_at_rest_answers_the_mean_rather_than_exiting():
    # FFX scales its bases by their spread: on a constant record its ElasticNet fit failed the task
    pytest.importorskip("ffx")
    from odebaselines.libraries import FFXRegressor

    assert float(parse(FFXRegressor().fit(np.ones((64, 1)), np.zeros(64)).expression_)) == 0.0
    assert float(parse(FFXRegressor().fit(np.linspace(1, 2, 64)[:, None], np.full(64, 0.5)).expression_)) == 0.5


def test_feat_text_is_read_with_the_whitelisting_parser():
    assert parse(feat_expression("0.5*x_0^2 + sin(x_0)")) == parse("0.5*y**2 + sin(y)")
    with pytest.raises(ExpressionError):
        feat_expression("__import__('os').getcwd()")


@pytest.mark.filterwarnings("ignore:divide by zero encountered in log")  # autora's own tree prior at depth 0
def test_bsr_says_in_its_row_when_its_sampler_accepted_no_move(logistic_observations):
    """autora-theorist-bsr 1.0.0 rejects every proposal (its prop_new): the answer is then a fit on
    the initial random trees, and the row's warnings must say so, from the child process its fits
    run in; a sampler that moves is not flagged."""
    import warnings

    import numpy as np

    pytest.importorskip("autora.theorist.bsr")
    from odebaselines.libraries import BSR_STUCK, BSRRegressor

    y = np.linspace(0.1, 0.9, 60)
    model = BSRRegressor(itr_num=5, val=10).fit(y[:, None], 0.23 * y * (1 - y))
    assert model.accepted_ == 0 and model.defect_ == BSR_STUCK  # the pinned 1.0.0's sampler never moves
    with warnings.catch_warnings(record=True) as caught:  # as the harness's worker records them
        warnings.simplefilter("always")
        run(load("bsr")(grid={"itr_num": [5]}), logistic_observations)
    assert any(str(w.message) == BSR_STUCK for w in caught)


def test_bsr_counts_the_moves_a_sampler_accepted(monkeypatch):
    """A sampler that moves (one error recorded per accepted move) is not flagged as stuck."""
    from types import SimpleNamespace

    import numpy as np

    bsr = pytest.importorskip("autora.theorist.bsr")
    from odebaselines.libraries import BSRRegressor

    class Moving:
        def __init__(self, **settings):
            pass

        def fit(self, X, y):
            leaf = SimpleNamespace(node_type=SimpleNamespace(name="LEAF"))
            self.train_errs_, self.betas_, self.roots_ = [[0.3, 0.2], [0.1]], [[0.5, 2.0]], [[leaf]]
            return self

    monkeypatch.setattr(bsr, "BSRRegressor", Moving)
    model = BSRRegressor().fit(np.ones((4, 1)), np.ones(4))
    assert model.accepted_ == 3 and model.defect_ is None
    assert parse(model.expression_) == parse("0.5 + 2.0*y")


def test_pysr_is_unavailable_when_juliapkg_cannot_tell_whether_julia_is_installed(monkeypatch):
    """A failing check must not list PySR as available (its first task would then download Julia)."""
    import juliapkg
    from bench.registry import discover

    def broken(dry_run=False, **_):
        raise RuntimeError("no project file")

    monkeypatch.setattr(juliapkg, "resolve", broken)
    monkeypatch.setitem(sys.modules, "pysr", None)
    reason = discover()["pysr"].instantiate().unavailable_reason()
    assert reason == "cannot check for Julia (juliapkg: RuntimeError: no project file)"


def test_pysr_is_unavailable_when_julia_is_installed_but_pysr_cannot_start_it(monkeypatch):
    import juliapkg
    from bench.registry import discover

    monkeypatch.setattr(juliapkg, "resolve", lambda dry_run=False, **_: True)  # Julia installed
    monkeypatch.setitem(sys.modules, "pysr", None)  # importing pysr fails, as juliacall does when Julia breaks
    reason = discover()["pysr"].instantiate().unavailable_reason()
    assert reason.startswith("PySR cannot start Julia here (import pysr: ") and "\n" not in reason


def test_feat_names_feat_ml_only_when_feat_itself_is_missing(monkeypatch):
    from bench.registry import discover

    cls = discover()["feat"].load()
    monkeypatch.setattr(cls, "requires", ("feat_absent_for_this_test",))
    assert cls().unavailable_reason().startswith("feat-ml is not installed (it does not build here")
    monkeypatch.setattr(cls, "requires", ("numdiff_absent_for_this_test",))
    assert cls().unavailable_reason().startswith("cannot import numdiff_absent_for_this_test")


def _at(expression, *ys):
    return compile_vector(parse(expression))(np.array(ys, dtype=float))


def _ffx_operator(op, thr=0.0):
    base = type("SimpleBase", (), {"exponent": 1})()
    return type("OperatorBase", (), {"simple_base": base, "nonlin_op": op, "thr": thr})()


def test_ffx_hinge_and_log10_bases_are_translated_with_their_meaning():
    """FFX's min(0, y) is (y - |y|)/2 and its log10(y) is log(y)/ln(10), inside 0 + 1*(base)."""
    pytest.importorskip("ffx")
    from ffx.core.constants import OP_LOG10, OP_MAX0, OP_MIN0

    def law(op):
        return ffx_expression(SimpleNamespace(coefs_n=[0.0, 1.0], bases_n=[_ffx_operator(op)], bases_d=[], coefs_d=[]))
    assert _at(law(OP_MIN0), -3.0, 2.0) == pytest.approx([-3.0, 0.0])
    assert _at(law(OP_MAX0), -3.0, 2.0) == pytest.approx([0.0, 2.0])
    assert _at(law(OP_LOG10), 1000.0) == pytest.approx([3.0])


def test_an_ffx_rational_model_divides_by_one_plus_its_denominator_bases():
    pytest.importorskip("ffx")
    simple = type("SimpleBase", (), {"exponent": 1})()
    model = SimpleNamespace(coefs_n=[2.0, 0.0], bases_n=[simple], bases_d=[simple], coefs_d=[1.0])
    assert _at(ffx_expression(model), 1.0, 3.0) == pytest.approx([1.0, 0.5])  # 2 / (1 + y)


def test_operon_operands_are_read_from_the_postfix_array_past_each_subtree():
    """Sub's first operand is the nearest subtree (2 * (1 y), 3 nodes), its second starts before it."""
    def node(kind, arity=0, length=0, value=0.0):
        return SimpleNamespace(Type=SimpleNamespace(name=kind), Arity=arity, Length=length, Value=value)
    nodes = [node("Constant", value=3.0), node("Variable", value=1.0), node("Constant", value=2.0),
             node("Mul", 2, 2), node("Sub", 2, 4)]
    assert _at(operon_expression(SimpleNamespace(Nodes=nodes)), 1.0, 2.0) == pytest.approx([-1.0, 1.0])  # 2y - 3


def test_gplearn_protected_sqrt_and_log_take_the_absolute_value():
    """gplearn's sqrt and log are of |x|: a law found on y > 0 stays defined where the course turns negative."""
    sqrt, log = SimpleNamespace(name="sqrt", arity=1), SimpleNamespace(name="log", arity=1)
    assert _at(gplearn_expression([sqrt, 0]), -4.0) == pytest.approx([2.0])
    assert _at(gplearn_expression([log, 0]), -math.e) == pytest.approx([1.0])


def test_feat_features_spelt_x0_or_X_0_are_y():
    assert _at(feat_expression("2*x0 + X_0^2 - X0 + x_0"), 3.0) == pytest.approx([15.0])
