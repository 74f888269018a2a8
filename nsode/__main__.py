"""Command line: python -m nsode predict FILE.csv [MORE.csv ... --joint] [--checkpoint DIR] [--beam N] [--plot out.png]

Reads a CSV with columns t and y (one observed trajectory of a scalar autonomous ODE), prints
the predicted y' = f(y), its R^2 on the data and the best candidates, and optionally plots the
data against the predicted trajectory, extrapolated to twice the observed time span. With
--joint, several files are records of one system (other starts, other runs): one law is read from
them all, its constants shared and an initial value fitted for each (nsode/joint.py).

By default NSODE proposes skeletons and a fitter decides (nsode/search.py): the shipped nsode-eps
reads a trajectory like its training data (times within [0, 2] spanning most of it, max |y|
within 2^3 of 4), the scale-invariant nsode-eps-scaled any other; constants and the initial value
are refitted, fits that fail from a perturbed initial value or on twice the span are rejected,
and an information criterion prefers the simpler of two fits that the noise cannot tell apart.
`--paper` uses the paper's raw-input nsode-eps and its selection (best R^2 of the beam as decoded).
The chosen ODE's constants and initial value are printed (and plotted) to the digits the data
support: rounded at their standard errors, estimated from the trajectory's sensitivity at the
noise level read from the data, with more digits where constants move together (c and p of
c*y**p) and rounding each at its own error would change the law; candidates and `--paper` picks
to 4 significant digits.
It then says how far the fits that the data cannot tell from the pick (criterion within 5) part
from it over twice the observed span; the plot draws them in grey. Where they part, the data do
not determine the extrapolation, whichever law is chosen.
"""
from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path

import numpy as np

from core.arguments import whole_number


class InputError(ValueError):
    """A problem with the user's file, reported as one line."""


def read_trajectory(path: Path, columns: tuple[str, str]) -> tuple[np.ndarray, np.ndarray]:
    """t and y of the user's CSV file (from `columns`), rows sorted by time (`core.trajectories`,
    the harness's reader); every other column, an `expression` too, is ignored."""
    from core.trajectories import TrajectoryFileError, read_trajectory as read

    try:
        data = read(path, sort=True, law=False, columns=columns)
    except TrajectoryFileError as err:
        raise InputError(_hinted(str(err))) from None
    return data.t, data.y


