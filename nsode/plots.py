"""The figures of `nsode predict --plot`: one record against its law over twice the observed span,
or several records against their joint law."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from nsode.report import shown, times_text

DENSE_POINTS = 1000  # a plot draws more observations than this small and faint


def axis_labels(columns=("t", "y")) -> tuple[str, str]:
    """The axes named after the file's columns, with the law's letters: `hours (t)`, `OD600 (y)`."""
    return tuple(name if name == letter else f"{name} ({letter})" for name, letter in zip(columns, "ty"))


def law_text(law: str) -> str:
    """y' = `law` as the figures write it, in matplotlib's mathtext ($\\dot{y} = 0.5 y e^{- y}$, not
    `0.5*y*exp(-y)`); as written where it has no such form."""
    import sympy
    from matplotlib.mathtext import MathTextParser

    from odecore.expressions import ExpressionError, parse

    try:
        text = "$\\dot{y} = " + sympy.latex(parse(law), mul_symbol=None) + "$"
        MathTextParser("path").parse(text)  # what the figure will render, checked before it is drawn
    except (ExpressionError, ValueError):
        return f"y' = {law}"
    return text


def plot(path: Path, t, y, expression: str, y0: float | None = None, label: str | None = None,
         rivals: tuple[np.ndarray, list[np.ndarray]] | None = None, aside=None, columns=("t", "y")) -> None:
    """Data against y' = `expression` from y0 over twice the observed span; the legend reads
    `label`, the axes the data's `columns`. `rivals` (a grid and trajectories on it) are drawn thin
    and grey beneath, points set `aside` (t, y) as crosses, or as triangles at the edge beyond the
    axis of the rest (`_set_aside`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from odecore.expressions import compile_scalar
    from odecore.solving import SolveError, solve
    from odecore.expressions import parse

    fig, ax = plt.subplots(figsize=(6, 3.5))
    dense = len(t) > DENSE_POINTS  # a long record drawn as small, faint points: the fit stays visible through it
    ax.plot(t, y, ".", ms=1 if dense else 3, alpha=max(0.1, DENSE_POINTS / len(t)) if dense else 1.0, color="k",
            label="data")
    for i, path_ in enumerate(rivals[1] if rivals else []):
        ax.plot(rivals[0], path_, color="0.6", lw=0.8, label="fits as good on the data" if i == 0 else None)
    if expression:
        grid = np.linspace(t[0], t[0] + 2 * (t[-1] - t[0]), 1024)
        f = compile_scalar(parse(expression))
        start = y[0] if y0 is None else y0
        label = law_text(label or shown(expression))
        try:
            ax.plot(grid, solve(f, start, grid, time_limit=5.0, rest_at_edge=True), label=label, zorder=3)
        except SolveError:  # blows up in the extrapolation: draw the fitted part only
            ax.plot(t, solve(f, start, t, time_limit=5.0, rest_at_edge=True), label=label, zorder=3)
        ax.axvline(t[-1], color="0.7", ls="--", lw=1, label="end of the data")
    if aside is not None and len(aside[0]):
        _set_aside(ax, *map(np.asarray, aside))
    ax.set(xlabel=axis_labels(columns)[0], ylabel=axis_labels(columns)[1])
    legend = ax.legend(fontsize=8)
    if dense:  # the legend's marker as a sparse record's, so that it can be seen
        legend.legend_handles[0].set(alpha=1.0, markersize=3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _set_aside(ax, t: np.ndarray, y: np.ndarray) -> None:
    """Points set aside as crosses, on the axis that the kept data and the fit set: a glitch
    beyond it (1e6 among values near 3 would flatten the record to a line) is a triangle at the
    axis's edge, its value in the legend."""
    lo, hi = ax.get_ylim()
    inside = (lo <= y) & (y <= hi)
    if inside.any():
        ax.plot(t[inside], y[inside], "x", ms=5, color="tab:red", label="set aside")
    edge = ax.get_xaxis_transform()  # x in data, y in axes units: at the edge whatever the scale
    for beyond, height, marker in ((y > hi, 0.97, "^"), (y < lo, 0.03, "v")):
        if beyond.any():
            ax.plot(t[beyond], np.full(beyond.sum(), height), marker, ms=6, color="tab:red", transform=edge,
                    label=f"set aside, off the axis (y = {times_text(y[beyond], 3)})")
    ax.set_ylim(lo, hi)


def record_labels(names: list[str]) -> list[str]:
    """The records' names shortened for a legend to the fewest last parts of their paths that tell
    them apart: run.csv where the file names differ, a/run.csv and b/run.csv where they do not."""
    parts = [Path(name).parts or (name,) for name in names]
    for k in range(1, max(map(len, parts)) + 1):
        labels = [str(Path(*p[-k:])) for p in parts]
        if len(set(labels)) == len(labels):
            return labels
    return list(names)


def _record_colours(count: int) -> list:
    """A colour per record, none twice: matplotlib's ten, else tab20's twenty, else a sequential map."""
    import matplotlib.pyplot as plt

    if count <= 10:
        return [f"C{k}" for k in range(count)]
    if count <= 20:
        return [plt.get_cmap("tab20")(k) for k in range(count)]
    return [plt.get_cmap("viridis")(k / (count - 1)) for k in range(count)]


def plot_records(path: Path, records, names: list[str], law: str, template, values, y0s,
                 columns=("t", "y")) -> None:
    """Each record's data against the joint law's course (`template` with `values`) from its own
    initial value, over twice its observed span (one colour per record); the axes read `columns`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from odecore.fitting import SOLVE_FAILURES, trajectory

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for label, record, y0, colour in zip(record_labels(names), records, y0s, _record_colours(len(records))):
        ax.plot(record.t, record.y, ".", ms=3, color=colour, label=label)
        grid = np.linspace(record.t[0], record.t[0] + 2 * (record.t[-1] - record.t[0]), 512)
        for times in (grid, record.t):  # where it fails beyond the data: the fitted part only
            try:
                ax.plot(times, trajectory(template, values, y0, times), color=colour, lw=1.2)
                break
            except SOLVE_FAILURES:
                continue
    ax.plot([], [], color="0.3", lw=1.2, label="the joint law,\neach from its own y0")
    ax.set(xlabel=axis_labels(columns)[0], ylabel=axis_labels(columns)[1], title=law_text(law))
    ax.title.set_fontsize(10)
    if len(records) > 3:  # beside the axes: inside, a dozen records' entries covered the courses beyond the data
        ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False)
    else:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
