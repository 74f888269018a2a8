"""REPRODUCTION.md: the paper's claims checked against one sweep, with what was run, where and how long.

Every number in the report is read from the stored rows (medians, fit times, timestamps) or from
the sweep's `sweep.json` (commit and machine recorded when the sweep started); nothing is typed in.
`publish` copies the report with its tables and main figures into a documentation folder.
"""
from __future__ import annotations

import shutil
import time
from pathlib import Path

import pandas as pd

from bench import claims, compare, provenance, registry, report
from bench.method import Oracle
from bench.rows import runs_stopped_by_time
from bench.store import SWEEP_FILE, ResultStore, SweepFileError, read_sweep_file

REPORT = "REPRODUCTION.md"
LEADERS_FIGURE = "leaders.png"  # the two leading methods task by task
ROWS = "rows"  # the rows behind every number, as a result folder that every `bench` command reads
PUBLISHED = (REPORT, "claims.csv", "leaderboard.csv", "leaderboard_by_dataset.md", "method_times.csv", "medians.csv", "medians_iqr.md", "failures.md",
             "main.png", "solved.png", "r2_interp.png", "r2_extrap.png", LEADERS_FIGURE)  # what `publish` copies; the report links only these


def wall_time(rows: pd.DataFrame) -> tuple[float, float]:
    """(seconds from the first task's start to the last row's finish, summed fit seconds). A task's
    start is its row's `finished_at` less its fit and setup time; pauses between a stop and a resume
    are included in the span."""
    finished = pd.to_numeric(rows["finished_at"], errors="coerce")
    spent = pd.to_numeric(rows["fit_time"], errors="coerce").fillna(0) + \
        pd.to_numeric(rows["setup_time"], errors="coerce").fillna(0)
    return float(finished.max() - (finished - spent).min()), float(spent.sum())


def starts(rows: pd.DataFrame, runs: list[dict]) -> list[tuple[str, int, float]]:
    """(commit, rows, wall seconds) of each start (sweep.json "runs") that finished rows: a row
    belongs to the last start before it finished, and a start's wall time runs from it to its last
    row, so a resume days later reads as the minutes it took, not the days between."""
    finished = pd.to_numeric(rows["finished_at"], errors="coerce").to_numpy()
    began = [float(run.get("started_at", float("nan"))) for run in runs]
    out = []
    for i, (run, start) in enumerate(zip(runs, began)):
        end = began[i + 1] if i + 1 < len(began) else float("inf")
        mine = finished[(finished >= start) & (finished < end)]
        if len(mine):
            out.append((run["commit"], len(mine), float(mine.max() - start)))
    return out


def stored_before(rows: pd.DataFrame, runs: list[dict]) -> int:
    """Rows that finished before the first recorded start (copied in from another store), which no
    start's wall time covers; 0 when the sweep recorded no starts."""
    if not runs:
        return 0
    finished = pd.to_numeric(rows["finished_at"], errors="coerce").to_numpy()
    return int((finished < float(runs[0].get("started_at", float("-inf")))).sum())


def method_times(rows: pd.DataFrame) -> pd.DataFrame:
    """Per method: tasks, the task deadline, median and max fit time, core-hours of fitting, and
    the tasks where a run's own time limit fired before its counted budget was spent
    (`time_cut_tasks`: results that a busier machine could change)."""
    rows = rows.assign(fit_time=pd.to_numeric(rows["fit_time"], errors="coerce"),
                       time_cut=[runs_stopped_by_time(m) for m in rows["metadata"]] if "metadata" in rows else False)
    grouped = rows.groupby("method")
    table = pd.DataFrame({"tasks": grouped.size(), "time_limit_s": grouped["time_limit"].max(),
                          "median_fit_s": grouped["fit_time"].median(), "max_fit_s": grouped["fit_time"].max(),
                          "core_hours": grouped["fit_time"].sum() / 3600, "time_cut_tasks": grouped["time_cut"].sum()})
    return table.reset_index()


def _runs(sweep_folder: Path, key: str = "runs") -> list[dict]:
    """The starts recorded in sweep.json (with `key` "rescored": its re-scorings), oldest first
    ([] when none were)."""
    try:
        return read_sweep_file(sweep_folder).get(key) or []
    except SweepFileError:
        return []


