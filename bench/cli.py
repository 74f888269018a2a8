"""`python -m bench`: run sweeps, list datasets and methods, re-score, and report."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from bench import datasets, registry
from odecore import processes, protocol, shipped
from odecore.arguments import Repeatable, existing_folder, output_path, positive_number, relative_noise, whole_number
from odecore.cluster import scheduler_address
from odecore.files import figure_target, why_no_folder, why_unwritable
from odecore.trajectories import TY


EXAMPLES = """examples:
  python -m bench run --dataset classic --noise 0.01
  python -m bench run --dataset textbook classic --noise 0 0.01 0.02 --n 128 192 \\
      --methods sindy truth --seeds 0 1 -j 2 --out results/my-sweep
  python -m bench run --dataset my_trajectories/ --methods sindy     (a folder of t,y CSV files)
  python -m bench run --dataset plates/ --columns hours od600        (CSV files headed Hours,OD600)
  python -m bench run --dataset plate1.csv --by well                 (one file, a record per well)
  python -m bench list
  python -m bench report results/my-sweep
  python -m bench compare results/my-sweep --methods nsode-eps+refine proged --plot pair.png
  python -m bench plot results/my-sweep --out figures/
  python -m bench paper --config configs/paper.yaml --quick        (smoke test of the paper pipeline)
  python -m bench run --dataset classic --backend dask --scheduler tcp://HOST:8786 -j 32
