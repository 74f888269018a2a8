"""ellyn's four SRBench configurations re-implemented on the shared DEAP core: AFP, FE-AFP, EHC, EPLEX.

SRBench ran all four through William La Cava's C++ `ellyn` with parameter hill climbing on
(`pHC_on`), elitism, program length <= 64 and initial length <= 20; they differ in selection
(age-fitness Pareto or epsilon-lexicase) and in local search (constants only, or also
epigenetic markers). Shared differences from ellyn: programs are DEAP trees, not ellyn's
linear stack genomes; the final model is the lowest-training-error program ever evaluated
instead of a pick from ellyn's Pareto archive; `max_time` stops the run cooperatively. The
selection rules are plain functions in `odebaselines.gp_selection`.
"""
from __future__ import annotations

import math

import numpy as np

from odebaselines import gp
from odebaselines.gp_selection import epsilon_lexicase, pareto_tournament_deletion


class _Individual:
    """A program with its MSE on all training points, its age (AFP), its MSE on the fitness
    predictor's points (FE-AFP) and its absolute error per point (EPLEX's cases)."""

    __slots__ = ("tree", "error", "age", "rows_error", "cases")

    def __init__(self, tree, error: float, age: int = 0):
        self.tree, self.error, self.age, self.rows_error, self.cases = tree, error, age, error, None


class _EllynRegressor(gp.GPRegressor):
    """Budget: the run stops after `generations` (None: no limit), after `max_evaluations`
    programs scored (SRBench: 500,000, with population x generations held constant across its
    grid), or after `max_time` seconds, whichever comes first."""

    def __init__(self, population_size=1000, generations=None, max_evaluations=500_000,
                 functions=gp.ELLYN_FUNCTIONS, max_length=64, crossover_rate=0.5,
                 hill_climbing_iterations=1, random_state=None, max_time=None):
        self.population_size = population_size
        self.generations = generations
        self.max_evaluations = max_evaluations
        self.functions = functions
        self.max_length = max_length
        self.crossover_rate = crossover_rate
        self.hill_climbing_iterations = hill_climbing_iterations
        self.random_state = random_state
        self.max_time = max_time

    # -- pieces shared by the four configurations

    def _new(self, tree, ev, age=0) -> _Individual:
        ind = _Individual(tree, ev.error(tree), age)
        self._remember(ind)
        return ind

    def _remember(self, ind):
        best = self._best
        if best.tree is None or ind.error < best.error or (ind.error == best.error and len(ind.tree) < len(best.tree)):
            self._best = ind

    def _random_individual(self, pset, ev, age=0) -> _Individual:
        while True:  # ellyn's max_len_init = 20
            tree = gp.random_tree(pset, 1, 4)
            if len(tree) <= 20:
                return self._new(tree, ev, age)

    def _offspring(self, parents, pset, ev, rng) -> _Individual:
        """One child of randomly chosen parents by crossover or mutation; age = oldest parent's."""
        a = parents[int(rng.integers(len(parents)))]
        if rng.random() < self.crossover_rate:
            b = parents[int(rng.integers(len(parents)))]
            tree, age = gp.crossover(a.tree, b.tree, self.max_length), max(a.age, b.age)
        else:
            tree, age = gp.mutate(a.tree, pset, self.max_length), a.age
        return self._new(tree, ev, age)

    @staticmethod
    def _key(ind) -> float:
        """The error selection sees (FE-AFP: the error on the fitness predictor's points)."""
        return ind.error

    def _hill_climb_constants(self, ind, ev, rng) -> _Individual:
        """ellyn's parameter hill climbing: perturb all constants, keep the change if not worse."""
        for _ in range(self.hill_climbing_iterations):
            if not gp.has_constants(ind.tree):
                break
            trial = self._new(gp.perturb_constants(ind.tree, rng), ev, ind.age)
            if self._key(trial) <= self._key(ind):
                ind = trial
        return ind

    def _local_search(self, ind, pset, ev, rng) -> _Individual:
        return self._hill_climb_constants(ind, ev, rng)

    def _generations(self, ev):
        generation = 0
        while (self.generations is None or generation < self.generations) and not self._spent(ev):
            yield generation
            generation += 1

    def _spent(self, ev) -> bool:
        return ev.out_of_time() or (self.max_evaluations is not None and ev.count >= self.max_evaluations)

    def _search(self, ev, pset, rng):
        self._best = _Individual(None, math.inf)
        self._best = self._random_individual(pset, ev)
        population = [self._random_individual(pset, ev) for _ in range(self.population_size - 1)] + [self._best]
        for _ in self._generations(ev):
            population = self._generation(population, pset, ev, rng)
        best = self._best
        del self._best
        return best.tree, None