def _rescorings(sweep_folder: Path) -> list[str]:
    """A line per `bench score` of the rows: its scores are later than the fits."""
    return [f"- scores recomputed from the stored predictions (`bench score`) at commit `{entry['commit']}`, "
            f"{time.strftime('%Y-%m-%d', time.gmtime(entry['at']))}: {entry['scored']:,} scores"
            for entry in _runs(sweep_folder, "rescored")]


def _provenance(runs: list[dict]) -> dict:
    """The commit(s) and machine(s) of the starts that ran the sweep's tasks (sweep.json "runs");
    this checkout's, marked as such, when the sweep did not record them."""
    if not runs:
        return {**provenance.describe(), "note": "recorded at report time (the sweep did not record it)"}
    commits = list(dict.fromkeys(run["commit"] for run in runs))
    note = f"{len(runs)} starts; commits in order: {', '.join(commits)}" if len(runs) > 1 else None
    return {"commit": commits[-1], "machine": runs[-1]["machine"], "note": note}


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.2f} h ({seconds:,.0f} s)"


def _grid(rows: pd.DataFrame) -> list[str]:
    tasks = rows.drop_duplicates(["dataset", "equation_id", "y0_index"]).groupby("dataset").size()
    return [f"- datasets (trajectories): {', '.join(f'{d} ({k})' for d, k in tasks.items())}",
            f"- noise sigma: {', '.join(f'{s:g}' for s in sorted(rows['noise'].unique()))}; "
            f"n: {', '.join(map(str, sorted(rows['n'].unique())))}; seeds: "
            f"{', '.join(map(str, sorted(rows['seed'].unique())))}",
            f"- methods: {', '.join(sorted(rows['method'].unique()))}",
            f"- stored rows: {len(rows)}"]


def _leaders_section(rows: pd.DataFrame, board: pd.DataFrame, oracles: tuple[str, ...], folder: Path) -> list[str]:
    """The two leading methods (oracles aside) paired task by task: is the leader's margin more
    than a draw of the noise? Drawn as `LEADERS_FIGURE` in `folder`. Empty when fewer than two
    methods compete."""
    from bench import plots

    leaders = [m for m in board["method"] if m not in oracles][:2]
    if len(leaders) < 2:  # nor a figure of an earlier run's leaders beside this report
        for stale in (folder / LEADERS_FIGURE, (folder / LEADERS_FIGURE).with_suffix(".csv")):
            stale.unlink(missing_ok=True)
        return []
    plots.paired_figure(compare.pair_tasks(rows, *leaders), *leaders, folder / LEADERS_FIGURE)
    return ["## The two leading methods, task by task", "",
            f"`python -m bench compare --plot` on this sweep: per dataset and noise level the tasks each of "
            f"{leaders[0]} and {leaders[1]} solves, the tasks only one of them solves, and the exact sign test "
            "on the laws (a law counts once, for the method that solves more of its tasks: they rise and fall "
            "together).",
            "", compare.format_markdown(compare.paired(rows, *leaders), *leaders), "",
            f"![{leaders[0]} against {leaders[1]}, 1 - R^2 task by task]({LEADERS_FIGURE})", ""]


def _claims_section(verdicts: list[claims.Verdict]) -> list[str]:
    lines = ["| # | claim (paper) | measured here | verdict | why |", "|---|---|---|---|---|"]
    for v in verdicts:
        lines.append(f"| {v.key} | {v.claim} | {v.measured} | **{v.verdict}** | {v.why} |")
    lines += ["", "Rules (bench/claims.py; failed tasks count as R^2 = -inf; their complexity is left out unless they wrote a law that diverged):", ""]
    lines += [f"{v.key}. {v.rule}" for v in verdicts]
    return lines