"""

_positive_int = whole_number(1)
_point_count = whole_number(protocol.MIN_POINTS)  # observed points per task


class UserError(Exception):
    """A problem with the user's input, reported as one line without a traceback."""


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    with processes.terminated_as_interrupt():  # `kill`, a scheduler: stop as Ctrl-C does
        try:
            return args.handler(args) or 0
        except (UserError, datasets.DatasetError, registry.RegistryError, ValueError) as err:
            if type(err) is ValueError:  # a plain ValueError is a bug, show it fully
                raise
            print(f"error: {err}", file=sys.stderr)
            return 2
        except BrokenPipeError:  # output piped into `head`: odecore.arguments.run_command stops quietly
            raise
        except OSError as err:  # a folder that cannot be made or written (--out names a file, no permission)
            what = ("exists and is not a folder" if isinstance(err, FileExistsError)
                    else (err.strerror or str(err)).lower())
            print(f"error: {err.filename}: {what}" if err.filename else f"error: {err}", file=sys.stderr)
            return 2
        except KeyboardInterrupt as err:
            sweeps = args.command in ("run", "paper")  # the commands that keep rows as they finish
            print("interrupted" + (": finished rows are saved; run the same command again to resume" if sweeps else ""),
                  file=sys.stderr)
            return 143 if isinstance(err, processes.Terminated) else 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench", description="Benchmark methods that discover ODEs y' = f(y) from one trajectory.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser("run", help="run (or resume) a sweep and print its median scores and leaderboard",
                         description="Run every method on every task of a sweep: datasets x noise x n x seeds. "
                         "Rows are written as they finish; rerunning the same command resumes. Then print "
                         "the medians and the leaderboard (shares of tasks solved, with 95% intervals).",
                         epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("--dataset", nargs="+", action=Repeatable, default=["textbook"], metavar="NAME|PATH",
                     help="built-in dataset name (%s), a dataset JSON file, or CSV file/folder "
                          "(default: textbook)" % ", ".join(datasets.builtin_names()))
    run.add_argument("--columns", nargs=2, default=list(TY), metavar=("TIME", "VALUE"),
                     help="the columns of CSV datasets read as t and y, for files whose header says hours,OD600 "
                          "(names read without case or spaces; default: t y)")
    run.add_argument("--by", metavar="COLUMN", help="CSV files that hold several records (wells, runs) told apart by "
                     "this column: each record is a trajectory of its file's law, its label in the rows' `record`")
    run.add_argument("--noise", nargs="+", action=Repeatable, type=relative_noise, default=[0.0], metavar="SIGMA",
                     help=f"multiplicative noise levels (paper: {' '.join(map(str, protocol.NOISE_LEVELS))}; default 0)")
    run.add_argument("--n", nargs="+", action=Repeatable, type=_point_count, default=[128], metavar="N",
                     help=f"observed points per trajectory, {protocol.MIN_POINTS} or more, capped at the points a "
                          f"trajectory has ({protocol.GRID} on the built-in grids; paper: "
                          f"{' '.join(map(str, protocol.N_SAMPLES))}; default 128)")
    run.add_argument("--methods", "--method", nargs="+", action=Repeatable, metavar="NAME", help="methods to run (default: every available one)")
    run.add_argument("--method-file", nargs="+", action=Repeatable, default=[], metavar="FILE.py", help="extra method files to load")
    run.add_argument("--seeds", nargs="+", action=Repeatable, type=whole_number(0), default=[0], metavar="S", help="data and method seeds (default 0)")
    run.add_argument("-j", "--jobs", type=_positive_int, default=1, help="parallel worker processes (default 1)")
    run.add_argument("--time-limit", type=positive_number, metavar="SECONDS",
                     help="hard deadline per (method, task), overriding each method's default")
    run.add_argument("--memory-limit", type=positive_number, metavar="GB",
                     help="address-space limit per worker process; a method that exceeds it fails alone")
    run.add_argument("--out", default="results/sweep", type=output_path, metavar="DIR",
                     help="result folder (default results/sweep)")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    _backend_options(run)
    run.set_defaults(handler=_run)

    _add_result_commands(sub)
    paper = sub.add_parser("paper", help="run (or resume) the paper's sweep, then write every figure and table",
                           description="Run or resume the sweep a config describes, then write all figures "
                           "and tables with an index page into <out>/figures/ (see configs/paper.yaml), and "
                           "REPRODUCTION.md: each of the paper's claims with the measured figures and a verdict "
                           "(rules in bench/claims.py). configs/cpu.yaml is a grid for 2 cores: 2.8-7.8 "
                           "worker-hours measured, 1.4-4.5 hours with -j 2.")
    paper.add_argument("--config", default=str(shipped.folder("configs") / "paper.yaml"), metavar="YAML",
                       help="the grid: a YAML file, or a shipped config's name (paper, cpu; default: paper, the project's "
                            "configs/paper.yaml)")
    paper.add_argument("--quick", action="store_true", help="the config's small smoke-test grid (minutes)")
    paper.add_argument("-j", "--jobs", type=_positive_int, default=1, help="parallel worker processes (default 1)")
    paper.add_argument("--method-file", nargs="+", action=Repeatable, default=[], metavar="FILE.py", help="extra method files to load")
    paper.add_argument("--data-folder", metavar="DIR", type=existing_folder,
                       help="training data to include in the dataset statistics")
    paper.add_argument("--docs", type=output_path, metavar="DIR", help="also copy REPRODUCTION.md, its tables and the "
                       "main figures into DIR (the project keeps its report in docs/reproduction)")
    paper.add_argument("--quiet", action="store_true", help="no progress bar")
    _backend_options(paper)
    paper.set_defaults(handler=_paper)

    lst = sub.add_parser("list", help="list datasets and methods, with why a method cannot run here",
                         description="The datasets (built-in names for --dataset) and the methods with their "
                         "versions and variants; a method that cannot run here is listed with the reason.")
    lst.add_argument("--method-file", nargs="+", action=Repeatable, default=[], metavar="FILE.py", help="extra method files to list")
    lst.set_defaults(handler=_list)

    draw = sub.add_parser("draw-y0", help="draw and store initial values for a dataset file (maintainers)",
                          description="Draw initial values for every equation of a dataset file that has none yet, "
                          "by the file's \"y0_draw\" rule ({\"count\": 3, \"low\": 0.1, \"high\": 5, \"seed\": 0}, "
                          "optionally \"max_draws\", default 10000: uniform draws from [low, high], the range halved "
                          "after max_draws draws with too few), each with a solution that passes the truth's checks "
                          "up to the extrapolation window. Optionally \"residual\": \"relative\" judges the "
                          "solution's finite-difference residual in units of y, for laws in large units (y0 = 1e8 "
                          "fails the default absolute check on rounding alone). The file is rewritten after each "
                          "equation, so an interrupted run keeps its progress.")
    draw.add_argument("file", metavar="DATASET.json", help="the dataset file to fill in")
    draw.set_defaults(handler=_draw_y0)
    return parser


