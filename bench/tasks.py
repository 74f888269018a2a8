"""Tasks: one trajectory of one ODE, with its ground truth and the noisy sample a method sees.

Observation noise is nested: for a given (task, seed) the sampled time indices and the
standard-normal draws eps are fixed, and the noise level sigma only scales eps. The random
stream depends on the dataset, equation, initial value, n and seed, never on the method.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from bench.method import InvalidInput, Observations
from odecore.arguments import is_noise_level, is_whole


@dataclass(frozen=True)
class Trajectory:
    """One ODE solved from one initial value: the ground truth for scoring.

    For user CSV data without a model, `t`/`y` are the file's own points and the
    extrapolation arrays are empty (`has_truth` is False).
    """

    dataset: str
    equation_id: str
    y0_index: int
    expression: str | None  # true f(y), when known
    y0: float
    t: np.ndarray  # interpolation grid on [0, T] (or the file's times)
    y: np.ndarray
    t_extra: np.ndarray  # extrapolation grid on [T, T_extra] (empty when unknown)
    y_extra: np.ndarray
    has_truth: bool = True
    complexity: int | None = None
    record: str | None = None  # the record's label in a CSV file that holds several (`datasets.CsvReading`)

    @property
    def key(self) -> str:
        return f"{self.dataset}/{self.equation_id}/{self.y0_index}"


@dataclass(frozen=True)
class Task:
    """A trajectory observed with noise level `noise` at `n` points under `seed`."""

    trajectory: Trajectory
    noise: float
    n: int
    seed: int

    def __post_init__(self):
        """Checked as the command line checks them: a bad value names its field, not numpy's error."""
        if not is_noise_level(self.noise):
            raise ValueError(f"Task noise={self.noise!r}: expected a noise level in [0, 1)")
        for name, low in (("n", 1), ("seed", 0)):  # too few points: Observations says so
            if not is_whole(getattr(self, name), low):
                raise ValueError(f"Task {name}={getattr(self, name)!r}: expected a whole number >= {low}")

    @property
    def key(self) -> tuple:
        tr = self.trajectory
        return (tr.dataset, tr.equation_id, tr.y0_index, float(self.noise), int(self.n), int(self.seed))

    def observations(self) -> Observations:
        """What a method sees of this task: the noisy sample, nothing of the truth."""
        t, y = observe(self.trajectory, self.noise, self.n, self.seed)
        try:
            return Observations(t=t, y=y)
        except InvalidInput as err:  # name the task: the dataset's file holds many
            tr = self.trajectory
            raise InvalidInput(f"dataset {tr.dataset!r}, equation {tr.equation_id!r}, y0={tr.y0:g}: {err}") from None


def observe(trajectory: Trajectory, noise: float, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """n points drawn without replacement from the trajectory, sorted, with multiplicative noise."""
    total = len(trajectory.t)
    stream = zlib.crc32(trajectory.key.encode())
    rng = np.random.default_rng([int(seed), stream, int(n)])
    take = min(int(n), total)
    index = np.sort(rng.choice(total, size=take, replace=False))
    eps = rng.standard_normal(take)
    return trajectory.t[index].copy(), trajectory.y[index] * (1.0 + noise * eps)