def write(rows: pd.DataFrame, folder: Path, sweep_folder: Path, command: str, roles: claims.Roles,
          note: str | None = None) -> Path:
    """REPRODUCTION.md, claims.csv, method_times.csv, the leaders' figure and the rows (`write_rows`)
    into `folder` (beside the figures and tables of `bench.paper.write_outputs`)."""
    stored = write_rows(rows, folder, sweep_folder)
    size = sum(file.stat().st_size for file in stored.rglob("*") if file.is_file())
    verdicts = claims.check(rows, roles)
    claims.to_frame(verdicts).to_csv(folder / "claims.csv", index=False)
    times = method_times(rows)
    times.to_csv(folder / "method_times.csv", index=False)
    board = report.leaderboard(rows)  # its files are `report.write`'s
    span, busy = wall_time(rows)
    runs = _runs(sweep_folder)
    origin = _provenance(runs)
    parts = starts(rows, runs)
    earlier = stored_before(rows, runs)
    if not parts and earlier:  # every row was copied in: no start here ran a task
        timing = "no start of this sweep ran a task"
    elif len(parts) > 1 or earlier:  # each start's own span: the pause between a stop and a resume is not the sweep's
        span = sum(seconds for _, _, seconds in parts)
        timing = (f"{_hours(span)} over {len(parts)} start{'s' * (len(parts) != 1)} (" + "; ".join(
            f"{commit[:7]}: {_hours(seconds)}, {count:,} rows" for commit, count, seconds in parts) + ")")
    else:
        timing = (f"{_hours(span)} from the first task's start to the last row (stored timestamps; "
                  "includes pauses between a stop and a resume)")
    if earlier:  # rows brought from another store of the same grid: no start here timed them
        timing += (f"; {earlier:,} rows were stored before the first start (their `method_version` and "
                   "`finished_at` say what and when; their fits count in the worker time, not the wall time)")
    box = origin["machine"]
    lines = ["# Reproduction report: the paper's claims, checked", ""]
    if note:
        lines += [f"> {note.strip()}", ""]
    lines += ["## What was run", "", f"```bash\n{command}\n```", "",
              f"- {_code_kind(origin['commit'])}: `{origin['commit']}`" + (f" ({origin['note']})" if origin.get("note") else ""),
              f"- machine: {box['cpu_count']} CPUs, {box.get('cpu_model') or box['processor']} "
              f"({box['machine']}), {box['platform']}, Python {box['python']}",
              f"- wall time of the sweep: {timing}; fitting: {_hours(busy)} of worker time",
              *_rescorings(sweep_folder), *_grid(rows),
              f"- the rows behind every number: [{ROWS}/]({ROWS}/) ({size / 1e6:.1f} MB), a result folder that "
              f"`python -m bench report`, `compare` and `plot` read (give `report` and `plot` an `--out`: they write "
              "into the folder they read); copied elsewhere, `bench score` re-scores it without refitting, and in the "
              "config's `out` folder `bench paper` rebuilds this report from it, refitting only the methods whose "
              "version has changed", "",
              "## Claims", "", *_claims_section(verdicts), "",
              "## Leaderboard", "",
              f"Every stored task pooled (datasets, noise levels and sample sizes above), best first by the share "
              f"of tasks whose extrapolation R^2 exceeds {report.GOOD_R2:g}. {report.LEADERBOARD_NOTE} Per dataset "
              "and noise level: [leaderboard_by_dataset.md](leaderboard_by_dataset.md).", "",
              report.format_leaderboard(board, roles.oracles), "",
              "![tasks solved per method with 95% intervals, and median fit time](solved.png)", "",
              *_leaders_section(rows, board, roles.oracles, folder),
              "## Time per method", "",
              "time_limit_s: the largest task limit among the method's rows (a resume under a longer limit "
              "redoes only the rows the shorter one cut short); time_cut_tasks: rows in which a run stopped "
              "at its own time limit before its counted budget was spent.", "",
              report.markdown_table(times, floatfmt=".3g"), "",
              "## Figures and tables", "",
              "![median R^2, complexity and fit time against noise](main.png)", "",
              "![median R^2 per dataset, interpolation](r2_interp.png)", "",
              "![median R^2 per dataset, extrapolation](r2_extrap.png)", "",
              "Medians with interquartile ranges: [medians_iqr.md](medians_iqr.md) "
              "([CSV of medians](medians.csv)); failures: [failures.md](failures.md); "
              "verdicts as CSV: [claims.csv](claims.csv); leaderboard as CSV: [leaderboard.csv](leaderboard.csv); "
              "fit times: [method_times.csv](method_times.csv)."]
    path = folder / REPORT
    path.write_text("\n".join(lines) + "\n")
    return path