def _add_result_commands(sub) -> None:
    """`plot`, `report` and `score`: read result folders, write figures or tables, or re-score."""
    score = sub.add_parser("score", help="recompute scores from stored predictions (no refitting)",
                           description="Recompute every score of a sweep folder from its stored predictions "
                           "(after a change to the scorers); the fits are not rerun.")
    score.add_argument("results", metavar="DIR", help="a result folder written by `bench run`")
    score.add_argument("-j", "--jobs", type=_positive_int, default=1, help="parallel worker processes (default 1)")
    score.set_defaults(handler=_score)

    plot = sub.add_parser("plot", help="draw the paper's figures (PNG and PDF) from a result folder",
                          description="Draw the main figure, median R^2 per dataset (interpolation and "
                          "extrapolation), the appendix grids and the dataset statistics, each with a CSV "
                          "of the numbers it shows. Several result folders are combined into one table "
                          "(the same task and method in two of them is an error).")
    plot.add_argument("results", nargs="+", metavar="DIR", help="result folder(s) to combine")
    plot.add_argument("--out", type=output_path, metavar="DIR", help="where to write the figures (default: "
                      "DIR/figures; required with several folders)")
    plot.add_argument("--dataset", help=f"dataset of the main figure (default {protocol.MAIN_FIGURE['dataset']}, "
                      "else one the results hold)")
    plot.add_argument("--n", type=_positive_int, help=f"n of the main figure (default {protocol.MAIN_FIGURE['n']}, "
                      "else one the results hold)")
    plot.add_argument("--n-datasets", type=_positive_int,
                      help=f"n of the per-dataset R^2 figures (default {protocol.DATASET_FIGURE_N}, else one "
                      "the results hold)")
    plot.add_argument("--data-folder", metavar="DIR", type=existing_folder,
                      help="training data to include in the dataset statistics")
    plot.set_defaults(handler=_plot)

    report = sub.add_parser("report", help="median tables (markdown and CSV) of one or several result folders",
                            description="Median tables (markdown, CSV, LaTeX), the leaderboard (shares of tasks "
                            "solved, R^2 > 0.9, with 95% intervals) and failure counts. Several result folders are "
                            "combined into one table (the same task and method in two of them is an error).")
    report.add_argument("results", nargs="+", metavar="DIR", help="result folder(s) to combine")
    report.add_argument("--out", type=output_path, metavar="DIR", help="where to write the tables (default: the "
                        "result folder; required with several folders)")
    report.set_defaults(handler=_report)

    compare = sub.add_parser("compare", help="two methods task by task: solved counts and a sign test per cell",
                             description="Pair two methods on the tasks both ran: per dataset and noise level, "
                             "how many tasks each solves (R^2 > 0.9, failures unsolved), how many only one of "
                             "them solves, and the exact two-sided sign test on those, for interpolation and "
                             "extrapolation. Tells a real gap between two methods from a draw of the noise.")
    compare.add_argument("results", nargs="+", metavar="DIR", help="result folder(s) to combine")
    compare.add_argument("--methods", nargs="+", action=Repeatable, required=True, metavar="METHOD",
                         help="the two methods, as stored (e.g. nsode-eps+refine proged)")
    compare.add_argument("--by", nargs="*", default=["dataset", "noise"], metavar="COLUMN",
                         help="task columns that split the tasks into cells: dataset, equation_id, y0_index, "
                              "noise, n, seed, truth_expression, truth_complexity, truth_kind (default: dataset "
                              "noise; `--by` with no column: one row for all tasks)")
    compare.add_argument("--plot", type=output_path, metavar="FILE",
                         help="also draw the two methods' 1 - R^2 task by task, interpolation and extrapolation, "
                              "to FILE (.png, .pdf, .svg or .jpg; .png added to another ending), with the points as "
                              "FILE's name with .csv")
    compare.set_defaults(handler=_compare)



