"""Command line: python -m nsode predict FILE.csv [MORE.csv ... --joint] [--checkpoint DIR] [--beam N] [--plot out.png]
[--json out.json]

Reads a CSV with columns t and y (one observed trajectory of a scalar autonomous ODE), prints
the predicted y' = f(y), its R^2 on the data and the best candidates, and optionally plots the
data against the predicted trajectory, extrapolated to twice the observed time span, and writes
what it printed as JSON for scripts (--json; constants and initial values at full precision). With
--joint, several files are records of one system (other starts, other runs): one law is read from
them all, its constants shared and an initial value fitted for each (nsode/joint.py).

By default NSODE proposes skeletons and a fitter decides (nsode/search/funnel.py): the shipped nsode-eps
reads a trajectory like its training data (times within [0, 2] spanning most of it, max |y|
within 2^3 of 4), the scale-invariant nsode-eps-scaled any other; constants and the initial value
are refitted, fits that fail from a perturbed initial value or on twice the span are rejected,
and an information criterion prefers the simpler of two fits that the noise cannot tell apart.
`--paper` uses the paper's raw-input nsode-eps and its selection (best R^2 of the beam as decoded).
The chosen ODE's constants and initial value are printed (and plotted) to the digits the data
support: rounded at their standard errors, estimated from the trajectory's sensitivity at the
noise level read from the data, with more digits where constants move together (c and p of
c*y**p) and rounding each at its own error would change the law. The search's other candidates
are printed the same way; the beam's candidates and picks of `--paper`, to 4 significant digits.
It then says how far the fits that the data cannot tell from the pick (criterion within 5) part
from it over twice the observed span; the plot draws them in grey. Where they part, the data do
not determine the extrapolation, whichever law is chosen.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from odecore.arguments import whole_number
from odecore.files import figure_target, why_unwritable, write_text_atomic
from nsode.plots import plot, plot_records
from nsode.report import (NUMBER, beyond_the_data, constant_rows, fit_notes, noise_text, numbered_as_read, r2_text,
                          read_pick, readable, shown, time_text, times_text)


class InputError(ValueError):
    """A problem with the user's file, reported as one line."""


def read_trajectory(path: Path, columns: tuple[str, str]):
    """t and y of the user's CSV file (from `columns`; `.columns` as the file spells them), rows
    sorted by time (`odecore.trajectories`, the harness's reader); every other column, an `expression`
    too, is ignored."""
    from odecore.trajectories import TrajectoryFileError, hinted, read_trajectory as read

    try:
        return read(path, sort=True, law=False, columns=columns)
    except TrajectoryFileError as err:
        raise InputError(hinted(str(err))) from None


def read_records(path: Path, by: str, columns: tuple[str, str]) -> dict:
    """The records of one CSV file told apart by column `by` (odecore.trajectories.read_records; t and y
    from `columns`), each sorted by time: {that column's value: its t and y}."""
    from odecore.trajectories import TrajectoryFileError, hinted, read_records as read

    try:
        return read(path, by, columns=columns)
    except TrajectoryFileError as err:
        raise InputError(hinted(str(err), by=True)) from None


def _figure_path(path: Path) -> Path:
    """The file `--plot` writes: .png added to a name without a known ending; a folder, or a
    file in a folder that does not exist, is refused."""
    target, why = figure_target(path, "fit.png")
    if why:
        raise InputError(f"--plot {target}: {why}")
    return target


def _writable(path: Path, flag: str) -> Path:
    """`path`, once it is known that a file can be written there (`odecore.files.why_unwritable`)."""
    why = why_unwritable(path)
    if why:
        raise InputError(f"{flag} {path}: {why}")
    return path


def _not_an_input(inputs: list[Path], *outputs: tuple[str, Path | None]) -> None:
    """InputError when an output file (--plot, --json) is one of the files read: writing it would
    replace the user's data."""
    read = {path.resolve() for path in inputs}
    for flag, path in outputs:
        if path is not None and path.resolve() in read:
            raise InputError(f"{flag} {path}: that is the data file read; writing it would replace the data, "
                             "so give another name")