def write_rows(rows: pd.DataFrame, folder: Path, sweep_folder: Path) -> Path:
    """The report's rows into `folder`/rows as a result folder of one part, with the sweep's
    sweep.json: published beside the report, they let `bench report`, `bench score` and
    `bench compare` be run on its numbers, and `bench paper` rebuild it, without the hours of fits."""
    target = folder / ROWS
    shutil.rmtree(target, ignore_errors=True)
    ResultStore(target).replace_all(rows)
    if (sweep_folder / SWEEP_FILE).is_file():
        shutil.copyfile(sweep_folder / SWEEP_FILE, target / SWEEP_FILE)
    return target


def publish(folder: Path, docs: Path) -> list[Path]:
    """Copy the report, its tables, the main figures and its rows from `folder` into `docs`."""
    docs.mkdir(parents=True, exist_ok=True)
    copied = []
    for name in PUBLISHED:
        if (folder / name).exists():
            shutil.copyfile(folder / name, docs / name)
            copied.append(docs / name)
        else:  # an earlier report's file that this one does not link
            (docs / name).unlink(missing_ok=True)
    if (folder / ROWS).is_dir() and not same_rows(folder / ROWS, docs / ROWS):
        shutil.rmtree(docs / ROWS, ignore_errors=True)
        shutil.copytree(folder / ROWS, docs / ROWS)
        copied.append(docs / ROWS)
    return copied


def same_rows(new: Path, published: Path) -> bool:
    """Whether the published rows folder already holds `new`'s rows and sweep record: a rebuild that
    refitted nothing then leaves it as it is, not a new 0.9 MB part under another name in the history."""
    def text(file: Path) -> bytes | None:
        return file.read_bytes() if file.is_file() else None

    if not (published / "parts").is_dir() or text(new / SWEEP_FILE) != text(published / SWEEP_FILE):
        return False
    try:
        return ResultStore(new).read().equals(ResultStore(published).read())
    except (OSError, ValueError):  # an unreadable published folder is replaced
        return False


def oracles(specs) -> tuple[str, ...]:
    """Labels of the methods that are handed the truth (`bench.method.Oracle`): checks and
    ceilings, not competitors."""
    return tuple(spec.label for spec in specs if issubclass(spec.load(), Oracle))


def _code_kind(commit: str) -> str:
    """How the report names the code that ran: a checkout's git commit, or an installed package."""
    return "package" if commit.startswith(provenance.DISTRIBUTION + " ") else "git commit"


def stored_oracles(labels, folders) -> tuple[str, ...]:
    """The stored `labels` whose method is handed the truth, as the methods found here tell
    (the built-in ones and the result `folders`' recorded --method-file plugins that still
    exist): a label whose method is not found is not marked."""
    files = {file for folder in folders for file in _recorded_method_files(folder) if Path(file).is_file()}
    names = {text: name for text in labels if (name := _method_name(text))}
    try:
        specs = registry.discover(tuple(sorted(files)), only=tuple(sorted(set(names.values()))))
    except registry.RegistryError:  # a plugin file broken since the run: the built-in methods only
        specs = registry.discover(only=tuple(sorted(set(names.values()))))
    return tuple(text for text, name in names.items() if name in specs and issubclass(specs[name].load(), Oracle))


def _method_name(text: str) -> str | None:
    try:
        return registry.parse_method_argument(text)[0]
    except registry.RegistryError:
        return None


def _recorded_method_files(folder: Path) -> list[str]:
    try:
        return read_sweep_file(folder).get("method_files") or []
    except SweepFileError:  # rows without a sweep record (copied parts): the built-in methods only
        return []


def fd_methods(specs) -> tuple[str, ...]:
    """Labels of the methods that fit finite-difference derivatives (`Method.uses_finite_differences`)."""
    return tuple(spec.label for spec in specs if getattr(spec.load(), "uses_finite_differences", False))