def _backend_options(parser) -> None:
    parser.add_argument("--backend", choices=("joblib", "dask"), default="joblib",
                        help="joblib: worker processes on this machine; dask: a Dask cluster (default joblib)")
    parser.add_argument("--scheduler", metavar="tcp://HOST:PORT", type=scheduler_address,
                        help="address of a running Dask scheduler (with --backend dask; without it a "
                             "LocalCluster of -j workers is started here). Start workers with "
                             "DASK_DISTRIBUTED__WORKER__DAEMON=False so they may start child processes")


def _check_backend(args) -> None:
    if args.scheduler and args.backend != "dask":
        raise UserError("--scheduler needs --backend dask")


def _read_results(folders: list[Path], methods: set[str] | None = None):
    """The stored rows of one or several result folders as one table (of `methods` only, when
    given); a one-line error when one is not a result folder, when they hold nothing, or when two
    hold the same (task, method)."""
    from bench import runner
    from bench.store import DuplicateResults, combine

    for folder in folders:
        if not (folder / "parts").is_dir():
            raise UserError(f"{folder} is not a result folder (no parts/ inside)")
    try:
        rows = combine(folders, methods)
    except DuplicateResults as err:
        raise UserError(str(err)) from None
    if rows.empty:
        where = " ".join(map(str, folders))
        if not methods:
            raise UserError(f"{where}: no results yet")
        raise UserError(f"{where}: no results of {', '.join(sorted(methods))} (stored: {_methods_held(folders)})")
    for folder in folders:
        for start in runner.unfinished_starts(folder):
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(start.get("started_at", 0)))
            print(f"note: the sweep started in {folder} at {when} stopped before its end ({start['pending']} pairs "
                  "were to run): these tables hold the rows stored so far; resume it with the same "
                  "`python -m bench run` command", file=sys.stderr)
    return rows


def _methods_held(folders: list[Path]) -> str:
    """The methods a result folder holds rows of, for an error that names one it does not."""
    from bench.store import ResultStore

    held = {method for folder in folders for method in ResultStore(folder).read().get("method", [])}
    return ", ".join(sorted(held)) or "nothing"


def _output_folder(args, default: str) -> Path:
    """--out, else `default` inside the only result folder; several folders need --out."""
    if args.out:
        return Path(args.out)
    if len(args.results) > 1:
        raise UserError("several result folders are combined: say where the output goes with --out DIR")
    return Path(args.results[0]) / default if default else Path(args.results[0])


def _plot(args) -> int:
    from bench import plots

    rows = _read_results([Path(p) for p in args.results])
    out = _output_folder(args, "figures")
    if args.dataset is not None and args.dataset not in set(rows["dataset"]):
        raise UserError(f"--dataset {args.dataset}: the results hold {', '.join(sorted(set(rows['dataset'])))}")
    shown = rows[rows["dataset"] == args.dataset] if args.dataset else rows
    if args.n is not None and args.n not in set(shown["n"]):
        raise UserError(f"--n {args.n}: the results{' on ' + args.dataset if args.dataset else ''} hold n = "
                        f"{', '.join(map(str, sorted(set(shown['n']))))}")
    dataset, n = args.dataset or protocol.MAIN_FIGURE["dataset"], args.n or protocol.MAIN_FIGURE["n"]
    shown_dataset = plots.pick(rows["dataset"], dataset)
    shown_n = plots.pick(rows.loc[rows["dataset"] == shown_dataset, "n"], n)
    if (shown_dataset, shown_n) != (dataset, n):
        print(f"main figure: {shown_dataset}, n = {shown_n} (the results hold no {dataset} at n = {n})")
    if args.n_datasets is not None and args.n_datasets not in set(rows["n"]):
        raise UserError(f"--n-datasets {args.n_datasets}: the results hold n = "
                        f"{', '.join(map(str, sorted(set(rows['n']))))}")
    n_datasets = args.n_datasets or protocol.DATASET_FIGURE_N
    if plots.pick(rows["n"], n_datasets) != n_datasets:
        print(f"per-dataset figures: n = {plots.pick(rows['n'], n_datasets)} (the results hold no n = {n_datasets})")
    paths = plots.draw_all(rows, out, dataset=dataset, n_main=n, n_datasets=n_datasets,
                           data_folder=args.data_folder)
    print(f"wrote {len(paths)} files to {out}")
    return 0