def _distinct(paths: list[Path]) -> None:
    """InputError when two of `paths` name one file (a.csv and ./a.csv): --joint would read one
    record twice, as if two runs agreed."""
    seen: dict[Path, Path] = {}
    for path in paths:
        first = seen.setdefault(path.resolve(), path)
        if first is not path:
            raise InputError(f"--joint: {first} and {path} are the same file; give each record once")


def _write_json(path: Path, reading: dict) -> None:
    """`reading` as JSON, a number that is not finite (an R^2 of -inf) as null, so that any
    JSON reader takes the file; written whole or not at all."""
    def finite(value):
        if isinstance(value, dict):
            return {k: finite(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [finite(v) for v in value]
        if isinstance(value, (float, np.floating)):
            return float(value) if math.isfinite(value) else None
        if isinstance(value, np.integer):
            return int(value)
        return value

    write_text_atomic(json.dumps(finite(reading), indent=2) + "\n", path)


def _parsed(p: argparse.ArgumentParser, pr: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """The command line, files allowed among the options (`predict a.csv --joint b.csv`): the
    predict subparser reads them intermixed, which argparse allows only on a parser without
    subcommands; help and any other first word go through the top-level parser."""
    if argv[:1] != ["predict"]:
        return p.parse_args(argv)
    return pr.parse_intermixed_args(argv[1:], argparse.Namespace(command="predict"))


OTHER_COMMANDS = """the model's own life cycle, each with its --help:
  python -m nsode.data generate ...   draw random ODEs and solve them (training data)
  python -m nsode.train ...           train a model on them, or resume training
  python -m nsode.export ...          ship a trained checkpoint as safetensors"""


def main(argv=None) -> int:
    from nsode.options import add_search_arguments, changed_flags, settings_from
    from nsode.search.funnel import MAX_BEAM, SEARCH_BEAM, SEARCH_BRANCHES

    p = argparse.ArgumentParser(prog="python -m nsode", description=__doc__, epilog=OTHER_COMMANDS,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    pr = sub.add_parser("predict",
                        help="predict the ODE behind one trajectory in a CSV file (or several records of one)",
                        usage="python -m nsode predict [options] [search settings] file [file ... --joint]")
    pr.add_argument("file", type=Path, nargs="+",
                    help="CSV whose first line names columns t and y (lines starting with # before it are skipped; "
                         "rows in any order: they are sorted by t); several with --joint")
    pr.add_argument("--checkpoint", type=Path, default=None,
                    help="checkpoint folder, or a shipped checkpoint's name (nsode, nsode-eps, nsode-eps-scaled), that reads every trajectory (default: the shipped nsode/checkpoints/"
                         "nsode-eps, and nsode-eps-scaled, whose input is scale-invariant, for trajectories outside "
                         "nsode-eps's training range; with --paper nsode-eps alone)")
    pr.add_argument("--beam", type=whole_number(1, MAX_BEAM), default=None,
                    help=f"beam width (default: {SEARCH_BEAM} with the search; with --paper 64 on CPU, 1536 on a GPU; "
                         f"at most {MAX_BEAM}: memory and time grow with it, 1 GB and 30 s a record on CPU there)")
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
    pr.add_argument("--json", type=Path, default=None, metavar="FILE",
                    help="also write what is printed to FILE as JSON, for scripts: the law and its form (and the "
                         "search's stage that wrote it: model, variant, per-capita, combination, ...), each "
                         "constant and initial value with its standard error, R^2, the noise level and the root "
                         "mean square miss in its units (misfit: about 1 for a law, far above for a curve fit), the "
                         "candidates, the fits as good on the data, the notes (with --joint each record's too)")
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
    args = _parsed(p, pr, sys.argv[1:] if argv is None else list(argv))
    if args.branches is not None and args.branches < 0:
        pr.error("--branches must be 0 (all) or a positive number of constant intervals")
    changed = changed_flags(args) + (["--refine"] if args.refine else [])
    if args.paper and changed:
        pr.error(f"{', '.join(changed)} set(s) the search, which --paper does not use")
    joined = "--joint" if args.joint else "--by"  # the flag the user typed, for the refusals below
    if args.by is not None:
        if len(args.file) > 1:
            pr.error("--by reads the records of one file; give one file")
        args.joint = True
    if args.joint and args.paper:
        pr.error(f"{joined} reads one law with the search, which --paper does not use")
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
        if args.json:
            args.json = _writable(args.json, "--json")
            if args.plot and args.json.resolve() == args.plot.resolve():
                raise InputError(f"--json {args.json}: --plot writes that file too; give two names")
        _not_an_input(args.file, ("--plot", args.plot), ("--json", args.json))
        if args.by is None:
            files = [read_trajectory(path, args.columns) for path in args.file]
            names = [str(path) for path in args.file]
            _distinct(args.file)
        else:
            by_name = read_records(args.file[0], args.by, args.columns)
            files, names = list(by_name.values()), [f"{args.by} {name}" for name in by_name]
        records = [(data.t, data.y) for data in files]
        args.columns = files[0].columns  # the plot's axes as the (first) file spells them: OD600, not od600
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2

    import torch

    from nsode import default_checkpoint
    from nsode.model import CheckpointError
    from nsode.predict import Predictor

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
    return predict_alone(predictor, *records[0], names[0], args)


def predict_alone(predictor, t: np.ndarray, y: np.ndarray, name: str, args) -> int:
    """`nsode predict` on the one record `name`: the law, its constants and initial value to the digits
    the data support, the candidates, the notes, how far the fits as good part beyond the data."""
    from odecore.uncertainty import written_to_error
    from nsode.data.tokens import to_infix
    from nsode.scaling import raw_range_text
    from nsode.search.digits import identifiable_form, supported

    result = predictor.predict(t, y)
    pick = read_pick(result, t, y, predictor.search)
    aside = result.info.get("set_aside", [])
    set_aside = t[aside], y[aside]
    t, y = np.delete(t, aside), np.delete(y, aside)  # what the search read, for every figure below
    if not result.expression:
        flat = np.ptp(y) == 0  # R^2 against a record without variation counts only an exact match
        print("error: no candidate " + ("matched a record without variation (every y equal; the search, without "
                                        "--paper, also offers y' = 0)" if flat else
                                        "could be integrated over the observed interval"), file=sys.stderr)
        return 1
    sigma, profile, missed, fit = pick.sigma, pick.profile, pick.misfit, pick.fit
    label = pick.law
    print(f"y' = {label}")
    reading = {"file": name, "law": label, "expression": result.expression, "r2": result.r2,
               "method": "paper" if args.paper else "search", "proposer": _proposer(args, result),
               "stage": result.chosen.source if result.chosen is not None else None}  # which stage wrote the law
    reading |= pick.as_dict()
    if fit:
        y0_text = written_to_error(fit.y0, fit.y0_error, extra=fit.extra)  # the digits the law was checked with
        print(f"y({time_text(t[0], t)}) = {y0_text} +- {fit.y0_error:.2g} (fitted)")
        if fit.constants:  # as the reading numbers them (`Pick.as_dict`)
            named = ", ".join(f"{c['name']} = {written_to_error(c['value'], c['error'], extra=1)} +- {c['error']:.2g}"
                              for c in reading["constants"])
            print(f"as fitted: y' = {reading['form']} with {named}")
        print(noise_text(sigma, profile is not None, pick.clean))
    without = f" (without the {len(aside)} point{'s' if len(aside) > 1 else ''} set aside)" if aside else ""
    print(f"R^2 on the data{without}: {r2_text(result.r2)}")
    order = "best R^2 first" if args.paper else "in the search's order: criterion, then forecast among ties"
    listed: dict[str, tuple[str, float, str]] = {}  # each law once as printed (0 and 0.0 are one law)
    fits = dict(zip((expr for expr, _ in result.candidates), result.fits))  # none with --paper

    def written(f) -> str:
        """A fit of the search as the pick is printed: constants one by one, to the digits the data support."""
        return to_infix(supported(identifiable_form(f, t, y, sigma), t, y, sigma, profile).expr)

    def as_listed(expr: str) -> str:
        """The search's fits as the pick is printed, so that each listed law gives its R^2; the
        beam's candidates (--paper) to 4 digits."""
        return written(fits[expr]) if expr in fits else shown(readable(expr, y))

    for expr, r2 in result.candidates:
        if len(listed) == args.top:
            break
        text = as_listed(expr)
        unsafe = "  [unstable beyond the data]" if expr in result.rejected else ""
        listed.setdefault(NUMBER.sub(lambda m: repr(float(m.group())), text), (text, r2, unsafe))
    if listed:  # --top 0: none asked for
        print(f"top {len(listed)} candidate{'' if len(listed) == 1 else 's'} (proposed by {reading['proposer']}, "
              f"{order}; R^2 of the integrated trajectory):")
    for text, r2, unsafe in listed.values():
        print(f"  {r2_text(r2):>10}  {text}{unsafe}")
    reading["candidates"] = [{"law": text, "r2": r2, "unstable": bool(unsafe)} for text, r2, unsafe in listed.values()]
    notes = []
    if aside:
        notes.append(f"note: {len(aside)} point{'s' if len(aside) > 1 else ''} set aside (t = {times_text(set_aside[0])}): "
                     f"{'each stands' if len(aside) > 1 else 'it stands'} apart from its neighbours' course, as a "
                     "glitch does, and the law is fitted to the rest (--no-glitches keeps every point)")
    notes += fit_notes(result, t, y, missed, as_listed) if result.chosen is not None else []
    if result.info.get("safety_net"):
        notes.append("note: a wall-clock safety net fired during the fits; the budget, not the clock, should decide")
    if args.paper and not args.checkpoint and result.timings.get("outside_range"):
        notes.append(f"note: the paper's model was trained on {raw_range_text()}; these data lie outside, where the "
                     "default search reads them with its scale-invariant model")
    for note in notes:
        print(note)
    reading |= {"set_aside_times": set_aside[0].tolist(), "notes": [note.removeprefix("note: ") for note in notes]}
    others = beyond_the_data(result, t) if result.chosen is not None else None
    if result.chosen is not None:
        reading["as_good_on_the_data"] = [{"law": written(f), "r2": f.r2} for f in result.rivals]
    if args.plot:
        try:
            plot(args.plot, t, y, result.expression, result.y0, label, others, set_aside, args.columns)
        except OSError as err:
            print(f"error: --plot {args.plot}: cannot write there ({err.strerror or err})", file=sys.stderr)
            return 1
        print(f"plot written to {args.plot}")
    return _written(args.json, reading)


def _proposer(args, result) -> str:
    """The checkpoint whose beam proposed the candidates: the user's, or the shipped one that read the record."""
    from nsode import SCALED_CHECKPOINT, SEARCH_CHECKPOINT

    if args.checkpoint:
        return str(args.checkpoint)
    if args.paper:
        return "nsode-eps"
    return SCALED_CHECKPOINT if result.timings.get("reader") == "scaled" else SEARCH_CHECKPOINT


def _written(path: Path | None, reading: dict) -> int:
    """Write `reading` as JSON to `path` (--json), if given; the exit status."""
    if path is None:
        return 0
    try:
        _write_json(path, reading)
    except OSError as err:
        print(f"error: --json {path}: cannot write there ({err.strerror or err})", file=sys.stderr)
        return 1
    print(f"JSON written to {path}")
    return 0


def predict_jointly(predictor, records: list[tuple[np.ndarray, np.ndarray]], names: list[str], args) -> int:
    """`nsode predict --joint` on the records `names`: one law for all (nsode.joint), each record's
    initial value and R^2, the best joint candidates, and what each record alone read."""
    from odecore.uncertainty import written_to_error
    from nsode.data.tokens import to_infix
    from nsode.joint import identifiable_joint, predict_records, record_misses, supported_values
    from nsode.search.fits import carried_back
    from nsode.search.settings import MISFIT_NOISES

    result = predict_records(predictor, records)
    if result.chosen is None:
        print("error: no candidate could be fitted to every record", file=sys.stderr)
        return 1
    chosen = identifiable_joint(result.chosen, result.records)
    values, y0s, extra = supported_values(chosen, result.records)
    errors = chosen.fit.errors
    law = to_infix(chosen.template.substitute(values))
    print(f"y' = {law}")
    print(f"one law for {len(records)} records: constants shared, an initial value each")
    reading = {"files": names, "law": law, "expression": result.expression, "method": "search, joint"}
    if values:
        form, constants = numbered_as_read(chosen.template.expr, chosen.template.params,
                                           list(zip(chosen.fit.values, errors[len(y0s):])))
        named = ", ".join(f"c{k} = {written_to_error(v, e, extra=1)} +- {e:.2g}" for k, (v, e) in enumerate(constants))
        print(f"as fitted: y' = {form} with {named}")
        reading |= {"form": form, "constants": constant_rows(constants)}
    width = max(map(len, names))
    # a long record was read as group means (odecore.fitting.bin_means): its y0 and R^2 are restated for the file
    given = [(t, y, *(carried_back(chosen.template, chosen.fit.values, y0, record.t[0], t, y) if len(t) > len(record.t)
                      else (y0, r2)))
             for (t, y), record, y0, r2 in zip(records, result.records, chosen.fit.y0s, chosen.r2s)]
    for name, record, (t, _, y0, r2), error in zip(names, result.records, given, errors):
        start = f"y({time_text(t[0], t)}) = {written_to_error(y0, error, extra=extra)} +- {error:.2g}"
        means = f", read as {len(record.t)} group means" if len(t) > len(record.t) else ""
        print(f"  {name:<{width}}  {start}, R^2 {r2_text(r2)} ({len(t)} points{means})")
    sigmas = ", ".join(f"{r.sigma:.3g}" for r in result.records)
    print(f"(standard errors at the noise levels read from the records: sigma = {sigmas} in units of y)")
    misses = record_misses(chosen, result.records)
    notes = [f"note: the law misses {name} by {missed:.3g} times its noise (root mean square): the records may "
             "not follow one law y' = f(y) (other conditions), or the law is none of the proposals"
             for name, missed in zip(names, misses) if missed > MISFIT_NOISES]
    if result.info["all_rejected"]:
        notes.append(f"note: every joint fit failed the stability check, this one {chosen.rejected}; its course "
                     "beyond the data is not to be trusted")
    for note in notes:
        print(note)
    listed = result.fits[: args.top]
    if listed:
        print(f"top {len(listed)} candidate{'' if len(listed) == 1 else 's'} (joint criterion, the shorter law among "
              "ties; R^2 of each record's trajectory):")
    for f in listed:
        unsafe = "  [unstable beyond the data]" if f.rejected else ""
        print(f"  {' '.join(r2_text(v) for v in f.r2s)}  {shown(f.text)}{unsafe}")
    reading["candidates"] = [{"law": shown(f.text), "r2": list(f.r2s), "unstable": bool(f.rejected)} for f in listed]
    alone = [shown(own.expression) if own.expression else None for own in result.own]
    print("each record alone (its own search):")
    for name, law_alone in zip(names, alone):
        print(f"  {name:<{width}}  y' = {law_alone or '(none)'}")
    for name, own in zip(names, result.own):
        aside = own.info.get("set_aside", [])
        if aside:
            notes.append(f"note: {name}: {len(aside)} point{'s' if len(aside) > 1 else ''} set aside as glitches "
                         "(--no-glitches keeps every point)")
            print(notes[-1])
    reading["records"] = [
        {"name": name, "initial_value": {"t": t[0], "value": y0, "error": error}, "r2": r2,
         "points": len(t), "noise": {"sigma": record.sigma, "misfit": missed}, "alone": own}
        for name, record, (t, _, y0, r2), error, missed, own in zip(names, result.records, given, errors, misses,
                                                                   alone)]
    reading["notes"] = [note.removeprefix("note: ") for note in notes]
    if args.plot:
        try:
            starts = [carried_back(chosen.template, values, y0, record.t[0], t, y)[0]
                      for (t, y, *_), record, y0 in zip(given, result.records, y0s)]
            plot_records(args.plot, [replace(record, t=t, y=y) for record, (t, y, *_) in zip(result.records, given)],
                         names, law, chosen.template, values, starts, args.columns)
        except OSError as err:
            print(f"error: --plot {args.plot}: cannot write there ({err.strerror or err})", file=sys.stderr)
            return 1
        print(f"plot written to {args.plot}")
    return _written(args.json, reading)