class AFPRegressor(_EllynRegressor):
    """Age-fitness Pareto optimisation (Schmidt & Lipson, GPTP VIII, 2011), as ellyn/SRBench ran it.

    Each generation: everyone ages by one; N children of uniformly drawn parents (age = oldest
    parent); one random newcomer of age 0; constants hill-climbed; then random pairs of the
    2N+1 are drawn and a member dominated in (age, error) is deleted until N remain (equal
    pairs: the longer one goes). Differs from ellyn: if the (age, error) front alone exceeds N
    it is cut by error (ellyn grows the population instead).
    """

    def _generation(self, population, pset, ev, rng):
        for ind in population:
            ind.age += 1
        pool = list(population)
        for _ in range(len(population)):
            pool.append(self._local_search(self._offspring(population, pset, ev, rng), pset, ev, rng))
            if self._spent(ev):
                return population
        pool.append(self._random_individual(pset, ev, age=0))
        return pareto_tournament_deletion(pool, self.population_size, rng, key=self._key)


class FEAFPRegressor(AFPRegressor):
    """AFP with co-evolved fitness predictors (Schmidt & Lipson, Evol. Comput. 16(1), 2008;
    with AFP as in GPTP 2011), ellyn's `EstimateFitness` as configured in SRBench.

    Solutions are ranked in AFP's Pareto deletion by their error on the best fitness
    predictor, a subset of `predictor_size` (10) training points. A population of
    `n_predictors` (100) predictors evolves `predictor_generations` (10) generations per
    solution generation by uniform crossover and point mutation of indices (tournaments of 2);
    a predictor's fitness is how well its errors rank the `n_trainers` (10) trainer solutions
    (Spearman correlation with their exact errors, ellyn's `FE_rank`). Each generation the
    solution whose predicted error varies most across predictors replaces the oldest trainer.
    Exact errors on all points are computed for trainers and to pick the final model.
    Differs from ellyn: fixed trainer schedule (one per generation).
    """

    def __init__(self, population_size=1000, generations=None, max_evaluations=500_000,
                 functions=gp.ELLYN_FUNCTIONS, max_length=64, crossover_rate=0.5,
                 hill_climbing_iterations=1, predictor_size=10, n_predictors=100, n_trainers=10,
                 predictor_generations=10, random_state=None, max_time=None):
        super().__init__(population_size, generations, max_evaluations, functions, max_length,
                         crossover_rate, hill_climbing_iterations, random_state, max_time)
        self.predictor_size = predictor_size
        self.n_predictors = n_predictors
        self.n_trainers = n_trainers
        self.predictor_generations = predictor_generations

    def _new(self, tree, ev, age=0):
        ind = _Individual(tree, None, age)  # exact error unknown until `_exact`
        ind.rows_error = ev.error(tree, rows=self._rows)
        return ind

    @staticmethod
    def _key(ind) -> float:
        return ind.rows_error

    def _exact(self, ind, ev):
        if ind.error is None:
            ind.error = ev.error(ind.tree)
            self._remember(ind)
        return ind.error

    def _search(self, ev, pset, rng):
        n = len(ev.y)
        size = min(self.predictor_size, n)
        self._predictors = np.array([rng.choice(n, size, replace=False) for _ in range(self.n_predictors)])
        self._rows = self._predictors[0]
        self._best = _Individual(None, math.inf)
        population = [self._random_individual(pset, ev) for _ in range(self.population_size)]
        self._trainers = [population[int(k)] for k in rng.choice(len(population), min(self.n_trainers, len(population)), replace=False)]
        for ind in self._trainers:
            self._exact(ind, ev)
        self._trainer_sq = self._squared_errors(self._trainers, ev, count=False)
        for _ in self._generations(ev):
            if self._evolve_predictors(ev, rng):
                for ind in population:  # errors on the old predictor are not comparable
                    ind.rows_error = ev.error(ind.tree, rows=self._rows)
            population = self._generation(population, pset, ev, rng)
            self._add_trainer(population, ev, rng)
        for ind in sorted(population, key=lambda i: i.rows_error)[: max(1, len(population) // 10)]:
            self._exact(ind, ev)  # the final pick is by exact error
        best = self._best
        del self._best, self._predictors, self._rows, self._trainers, self._trainer_sq
        return best.tree, None

    def _predictor_fitness(self, predictors):
        """Spearman correlation between the trainers' predicted and exact errors, per predictor."""
        exact = np.array([t.error for t in self._trainers])
        if len(exact) < 2:
            return np.zeros(len(predictors))
        predicted = self._trainer_sq[:, predictors].mean(axis=2)  # trainers x predictors
        rank_exact = _centred(np.argsort(np.argsort(exact)).astype(float))
        rank_pred = _centred(np.argsort(np.argsort(predicted, axis=0), axis=0).astype(float))
        norm = np.linalg.norm(rank_pred, axis=0) * np.linalg.norm(rank_exact)
        with gp.quiet_numpy():
            return np.where(norm > 0, rank_exact @ rank_pred / np.where(norm > 0, norm, 1.0), -1.0)

    def _evolve_predictors(self, ev, rng) -> bool:
        """Some generations of the predictor population; True if the best predictor changed."""
        n = len(ev.y)
        population = self._predictors
        fitness = self._predictor_fitness(population)
        for _ in range(self.predictor_generations):
            children = []
            for _ in range(len(population)):
                i, j = rng.choice(len(population), 2), rng.choice(len(population), 2)
                a = population[i[np.argmax(fitness[i])]]
                b = population[j[np.argmax(fitness[j])]]
                child = np.where(rng.random(len(a)) < 0.5, a, b)
                mutate = rng.random(len(child)) < 1.0 / len(child)
                child = np.where(mutate, rng.integers(n, size=len(child)), child)
                children.append(child)
            children = np.array(children)
            child_fitness = self._predictor_fitness(children)
            merged = np.concatenate([population, children])
            merged_fitness = np.concatenate([fitness, child_fitness])
            keep = np.argsort(-merged_fitness, kind="stable")[: len(population)]
            population, fitness = merged[keep], merged_fitness[keep]
        self._predictors = population
        changed = not np.array_equal(self._rows, population[0])
        self._rows = population[0]
        return changed

    def _add_trainer(self, population, ev, rng):
        """Of 20 random solutions, the one whose predicted error varies most across predictors
        becomes a trainer (the oldest trainer leaves)."""
        sample = [population[int(k)] for k in rng.choice(len(population), min(20, len(population)), replace=False)]
        spread = self._squared_errors(sample, ev)[:, self._predictors].mean(axis=2).var(axis=1)
        candidate = sample[int(np.argmax(spread))]
        self._exact(candidate, ev)
        self._trainers = (self._trainers + [candidate])[-self.n_trainers:]
        self._trainer_sq = self._squared_errors(self._trainers, ev, count=False)

    @staticmethod
    def _squared_errors(individuals, ev, count=True):
        ev.count += len(individuals) if count else 0
        with gp.quiet_numpy():
            values = np.array([gp.evaluate(ind.tree, ev.y) for ind in individuals])
            return np.nan_to_num((values - ev.target) ** 2, nan=gp.BAD_ERROR, posinf=gp.BAD_ERROR)


def _centred(ranks):
    return ranks - ranks.mean(axis=0)


class EHCRegressor(AFPRegressor):
    """AFP with epigenetic hill climbing (La Cava, Spector & Danai, GECCO 2015; La Cava's
    thesis 2016), ellyn's `eHC_on` with `eHC_its = 3` as in SRBench, plus parameter hill
    climbing.

    Every primitive carries an epigenetic marker; a silenced primitive passes its first
    argument through. Each generation, each child gets `epigenetic_iterations` hill-climbing
    steps that flip every marker with probability 1/length and keep the flip if the error does
    not grow. Differs from ellyn: markers live in ellyn's linear genomes and are inherited;
    here a child's accepted markers are expressed into its tree (silenced nodes removed) at the
    end of its climb, so offspring inherit the phenotype and start fully active.
    """

    def __init__(self, population_size=1000, generations=None, max_evaluations=500_000,
                 functions=gp.ELLYN_FUNCTIONS, max_length=64, crossover_rate=0.5,
                 hill_climbing_iterations=1, epigenetic_iterations=3, random_state=None, max_time=None):
        super().__init__(population_size, generations, max_evaluations, functions, max_length,
                         crossover_rate, hill_climbing_iterations, random_state, max_time)
        self.epigenetic_iterations = epigenetic_iterations

    def _local_search(self, ind, pset, ev, rng):
        ind = self._hill_climb_constants(ind, ev, rng)
        primitives = [i for i, node in enumerate(ind.tree) if node.arity > 0]
        if not primitives:
            return ind
        silenced, error = frozenset(), ind.error
        for _ in range(self.epigenetic_iterations):
            flips = {p for p in primitives if rng.random() < 1.0 / len(ind.tree)}
            if not flips:
                continue
            trial = silenced ^ flips
            trial_error = ev.error(ind.tree, silenced=trial)
            if trial_error <= error:
                silenced, error = trial, trial_error
        if not silenced:
            return ind
        climbed = _Individual(express(ind.tree, silenced), error, ind.age)
        self._remember(climbed)
        return climbed


def express(tree, silenced) -> "gp.PrimitiveTree":
    """The tree with each silenced primitive replaced by its first argument's subtree."""
    nodes = list(tree)
    for position in sorted(silenced, reverse=True):  # right to left keeps earlier positions valid
        nodes[_subtree(nodes, position)] = nodes[_subtree(nodes, position + 1)]
    return type(tree)(nodes)


def _subtree(nodes, begin) -> slice:
    end, total = begin + 1, nodes[begin].arity
    while total > 0:
        total += nodes[end].arity - 1
        end += 1
    return slice(begin, end)


class EPLEXRegressor(_EllynRegressor):
    """Epsilon-lexicase selection (La Cava, Spector & Danai, GECCO 2016), ellyn's
    `selection='epsilon_lexicase'` as in SRBench, with parameter hill climbing and elitism.

    Generational: parents are chosen by automatic epsilon-lexicase (DEAP's
    `selAutomaticEpsilonLexicase` rule, vectorised in `epsilon_lexicase`) on the absolute
    error at each training point; children replace the population, the best program survives.
    Differs from ellyn's static epsilon (MAD over the whole population per generation): DEAP's
    version recomputes the MAD over the remaining candidates at each step (La Cava et al.
    2019's "dynamic" variant).
    """

    def _new(self, tree, ev, age=0):
        """Evaluated once for both the MSE and lexicase's per-point errors (kept in `cases`)."""
        with gp.quiet_numpy():
            errors = np.abs(ev.values(tree) - ev.target)
            error = float(np.mean(errors ** 2))
        ind = _Individual(tree, error if math.isfinite(error) else math.inf, age)
        ind.cases = np.where(np.isfinite(errors), np.minimum(errors, gp.BAD_ERROR), gp.BAD_ERROR)
        self._remember(ind)
        return ind

    def _generation(self, population, pset, ev, rng):
        errors = np.array([ind.cases for ind in population])
        parents = [population[i] for i in epsilon_lexicase(errors, 2 * len(population))]
        children = [self._best]  # elitism
        for k in range(len(population) - 1):
            a, b = parents[2 * k], parents[2 * k + 1]
            if rng.random() < self.crossover_rate:
                child = self._new(gp.crossover(a.tree, b.tree, self.max_length), ev)
            else:
                child = self._new(gp.mutate(a.tree, pset, self.max_length), ev)
            children.append(self._local_search(child, pset, ev, rng))
            if self._spent(ev):
                break
        return children