def _paper(args) -> int:
    from bench import paper

    _check_backend(args)
    why = args.docs and why_no_folder(Path(args.docs))
    if why:  # before the sweep: the report is copied there at the end
        raise UserError(f"--docs {args.docs}: {why}")
    index = paper.run_paper(args.config, args.quick, args.jobs, args.backend, args.scheduler,
                            progress=not args.quiet, method_files=tuple(args.method_file),
                            data_folder=args.data_folder, command=_command_line(args), docs=args.docs)
    print(f"figures and tables: {index}")
    return 0


def _command_line(args) -> str:
    """The command as typed (for the reproduction report)."""
    import shlex

    return "python -m bench " + shlex.join(args.argv)


def _run(args) -> int:
    from bench import report, reproduction, runner

    _check_backend(args)
    specs = registry.discover(tuple(args.method_file), tuple(args.methods) if args.methods else None)
    if args.methods:
        selected = registry.select(args.methods, specs)
        for spec in selected:
            reason = registry.unavailable_reason(spec)
            if reason:
                raise UserError(f"method {spec.name} is unavailable here: {reason}")
    else:
        selected = [s for s in specs.values() if registry.unavailable_reason(s) is None]
    paths = [datasets.resolve(name) for name in args.dataset]
    csv_options = [*([f"--columns {' '.join(args.columns)}"] if tuple(args.columns) != TY else []),
                   *([f"--by {args.by}"] if args.by else [])]
    if csv_options and not any(map(datasets.is_csv, paths)):
        raise UserError(f"{' '.join(csv_options)}: tells how to read CSV datasets, and this sweep has none (a JSON "
                        "dataset's trajectories are solved from its laws)")
    for path in paths:
        if Path(path).is_dir() and Path(path).resolve() == Path(args.out).resolve():
            raise UserError(f"--out {args.out} is the dataset folder: its tables (.csv) would be read as "
                            "trajectories next time; write the results to another folder")
    # a path is stored absolute, so `bench score` finds the data from any folder
    args.dataset = [str(Path(name).resolve()) if Path(name).exists() else name for name in args.dataset]
    sweep = runner.Sweep(
        datasets=tuple(args.dataset), methods=tuple(selected), noise=tuple(args.noise), n=tuple(args.n),
        seeds=tuple(args.seeds), jobs=args.jobs, time_limit=args.time_limit, out=args.out,
        memory_limit=int(args.memory_limit * 2**30) if args.memory_limit else None,
        method_files=tuple(args.method_file), backend=args.backend, scheduler=args.scheduler,
        columns=tuple(args.columns), by=args.by)
    store = runner.run(sweep, progress=not args.quiet)
    rows = store.read()
    mine = runner.sweep_rows(sweep, rows)
    if mine.empty:
        print("no results: no method ran on any task of this sweep", file=sys.stderr)
        return 1  # a script that chains `bench run` with `bench report` should stop here
    oracles = reproduction.oracles(sweep.methods)
    paths = report.write(rows, Path(args.out), oracles)  # the folder's tables: every row it holds, as `bench report`
    _print_results(mine, oracles)
    others = f" (they also hold the folder's {len(rows) - len(mine)} rows of other sweeps)" if len(rows) > len(mine) else ""
    print(f"\nresults: {Path(args.out) / 'parts'}  tables: {paths['markdown']}{others}")
    return 0


def _print_results(rows, oracles=()) -> None:
    """The medians, the leaderboard (shares solved, with their intervals; `oracles` marked) and,
    for a user's own records, the laws found."""
    from bench import report

    print(report.format_markdown(report.medians(rows)))
    print(f"\nLeaderboard, every task pooled: shares of tasks with R^2 > {report.GOOD_R2:g}, best first by "
          f"extrapolation. {report.LEADERBOARD_NOTE}\n")
    print(report.format_leaderboard(report.leaderboard(rows), oracles))
    observed = rows[rows["truth_kind"] == "observations"]
    if not observed.empty:
        print("\n" + report.OBSERVATIONS_NOTE)
        print(f"\nThe laws found (constants to {report.LAW_DIGITS} digits, laws cut at {report.LAW_WIDTH} characters; "
              "laws.csv has them in full):\n")
        print(report.format_laws(report.laws(observed)))