def read_records(path: Path, by: str, columns: tuple[str, str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The records of one CSV file told apart by column `by` (core.trajectories.read_records; t and y
    from `columns`), each sorted by time: {that column's value: (t, y)}."""
    from core.trajectories import TrajectoryFileError, read_records as read

    try:
        return {name: (data.t, data.y) for name, data in read(path, by, columns=columns).items()}
    except TrajectoryFileError as err:
        raise InputError(_hinted(str(err))) from None


def _hinted(message: str) -> str:
    """A file error with the flag that fixes it, where one does."""
    if "duplicate time" in message:
        return message + " (several runs in one file? --by COLUMN reads each run as a record of one law)"
    if "naming columns t and y," in message:
        return message + "; or name the file's own: --columns TIME VALUE"
    return message


def shown(expression: str, digits: int = 4) -> str:
    """The expression with its constants rounded to `digits` significant digits, for reading."""
    import sympy

    from core.expressions import parse
    from nsode.data.tokens import EncodingError, parse_infix, to_infix

    try:
        expr = parse_infix(expression)  # products kept as the model wrote them
    except EncodingError:  # outside the model's vocabulary (abs from the search's variants)
        expr = parse(expression)
    return to_infix(expr.xreplace({f: sympy.Float(float(f"{float(f):.{digits}g}")) for f in expr.atoms(sympy.Float)}))


def numbered_as_read(expr, params, constants) -> tuple[str, list]:
    """The fitted form as text with its constants renamed c0, c1, ... in the order they are read
    (`c0 + c1*y`, not `c1 + c0*y`), and the (value, error) pairs in that order."""
    import re

    import sympy

    from core.expressions import to_string

    text = to_string(expr)
    position = {p: m.start() for p in params for m in [re.search(rf"\b{p}\b", text)] if m}
    order = sorted(range(len(params)), key=lambda i: position.get(params[i], len(text)))
    renamed = expr.xreplace({params[i]: sympy.Symbol(f"c{k}", real=True) for k, i in enumerate(order)})
    return to_string(renamed), [constants[i] for i in order]


def readable(expression: str, y) -> str:
    """The expression with numbers that only rescale a term folded into its coefficient
    (`nsode.digits.identifiable_expression`): y/(4.84 + y), not 246*y/(1190 + 246*y)."""
    from core.expressions import parse, to_string
    from nsode.digits import identifiable_expression

    try:
        return to_string(identifiable_expression(parse(expression), y))
    except (ValueError, TypeError):
        return expression


DENSE_POINTS = 1000  # a plot draws more observations than this small and faint


def plot(path: Path, t, y, expression: str, y0: float | None = None, label: str | None = None,
         rivals: tuple[np.ndarray, list[np.ndarray]] | None = None, aside=None) -> None:
    """Data against y' = `expression` from y0 over twice the observed span; the legend reads
    `label`. `rivals` (a grid and trajectories on it) are drawn thin and grey beneath, points set
    `aside` (t, y) as crosses."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from core.expressions import compile_scalar
    from core.solving import SolveError, solve
    from core.expressions import parse

    fig, ax = plt.subplots(figsize=(6, 3.5))
    dense = len(t) > DENSE_POINTS  # a long record drawn as small, faint points: the fit stays visible through it
    ax.plot(t, y, ".", ms=1 if dense else 3, alpha=max(0.1, DENSE_POINTS / len(t)) if dense else 1.0, color="k",
            label="data")
    if aside is not None and len(aside[0]):
        ax.plot(*aside, "x", ms=5, color="tab:red", label="set aside")
    for i, path_ in enumerate(rivals[1] if rivals else []):
        ax.plot(rivals[0], path_, color="0.6", lw=0.8, label="fits as good on the data" if i == 0 else None)
    if expression:
        grid = np.linspace(t[0], t[0] + 2 * (t[-1] - t[0]), 1024)
        f = compile_scalar(parse(expression))
        start = y[0] if y0 is None else y0
        label = f"y' = {label or shown(expression)}"
        try:
            ax.plot(grid, solve(f, start, grid, time_limit=5.0), label=label, zorder=3)
        except SolveError:  # blows up in the extrapolation: draw the fitted part only
            ax.plot(t, solve(f, start, t, time_limit=5.0), label=label, zorder=3)
        ax.axvline(t[-1], color="0.7", ls="--", lw=1)
    ax.set(xlabel="t", ylabel="y")
    legend = ax.legend(fontsize=8)
    if dense:  # the legend's marker as a sparse record's, so that it can be seen
        legend.legend_handles[0].set(alpha=1.0, markersize=3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


NUMBER = re.compile(r"(?<![\w.])\d+(\.\d*)?([eE][-+]?\d+)?")


def time_text(value: float, t: np.ndarray) -> str:
    """A time written to about 1e-4 of the observed span, however far from zero the clock starts
    (Unix seconds, years: 1.7e+09 would hide an hour of a month-long record)."""
    span = float(t[-1] - t[0])
    if span <= 0 or value == 0:
        return f"{value:.4g}"
    digits = max(4, math.floor(math.log10(abs(value))) - math.floor(math.log10(span)) + 5)
    return f"{value:.{min(digits, 17)}g}"


def noise_text(sigma: float, weighed: bool) -> str:
    """The noise level behind the printed errors, and whether the choice weighed each residual at its
    own point's level (version 22: noise that grows with |y|), which a user comparing fits should know."""
    text = f"(standard errors at the noise level read from the data: sigma = {sigma:.3g} in units of y)"
    if weighed:
        text = (f"(standard errors at the noise level read from the data: sigma = {sigma:.3g} in units of y at the "
                "record's root mean square)\n(the noise grows with |y| here: the choice and the errors weighed "
                "each point by its own noise level)")
    return text


def beyond_the_data(result, t) -> tuple[np.ndarray, list[np.ndarray]]:
    """Print how far the fits the data cannot tell from the pick (`nsode.search.rivals`) part from
    it over twice the observed span; returns their trajectories for the plot."""
    from core.metrics import r2
    from nsode.search import RIVAL_WINDOW, extrapolations

    grid, (pick, *paths) = extrapolations([result.chosen, *result.rivals], t)
    end = f"to t = {time_text(grid[-1], t)}"
    if not np.all(np.isfinite(pick)):
        print(f"beyond the data ({end}): this fit's solution does not reach it")
        return grid, []
    if result.info.get("all_rejected"):
        print(f"beyond the data ({end}): every fit failed the stability check, this one {result.chosen.rejected}; "
              "it is the best by the criterion, and its course beyond the data is not to be trusted")
        return grid, paths
    if not result.rivals:
        print(f"beyond the data ({end}): no other safe fit is statistically as good (criterion within {RIVAL_WINDOW:g})")
        return grid, paths
    agreement = [r2(path, pick) if np.all(np.isfinite(path)) else -np.inf for path in paths]
    far = int(np.argmin(agreement))
    reach = f"ends at y = {paths[far][-1]:.4g}" if np.isfinite(agreement[far]) else "fails to reach it"
    fits = "1 other fit is" if len(paths) == 1 else f"{len(paths)} other fits are"
    print(f"beyond the data ({end}): {fits} statistically as good (criterion within "
          f"{RIVAL_WINDOW:g}); the farthest from this one has R^2 {agreement[far]:.4f} against it and {reach} "
          f"(this one: {pick[-1]:.4g})")
    return grid, paths


# a monotone record's noise reverses it by up to this many noise levels times sqrt(2 log n), the
# growth of the largest of n noise draws (measured: at most 9.8 levels, n 256, on 8256 records of
# the built-in datasets at sigma up to 0.05, where 6 sqrt(2 log n) is 20)
REVERSAL_NOISES = 6.0


def fit_notes(result, t, y, sigma: float, profile, write) -> list[str]:
    """What a reader of the pick must know besides its R^2: that single points stand apart from the
    record's course (glitches bend a least-squares fit); that the record turns, which no law
    y' = f(y) does; that the pick misses the data beyond their noise; and then, when a better fit
    was set aside as unstable beyond the data, which one (written by `write`, as listed) and why."""
    from core.noise import isolated_glitches, noise_level
    from core.trajectories import largest_reversal
    from nsode.search import MISFIT_NOISES, misfit

    notes = []
    glitches = isolated_glitches(t, y)
    if glitches:
        several = len(glitches) > 1
        notes.append(f"note: {len(glitches)} point{'s stand' if several else ' stands'} apart from "
                     f"{'their' if several else 'its'} neighbours' course (t = {times_text(t[glitches])}): a "
                     "glitch bends the fit and raises the noise level read from the data; if they are glitches, "
                     "remove them and fit again")
    turn, level = largest_reversal(y), noise_level(t, y)
    if turn > REVERSAL_NOISES * math.sqrt(2 * math.log(len(y))) * level:
        notes.append(f"note: the record rises and falls back (or falls and rises) by {turn:.3g}, {turn / level:.0f} "
                     "times its noise: a solution of y' = f(y) never turns, so no law of this form reproduces it")
    look = result.info.get("second_look")
    if look:
        notes.append(f"note: the model's proposals missed the data by {look['missed']:.3g} times their noise, so sums "
                     f"with the powers y, ..., y**{look['powers']} were fitted too (a second look)")
    missed = misfit(result.chosen, t, y, sigma, profile)
    if missed > MISFIT_NOISES:
        notes.append(f"note: this law misses the data by {missed:.3g} times their noise (root mean square): it "
                     "approximates them and may not be the law behind them")
        # the first (by the criterion) fit set aside that leaves a quarter of the pick's misses or less
        better = [(text, r2) for text, r2 in result.candidates
                  if text in result.rejected and 1 - r2 <= (1 - result.r2) / 4]
        if better:
            text, r2 = better[0]
            notes.append(f"note: {write(text)} fits better (R^2 {r2_text(r2)}) but was set aside as "
                         f"unstable beyond the data: {result.rejected[text]}")
    return notes


FIGURE_ENDINGS = (".png", ".pdf", ".svg", ".jpg", ".jpeg")


def times_text(times, shown: int = 5) -> str:
    """The first `shown` times of a few points, to four digits."""
    return ", ".join(f"{v:.4g}" for v in times[:shown]) + (", ..." if len(times) > shown else "")


def r2_text(value: float) -> str:
    """R^2 to six decimals, or in scientific notation when a fit is far off (-1.6e+270)."""
    return f"{value:.6f}" if abs(value) < 1e6 else f"{value:.3g}"


def _figure_path(path: Path) -> Path:
    """The file `--plot` writes: .png added to a name without a known ending; a folder, or a
    file in a folder that does not exist, is refused."""
    if path.is_dir():
        raise InputError(f"--plot {path}: that is a folder; give a file name such as {path / 'fit.png'}")
    if path.suffix.lower() not in FIGURE_ENDINGS:
        path = path.with_name(path.name + ".png")
    if not path.parent.is_dir():
        raise InputError(f"--plot {path}: the folder {path.parent} does not exist")
    existed = path.exists()
    try:  # before the fit, not after it: a place that cannot take the file is refused now
        with open(path, "ab"):
            pass
    except OSError as err:
        raise InputError(f"--plot {path}: cannot write there ({err.strerror or err})") from None
    if not existed:
        path.unlink()
    return path


def main(argv=None) -> int:
    from nsode.options import add_search_arguments, changed_flags, settings_from
    from nsode.search import SEARCH_BEAM, SEARCH_BRANCHES

    p = argparse.ArgumentParser(prog="python -m nsode", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True, metavar="predict")
    pr = sub.add_parser("predict",
                        help="predict the ODE behind one trajectory in a CSV file (or several records of one)",
                        usage="python -m nsode predict [options] [search settings] file [file ... --joint]")
    pr.add_argument("file", type=Path, nargs="+",
                    help="CSV whose first line names columns t and y (lines starting with # before it are skipped; "
                         "rows in any order: they are sorted by t); several with --joint")
    pr.add_argument("--checkpoint", type=Path, default=None,
                    help="checkpoint folder that reads every trajectory (default: the shipped nsode/checkpoints/"
                         "nsode-eps, and nsode-eps-scaled, whose input is scale-invariant, for trajectories outside "
                         "nsode-eps's training range; with --paper nsode-eps alone)")
    pr.add_argument("--beam", type=whole_number(1), default=None,
                    help=f"beam width (default: {SEARCH_BEAM} with the search; with --paper 64 on CPU, 1536 on a GPU)")
    pr.add_argument("--branches", type=int, default=None,
                    help=f"constant intervals each beam hypothesis may branch into (default: {SEARCH_BRANCHES} with "
                         "the search, so that the beam holds more distinct skeletons; with --paper all, as the paper; "
                         "0: all)")
    pr.add_argument("--paper", action="store_true",
                    help="the paper's selection: the beam's expression with the best R^2, constants as decoded")
    pr.add_argument("--refine", action="store_true", help=argparse.SUPPRESS)  # the search; now the default
    pr.add_argument("--top", type=whole_number(0), default=5, help="candidates to list (default %(default)s; 0: none)")
    pr.add_argument("--plot", type=Path, default=None,
                    help="write a figure of the data, the prediction over twice the observed span and, in grey, "
                         "the fits as good on the data (PNG; PDF, SVG or JPEG when the name ends so; a name "
                         "with another ending or none gets .png added: fit.txt writes fit.txt.png)")
    pr.add_argument("--joint", action="store_true",
                    help="read several files as records of one system (other starts, other runs): one law, its "
                         "constants shared and an initial value fitted for each (nsode/joint.py; measured against "
                         "reading each alone in docs/search.md, 'Session 77')")
    pr.add_argument("--columns", nargs=2, metavar=("TIME", "VALUE"), default=("t", "y"),
                    help="the file's columns read as t and y (default: t y; names are read without case or spaces)")
    pr.add_argument("--by", metavar="COLUMN", default=None,
                    help="read one file whose column COLUMN (a run, an experiment) tells several records apart, "
                         "as --joint reads several files")
    pr.add_argument("--threads", type=whole_number(1), default=1,
                    help="torch's CPU threads for the model (default %(default)s: the model is small; on 2 idle cores "
                         "a second thread gained nothing measurable, and beside one busy process it made the whole "
                         "run 10-35%% slower)")
    add_search_arguments(pr)
    args = p.parse_args(argv)
    if args.branches is not None and args.branches < 0:
        pr.error("--branches must be 0 (all) or a positive number of constant intervals")
    changed = changed_flags(args) + (["--refine"] if args.refine else [])
    if args.paper and changed:
        pr.error(f"{', '.join(changed)} set(s) the search, which --paper does not use")
    if args.by is not None:
        if len(args.file) > 1:
            pr.error("--by reads the records of one file; give one file")
        args.joint = True
    if args.joint and args.paper:
        pr.error("--joint reads one law with the search, which --paper does not use")
    if args.joint and len(args.file) < 2 and args.by is None:
        pr.error("--joint reads two or more files as records of one system; give them all (or one file with "
                 "--by COLUMN)")
    if not args.joint and len(args.file) > 1:
        pr.error(f"{len(args.file)} files given: add --joint to read one law from them all, or read each alone")
    if args.refit > args.top_k:
        if "--refit" in changed:
            pr.error(f"--refit {args.refit} cannot exceed --top-k {args.top_k} (it refits some of those)")
        args.refit = args.top_k  # the default refits them all
    try:  # the user's file first: its errors should not wait for torch to load
        if args.plot:
            args.plot = _figure_path(args.plot)
        if args.by is None:
            records = [read_trajectory(path, args.columns) for path in args.file]
            names = [str(path) for path in args.file]
        else:
            by_name = read_records(args.file[0], args.by, args.columns)
            records, names = list(by_name.values()), [f"{args.by} {name}" for name in by_name]
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2

    import torch

    from core.noise import noise_level
    from core.uncertainty import written_to_error
    from nsode import default_checkpoint
    from nsode.data.tokens import to_infix
    from nsode.model import CheckpointError
    from nsode.predict import Predictor
    from nsode.scaling import raw_range_text
    from nsode.digits import identifiable_form, supported
    from nsode.search import choice_profile

    torch.set_num_threads(args.threads)  # the model is small: one thread is as fast, and not slowed by load
    search = None if args.paper else settings_from(args)
    try:
        predictor = (Predictor(args.checkpoint or default_checkpoint("nsode-eps"), beam=args.beam,
                               branches=args.branches)
                     if args.paper else Predictor.searching(search, checkpoint=args.checkpoint, beam=args.beam,
                                                            branches=args.branches))
    except CheckpointError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.joint:
        return predict_jointly(predictor, records, names, args)
    t, y = records[0]
    result = predictor.predict(t, y)
    aside = result.info.get("set_aside", [])
    set_aside = t[aside], y[aside]
    t, y = np.delete(t, aside), np.delete(y, aside)  # what the search read, for every figure below
    if not result.expression:
        flat = np.ptp(y) == 0  # R^2 against a record without variation counts only an exact match
        print("error: no candidate " + ("matched a record without variation (every y equal; the search, without "
                                        "--paper, also offers y' = 0)" if flat else
                                        "could be integrated over the observed interval"), file=sys.stderr)
        return 1
    # the noise alone, curvature removed: the search's own level also covers its integral form's
    # trapezoid error, which on a dozen clean points would make every printed error wide; where the
    # choice weighed each point by its own noise, the level that weighting is relative to
    profile = choice_profile(t, y, search) if search and result.info.get("noise_profile") else None
    sigma = noise_level(t, y, curvature=True, profile=profile)

    chosen = result.chosen and identifiable_form(result.chosen, t, y, sigma)
    fit = chosen and supported(chosen, t, y, sigma, profile)
    label = to_infix(fit.expr) if fit else shown(result.expression)
    print(f"y' = {label}")
    if fit:
        print(f"y({time_text(t[0], t)}) = {written_to_error(fit.y0, fit.y0_error)} +- {fit.y0_error:.2g} (fitted)")
        if fit.constants:
            form, constants = numbered_as_read(chosen.template.expr, chosen.template.params, fit.constants)
            named = ", ".join(f"c{k} = {written_to_error(v, e, extra=1)} +- {e:.2g}" for k, (v, e) in enumerate(constants))
            print(f"as fitted: y' = {form} with {named}")
        print(noise_text(sigma, profile is not None))
    print(f"R^2 on the data: {r2_text(result.r2)}")
    order = "best R^2 first" if args.paper else "in the search's order: criterion, then forecast among ties"
    listed: dict[str, tuple[str, str, str]] = {}  # each law once as printed (0 and 0.0 are one law)
    fits = dict(zip((expr for expr, _ in result.candidates), result.fits))  # none with --paper

    def as_listed(expr: str) -> str:
        """The search's fits as the pick is printed (constants one by one, to the digits the data
        support), so that each listed law gives its R^2; the beam's candidates (--paper) to 4 digits."""
        if expr not in fits:
            return shown(readable(expr, y))
        return to_infix(supported(identifiable_form(fits[expr], t, y, sigma), t, y, sigma, profile).expr)

    for expr, r2 in result.candidates:
        if len(listed) == args.top:
            break
        text = as_listed(expr)
        unsafe = "  [unstable beyond the data]" if expr in result.rejected else ""
        listed.setdefault(NUMBER.sub(lambda m: repr(float(m.group())), text), (text, r2_text(r2), unsafe))
    if listed:  # --top 0: none asked for
        print(f"top {len(listed)} candidate{'' if len(listed) == 1 else 's'} ({order}; R^2 of the integrated trajectory):")
    for text, r2, unsafe in listed.values():
        print(f"  {r2:>10}  {text}{unsafe}")
    if aside:
        print(f"note: {len(aside)} point{'s' if len(aside) > 1 else ''} set aside (t = {times_text(set_aside[0])}): "
              f"{'each stands' if len(aside) > 1 else 'it stands'} apart from its neighbours' course, as a glitch "
              "does, and the law is fitted to the rest (--no-glitches keeps every point)")
    for note in fit_notes(result, t, y, sigma, profile, as_listed) if result.chosen is not None else ():
        print(note)
    if result.info.get("safety_net"):
        print("note: a wall-clock safety net fired during the fits; the budget, not the clock, should decide")
    if args.paper and not args.checkpoint and result.timings.get("outside_range"):
        print(f"note: the paper's model was trained on {raw_range_text()}; these data lie outside, where the default "
              "search reads them with its scale-invariant model")
    others = beyond_the_data(result, t) if result.chosen is not None else None
    if args.plot:
        try:
            plot(args.plot, t, y, result.expression, result.y0, label, others, set_aside)
        except OSError as err:
            print(f"error: --plot {args.plot}: cannot write there ({err.strerror or err})", file=sys.stderr)
            return 1
        print(f"plot written to {args.plot}")
    return 0


def predict_jointly(predictor, records: list[tuple[np.ndarray, np.ndarray]], names: list[str], args) -> int:
    """`nsode predict --joint` on the records `names`: one law for all (nsode.joint), each record's
    initial value and R^2, the best joint candidates, and what each record alone read."""
    from core.uncertainty import written_to_error
    from nsode.data.tokens import to_infix
    from nsode.joint import predict_records, record_misses, supported_values
    from nsode.search import MISFIT_NOISES

    result = predict_records(predictor, records)
    chosen = result.chosen
    if chosen is None:
        print("error: no candidate could be fitted to every record", file=sys.stderr)
        return 1
    values, y0s = supported_values(chosen, result.records)
    errors = chosen.fit.errors
    law = to_infix(chosen.template.substitute(values))
    print(f"y' = {law}")
    print(f"one law for {len(records)} records: constants shared, an initial value each")
    if values:
        form, constants = numbered_as_read(chosen.template.expr, chosen.template.params,
                                           list(zip(chosen.fit.values, errors[len(y0s):])))
        named = ", ".join(f"c{k} = {written_to_error(v, e, extra=1)} +- {e:.2g}" for k, (v, e) in enumerate(constants))
        print(f"as fitted: y' = {form} with {named}")
    width = max(map(len, names))
    for name, record, y0, error, r2 in zip(names, result.records, chosen.fit.y0s, errors, chosen.r2s):
        start = f"y({time_text(record.t[0], record.t)}) = {written_to_error(y0, error)} +- {error:.2g}"
        print(f"  {name:<{width}}  {start}, R^2 {r2_text(r2)} ({len(record.t)} points)")
    sigmas = ", ".join(f"{r.sigma:.3g}" for r in result.records)
    print(f"(standard errors at the noise levels read from the records: sigma = {sigmas} in units of y)")
    for name, missed in zip(names, record_misses(chosen, result.records)):
        if missed > MISFIT_NOISES:
            print(f"note: the law misses {name} by {missed:.3g} times its noise (root mean square): the records may "
                  "not follow one law y' = f(y) (other conditions), or the law is none of the proposals")
    if result.info["all_rejected"]:
        print(f"note: every joint fit failed the stability check, this one {chosen.rejected}; its course beyond "
              "the data is not to be trusted")
    listed = result.fits[: args.top]
    if listed:
        print(f"top {len(listed)} candidate{'' if len(listed) == 1 else 's'} (joint criterion, the shorter law among "
              "ties; R^2 of each record's trajectory):")
    for f in listed:
        unsafe = "  [unstable beyond the data]" if f.rejected else ""
        print(f"  {' '.join(r2_text(v) for v in f.r2s)}  {shown(f.text)}{unsafe}")
    print("each record alone (its own search):")
    for name, own in zip(names, result.own):
        print(f"  {name:<{width}}  y' = {shown(own.expression) if own.expression else '(none)'}")
    for name, own in zip(names, result.own):
        aside = own.info.get("set_aside", [])
        if aside:
            print(f"note: {name}: {len(aside)} point{'s' if len(aside) > 1 else ''} set aside as glitches "
                  "(--no-glitches keeps every point)")
    if args.plot:
        try:
            plot_records(args.plot, result, names, law, values, y0s)
        except OSError as err:
            print(f"error: --plot {args.plot}: cannot write there ({err.strerror or err})", file=sys.stderr)
            return 1
        print(f"plot written to {args.plot}")
    return 0


def plot_records(path: Path, result, names: list[str], law: str, values, y0s) -> None:
    """Each record's data against the joint law's course from its own initial value, over twice
    its observed span (one colour per record)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from core.fitting import SOLVE_FAILURES, trajectory

    chosen = result.chosen
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for k, (name, record, y0) in enumerate(zip(names, result.records, y0s)):
        colour = f"C{k % 10}"
        ax.plot(record.t, record.y, ".", ms=3, color=colour, label=Path(name).name)
        grid = np.linspace(record.t[0], record.t[0] + 2 * (record.t[-1] - record.t[0]), 512)
        for times in (grid, record.t):  # where it fails beyond the data: the fitted part only
            try:
                ax.plot(times, trajectory(chosen.template, values, y0, times), color=colour, lw=1.2)
                break
            except SOLVE_FAILURES:
                continue
    ax.set(xlabel="t", ylabel="y", title=f"y' = {law}")
    ax.title.set_fontsize(9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # output piped into `head` and the like: stop quietly
        sys.stderr.close()
        sys.exit(1)
