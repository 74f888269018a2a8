"""GP-GOMEA: gene-pool optimal mixing over fixed-shape trees with a learned linkage tree.

Written on the shared core (`gp`): the same primitives, evaluator and expression strings as
the ellyn family; only the representation of a genome and the variation differ, as in the
papers.
"""
from __future__ import annotations


import numpy as np
from scipy.cluster.hierarchy import linkage
from scipy.spatial.distance import squareform

from odebaselines import gp


class GPGOMEARegressor(gp.GPRegressor):
    """GP-GOMEA (Virgolin, Alderliesten, Witteveen & Bosman, GECCO 2017; Evol. Comput. 29(2),
    2021) with SRBench's settings: population 1000, a budget of `max_evaluations` (SRBench:
    500,000), linear scaling, ERCs, template height `initial_height` (4 or 6).

    A genome is a full binary tree of fixed height in heap order; every position holds a
    function, `y` or a constant, and positions below a leaf or a unary node are introns. Each
    generation a linkage tree over positions is built by UPGMA on the mutual information of
    the symbols across the population; then each individual, for every subset of the linkage
    tree in random order, copies the symbols of a random donor at those positions and keeps
    the change if the (linearly scaled) MSE does not grow. Elitism keeps the best program.
    Differs from the C++ GP-GOMEA: plain mutual information (no bias correction, constants
    counted as one symbol), no forced improvements and no coefficient mutation, no
    interleaved multistart; evaluations that change nothing are skipped, as in the original.
    """

    def __init__(self, population_size=1000, max_evaluations=500_000, initial_height=4,
                 functions=gp.GOMEA_FUNCTIONS, linear_scaling=True, random_state=None, max_time=None):
        self.population_size = population_size
        self.max_evaluations = max_evaluations
        self.initial_height = initial_height
        self.functions = functions
        self.linear_scaling = linear_scaling
        self.random_state = random_state
        self.max_time = max_time

    # ---- genomes: symbols (int array over heap positions) and constants (float array)

    def _search(self, ev, pset, rng):
        self._setup(pset)
        n = self.population_size
        symbols, constants = self._initial(n, rng)
        errors = np.array([self._error(symbols[k], constants[k], ev) for k in range(n)])
        best = int(np.argmin(errors))
        elite = (symbols[best].copy(), constants[best].copy(), errors[best])
        while ev.count < self.max_evaluations and not ev.out_of_time():
            fos = self._linkage_tree(symbols, rng)
            new_symbols, new_constants, new_errors = symbols.copy(), constants.copy(), errors.copy()
            for k in range(n):
                self._mix(new_symbols[k], new_constants[k], new_errors, k, symbols, constants, fos, ev, rng)
                if new_errors[k] < elite[2]:
                    elite = (new_symbols[k].copy(), new_constants[k].copy(), new_errors[k])
                if ev.count >= self.max_evaluations or ev.out_of_time():
                    break
            symbols, constants, errors = new_symbols, new_constants, new_errors
        program = self._program(*elite[:2])
        scale = None
        if self.linear_scaling:
            with gp.quiet_numpy():
                scale = gp.linear_scaling(gp.evaluate(program, ev.y), ev.target)
        return program, scale

    def _setup(self, pset):
        self._names = list(self.functions)
        self._arity = np.array([gp.OPERATORS[f][1] for f in self._names] + [0, 0])
        self._primitives = [pset.mapping[f] for f in self._names]
        self._var = gp.variable_node(pset)
        self._y_symbol, self._c_symbol = len(self._names), len(self._names) + 1
        self._length = 2 ** (self.initial_height + 1) - 1
        self._internal = 2 ** self.initial_height - 1  # positions 0.._internal-1 may hold functions

    def _initial(self, n, rng):
        """Ramped half-and-half over the template: half full, half grow (leaf chance 1/3)."""
        symbols = np.empty((n, self._length), dtype=np.int64)
        constants = np.zeros((n, self._length))
        n_functions = len(self._names)
        for k in range(n):
            functions = rng.integers(n_functions, size=self._length)
            terminals = rng.choice([self._y_symbol, self._c_symbol], size=self._length)
            leaf = np.arange(self._length) >= self._internal
            if k % 2:  # grow
                leaf |= rng.random(self._length) < 1 / 3
                leaf[0] = False
            symbols[k] = np.where(leaf, terminals, functions)
            constants[k] = rng.uniform(-1.0, 1.0, size=self._length)
        return symbols, constants

    def _program(self, symbols, constants):
        """The prefix DEAP program the genome expresses (introns skipped)."""
        nodes, stack = [], [0]
        while stack:
            i = stack.pop()
            s = symbols[i]
            if s == self._y_symbol:
                nodes.append(self._var)
            elif s == self._c_symbol:
                nodes.append(gp.constant_node(constants[i]))
            else:
                nodes.append(self._primitives[s])
                stack.extend([2 * i + 2, 2 * i + 1][2 - self._arity[s]:])
        return nodes

    def _error(self, symbols, constants, ev) -> float:
        values = ev.values(self._program(symbols, constants))
        with gp.quiet_numpy():
            if self.linear_scaling:
                a, b = gp.linear_scaling(values, ev.target)
                values = a + b * values
            return gp.mse(values, ev.target)

    # ---- linkage learning and gene-pool optimal mixing

    def _linkage_tree(self, symbols, rng):
        """Subsets of positions merged by UPGMA on mutual information (root excluded)."""
        n, length = symbols.shape
        k = self._c_symbol + 1
        onehot = np.zeros((n, length * k), dtype=np.float32)
        onehot[np.repeat(np.arange(n), length), (np.arange(length) * k + symbols).ravel()] = 1.0
        joint = (onehot.T @ onehot).reshape(length, k, length, k).transpose(0, 2, 1, 3) / n
        marginal = onehot.mean(axis=0).reshape(length, k)
        with gp.quiet_numpy():
            ratio = joint / (marginal[:, None, :, None] * marginal[None, :, None, :])
            mi = np.nansum(np.where(joint > 0, joint * np.log(ratio), 0.0), axis=(2, 3))
        distance = mi.max() - mi
        np.fill_diagonal(distance, 0.0)
        # random tie-breaking among equal distances, as GP-GOMEA shuffles before clustering
        order = rng.permutation(length)
        merges = linkage(squareform(np.maximum(distance[np.ix_(order, order)], 0.0), checks=False), "average")
        sets = [[int(order[i])] for i in range(length)]
        for a, b, _, _ in merges:
            sets.append(sets[int(a)] + sets[int(b)])
        return [np.array(s) for s in sets[:-1]]

    def _mix(self, sym, const, errors, k, pool_symbols, pool_constants, fos, ev, rng):
        for index in rng.permutation(len(fos)):
            positions = fos[index]
            donor = int(rng.integers(len(pool_symbols)))
            new_sym, new_const = pool_symbols[donor, positions], pool_constants[donor, positions]
            old_sym, old_const = sym[positions].copy(), const[positions].copy()
            if np.array_equal(new_sym, old_sym) and np.array_equal(
                    new_const[new_sym == self._c_symbol], old_const[new_sym == self._c_symbol]):
                continue  # the program cannot change: no evaluation, as in GP-GOMEA
            sym[positions], const[positions] = new_sym, new_const
            error = self._error(sym, const, ev)
            if error <= errors[k]:
                errors[k] = error
            else:
                sym[positions], const[positions] = old_sym, old_const
            if ev.count >= self.max_evaluations or ev.out_of_time():
                return