def _list(args) -> int:
    specs = sorted(registry.discover(tuple(args.method_file)).items())  # a broken --method-file stops here
    print("datasets:")
    for name in datasets.builtin_names():
        print(f"  {name}")
    if "large" not in datasets.builtin_names():
        print("  large      (not generated yet: python -m nsode.data large)")
    print("\nmethods:")
    reasons = {name: registry.unavailable_reason(spec) for name, spec in specs}
    versions = {name: spec.base_version if reasons[name] else spec.version for name, spec in specs}
    width = max(map(len, versions.values()), default=1) + 1
    for name, spec in specs:
        reason = reasons[name]
        state = "available" if reason is None else f"unavailable: {reason}"
        print(f"  {name:<18} {'v' + versions[name]:<{width}} {state}")
        if spec.description:
            print(f"  {'':<18}       {spec.description}")
    for file, reason in registry.BROKEN.items():
        print(f"  {file:<18}       broken: {reason}")
    return 0


def _score(args) -> int:
    from bench import rescoring

    parts = Path(args.results) / "parts"
    if not parts.is_dir():
        raise UserError(f"{args.results} is not a result folder (no parts/ inside)")
    if not any(parts.glob("*.parquet")):  # rescore reads the rows themselves
        raise UserError(f"{args.results} holds no results yet")
    count = rescoring.rescore(Path(args.results), jobs=args.jobs)
    print(f"re-scored {count} predictions in {args.results}")
    return 0


def _report(args) -> int:
    from bench import report, reproduction

    folders = [Path(p) for p in args.results]
    rows = _read_results(folders)
    oracles = reproduction.stored_oracles(sorted(rows["method"].unique()), folders)
    paths = report.write(rows, _output_folder(args, ""), oracles)
    _print_results(rows, oracles)
    print("\ntables: " + ", ".join(str(v) for v in paths.values()))
    return 0


def _compare(args) -> int:
    from bench import compare

    figure = _figure_file(args.plot) if args.plot else None
    named = set(args.methods) | {registry.canonical_label(name) for name in args.methods}
    rows = _read_results([Path(p) for p in args.results], named)  # other methods' rows cannot clash
    unknown = sorted(set(args.by) - set(rows.columns))
    if unknown:
        raise UserError(f"--by: no column {', '.join(unknown)} in the results (e.g. dataset, noise, n, seed, "
                        "truth_expression)")
    if len(args.methods) != 2:
        raise UserError(f"--methods: compare takes two methods, not {len(args.methods)} (pair them two at a time)")
    stored = set(rows["method"])
    methods = [name if name in stored else registry.canonical_label(name) for name in args.methods]
    if methods[0] == methods[1]:
        raise UserError(f"--methods: compare {methods[0]} with another method")
    for name in methods:
        if name not in stored:
            raise UserError(f"--methods: no results of {name} (stored: {_methods_held([Path(p) for p in args.results])})")
    try:
        table = compare.paired(rows, *methods, by=tuple(args.by))
    except ValueError as err:
        raise UserError(str(err)) from None
    print(compare.format_markdown(table, *methods))
    if figure:
        from bench import plots

        paths = plots.paired_figure(compare.pair_tasks(rows, *methods), *methods, figure)
        print(f"\nfigure: {paths[0]} (points: {paths[1]})")
    return 0


def _figure_file(text: str) -> Path:
    """Where `--plot` draws (`odecore.files.figure_target`), refused before any work if it cannot."""
    path, why = figure_target(Path(text), "pair.png")
    if why:
        raise UserError(f"--plot {path}: {why}")
    points = path.with_suffix(".csv")
    if why := why_unwritable(points):
        raise UserError(f"--plot {points}: {why}")
    return path


def _draw_y0(args) -> int:
    from tqdm import tqdm

    count = datasets.fill_initial_values(Path(args.file), progress=tqdm)
    print(f"drew initial values for {count} equations in {args.file}")
    return 0

