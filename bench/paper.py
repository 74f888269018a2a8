"""`python -m bench paper`: run (or resume) the paper's sweep, then write every figure and table
into one folder with an index page (`index.md`).

The grid comes from a YAML config (configs/paper.yaml); its `quick:` block overrides the grid
for a smoke test. Datasets that do not exist yet (`large` before the data generator has written
it) are skipped with a message rather than failing the whole run.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import yaml

from bench import claims, datasets, registry, report, reproduction, runner
from bench.store import ResultStore
from odecore import protocol, shipped
from odecore.arguments import close_matches, positive_number, relative_noise, whole_number
from odecore.trajectories import TY

class ConfigError(ValueError):
    """A paper config that cannot be used; the message names the file and the problem."""


def load_config(path: str | Path, quick: bool = False) -> dict:
    """The sweep's settings from a YAML file, or from a shipped config's name (`cpu`, `paper`),
    checked: a one-line ConfigError names what is wrong."""
    path = shipped.by_name(path, shipped.folder("configs"), ".yaml")
    if not path.exists():
        raise ConfigError(shipped.no_such_config(path, shipped.folder("configs")))
    try:
        config = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as err:  # yaml's messages span lines: one line here
        raise ConfigError(f"{path}: not a readable YAML config ({' '.join(str(err).split())})") from None
    if not isinstance(config, dict):
        raise ConfigError(f"{path}: expected a mapping of settings")
    if isinstance(config.get("quick"), dict):
        _check_keys(path, config["quick"], SETTINGS, "setting(s) in quick:")
    if quick:
        if not isinstance(config.get("quick"), dict):
            raise ConfigError(f"{path}: --quick needs a 'quick:' block")
        config = {**config, **config["quick"]}
    missing = [k for k in ("out", "datasets", "noise", "n", "methods", "seeds") if k not in config]
    if missing:
        raise ConfigError(f"{path}: missing setting(s) {', '.join(missing)}")
    _check_keys(path, config, SETTINGS, "setting(s)")
    _check_figures(path, config)
    return config


SETTINGS = ("name", "out", "datasets", "noise", "n", "methods", "seeds", "time_limit", "time_limits", "subset",
            "columns", "by", "figures", "quick", "note")
FIGURES = {"main": ("dataset", "n"), "by_dataset": ("n",)}


def _check_keys(path, mapping: dict, known, what: str) -> None:
    """A misspelt key would otherwise be ignored without a word (time_limt: 5 runs with no limit)."""
    unknown = [str(key) for key in mapping if key not in known]
    if unknown:
        raise ConfigError(f"{path}: unknown {what} {', '.join(unknown)}{close_matches(unknown, known)}; "
                          f"known: {', '.join(known)}")


def figure_settings(figures: dict | None, name: str) -> dict:
    """One figure's settings from a config's `figures` block; {} where the block or its entry is
    absent or left empty (`main:` with nothing after it reads as None)."""
    return (figures or {}).get(name) or {}


def _check_figures(path, config: dict) -> None:
    """The figures block names figures the report draws, and a dataset the sweep runs."""
    figures = config.get("figures") or {}
    if not isinstance(figures, dict):
        raise ConfigError(f"{path}: 'figures' must be a mapping, e.g. figures: {{main: {{dataset: classic, n: 192}}}}")
    _check_keys(path, figures, FIGURES, "figure(s)")
    for name, keys in FIGURES.items():
        block = figure_settings(figures, name)
        if not isinstance(block, dict):
            raise ConfigError(f"{path}: 'figures: {name}' must be a mapping of {', '.join(keys)}")
        _check_keys(path, block, keys, f"key(s) in figures: {name}:")
    dataset = figure_settings(figures, "main").get("dataset")
    if dataset is not None and isinstance(config["datasets"], list) and dataset not in config["datasets"]:
        raise ConfigError(f"{path}: figures: main: dataset {dataset!r} is not among the datasets "
                          f"({', '.join(map(str, config['datasets']))})")
    sizes = config["n"] if isinstance(config["n"], list) else [config["n"]]
    for name in FIGURES:  # one sample size each: a list, or one the grid lacks, would fail after the sweep
        n = figure_settings(figures, name).get("n")
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n not in sizes):
            raise ConfigError(f"{path}: figures: {name}: n {n!r} is not one of the sweep's sample sizes "
                              f"({', '.join(map(str, sizes))})")


def sweep_from_config(config: dict, quick: bool, jobs: int, backend: str, scheduler: str | None,
                      method_files: tuple[str, ...] = ()) -> runner.Sweep:
    names = []
    for name in _names(config, "datasets", "[textbook, classic]"):
        try:
            datasets.resolve(name)
            names.append(name)
        except datasets.DatasetError as err:
            if name not in datasets.GENERATED_LATER:  # a typo or a missing file, not data still to generate
                raise ConfigError(f"'datasets': {err}") from None
            print(f"skipping dataset {name}: {err}")
    if not names:
        raise ConfigError("none of the config's datasets exists here")
    if config["methods"] == "all":
        specs = registry.discover(tuple(method_files))
        chosen = [s for s in specs.values() if registry.unavailable_reason(s) is None]
    else:
        wanted = _names(config, "methods", "[truth, sindy] or all")
        specs = registry.discover(tuple(method_files), tuple(wanted))
        known = [n for n in wanted if registry.parse_method_argument(n)[0] in specs] if quick else wanted
        for name in sorted(set(wanted) - set(known)):  # --quick runs what it can, and says what it cannot
            print(f"skipping method {name}: no method of that name{close_matches([name], specs)}")
        chosen = []
        for spec in registry.select(known, specs):
            reason = registry.unavailable_reason(spec)
            if reason:
                print(f"skipping method {spec.name}: {reason}")
            else:
                chosen.append(spec)
    if not chosen:
        raise ConfigError("none of the config's methods is available here (see `python -m bench list`)")
    named = set(specs) if config["methods"] == "all" else set(wanted)
    named |= {spec.label for spec in chosen} | {spec.name for spec in chosen}
    stray = sorted(set(_mapping(config, "time_limits", float)) - named)
    if stray:  # a misspelt name, or a method dropped from the list: say so, as for a skipped method
        print(f"ignoring time_limits for {', '.join(stray)}: not among the config's methods")
    subset = _mapping(config, "subset", _count)
    unknown = sorted(set(subset) - set(map(str, config["datasets"])))
    if unknown:  # a misspelt name would run the whole dataset, at many times the cost asked for
        raise ConfigError(f"'subset' names {', '.join(map(repr, unknown))}, not among the datasets "
                          f"({', '.join(map(str, config['datasets']))}){close_matches(unknown, config['datasets'])}")
    out = config["out"]
    if not isinstance(out, str) or not out.strip():
        raise ConfigError(f"'out' must be a folder, e.g. out: results/paper (got {out!r})")
    return runner.Sweep(datasets=tuple(names), methods=tuple(chosen), noise=_grid(config, "noise", relative_noise),
                        n=_grid(config, "n", whole_number(protocol.MIN_POINTS)),
                        seeds=_grid(config, "seeds", whole_number(0)), jobs=jobs,
                        time_limit=_limit(config.get("time_limit"), "time_limit"),
                        time_limits={name: _limit(value, f"time_limits: {name}")
                                     for name, value in _mapping(config, "time_limits", float).items()},
                        subset={name: count for name, count in subset.items() if name in names},  # not skipped ones
                        out=out,
                        method_files=tuple(method_files), backend=backend, scheduler=scheduler,
                        columns=_columns(config), by=_by(config))


def _grid(config: dict, key: str, kind) -> tuple:
    """A list setting of the sweep's grid (`noise`, `n`, `seeds`), each value checked as the
    `bench run` option of the same name checks it."""
    values = config[key]
    if not isinstance(values, list) or not values:
        raise ConfigError(f"'{key}' must be a list, e.g. {key}: [{'0, 0.01' if key == 'noise' else '128, 256'}]")
    out, whole = [], kind is not relative_noise
    for value in values:
        if whole and isinstance(value, float) and not value.is_integer():
            raise ConfigError(f"'{key}': {value!r} is not a whole number")
        try:
            out.append(kind(str(int(value)) if whole and isinstance(value, float) else str(value)))
        except argparse.ArgumentTypeError as err:
            raise ConfigError(f"'{key}': {err}") from None
    return tuple(out)


def _names(config: dict, key: str, example: str) -> list[str]:
    """A list setting of names (`datasets`, `methods`)."""
    values = config[key]
    if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
        raise ConfigError(f"'{key}' must be a list of names, e.g. {key}: {example} (got {values!r})")
    return values


def _columns(config: dict) -> tuple[str, str]:
    """The columns CSV datasets are read from (`bench run --columns`): t and y unless given."""
    value = config.get("columns", list(TY))
    if not isinstance(value, list) or len(value) != 2 or not all(isinstance(v, str) and v.strip() for v in value):
        raise ConfigError(f"'columns' must name a CSV file's time and value columns, e.g. columns: [hours, od600] "
                          f"(got {value!r})")
    return tuple(value)


def _by(config: dict) -> str | None:
    """The column that tells several records in a CSV file apart (`bench run --by`), or None."""
    value = config.get("by")
    if value is not None and not (isinstance(value, str) and value.strip()):
        raise ConfigError(f"'by' must name the column that tells a CSV file's records apart, e.g. by: well "
                          f"(got {value!r})")
    return value


def _limit(value, key: str) -> float | None:
    """A task time limit of the config: none, or seconds as `bench run --time-limit` checks them."""
    if value is None:
        return None
    try:
        return positive_number(str(value))
    except argparse.ArgumentTypeError as err:
        raise ConfigError(f"'{key}' must be a number of seconds above 0 ({err})") from None


def _count(value) -> int:
    """A subset's size: a whole number of at least 1 trajectory."""
    if isinstance(value, bool) or int(value) != value or value < 1:
        raise ValueError(value)
    return int(value)


def _mapping(config: dict, key: str, kind) -> dict:
    """A config setting of the form {name: number} (`time_limits`, `subset`); empty when absent."""
    value = config.get(key) or {}
    if not isinstance(value, dict):
        raise ConfigError(f"'{key}' must map names to numbers, e.g. {key}: {{classic: 24}}")
    try:
        return {str(name): kind(number) for name, number in value.items()}
    except (TypeError, ValueError, OverflowError):  # OverflowError: int(.inf)
        what = "whole numbers of at least 1" if kind is _count else "numbers"
        raise ConfigError(f"'{key}' must map names to {what}, got {value}") from None


def write_outputs(rows, folder: Path, figures: dict | None = None, data_folder=None, claims_report: str | None = None,
                  oracles=()) -> Path:
    """Every table and figure of `rows` into `folder` (`oracles` marked in the leaderboards), and
    index.md listing them (and linking `claims_report`, the reproduction report's file name, when
    given); returns the index."""
    from bench import plots

    main = figure_settings(figures, "main")
    tables = report.write(rows, folder, oracles)
    drawn = plots.draw_all(rows, folder, dataset=main.get("dataset", protocol.MAIN_FIGURE["dataset"]),
                           n_main=main.get("n", protocol.MAIN_FIGURE["n"]),
                           n_datasets=figure_settings(figures, "by_dataset").get("n", protocol.DATASET_FIGURE_N),
                           data_folder=data_folder)
    lines = ["# Benchmark results", "",
             f"{len(rows)} stored rows; {rows['method'].nunique()} methods; datasets: "
             f"{', '.join(sorted(rows['dataset'].unique()))}. Failed tasks count as R^2 = -inf in every median.", ""]
    if claims_report:
        lines += [f"The paper's claims checked against these results: [{claims_report}]({claims_report}), with "
                  "[claims.csv](claims.csv), the [leaderboard](leaderboard.csv) (per dataset: "
                  "[leaderboard_by_dataset.md](leaderboard_by_dataset.md)) and [method_times.csv](method_times.csv)", ""]
    lines += ["## Figures", ""]
    titles = {"main": "Median R^2, complexity and fit time against noise (paper Figure 3)",
              "solved": "The leaderboard: tasks solved per method, with 95% intervals, and fit time",
              "r2_interp": "Median R^2 per dataset, interpolation (paper Figure 4)",
              "r2_extrap": "Median R^2 per dataset, extrapolation (paper Figure 5)",
              "appendix_interp": "All metrics, every dataset and n, interpolation (appendix)",
              "appendix_extrap": "All metrics, every dataset and n, extrapolation (appendix)",
              "dataset_stats": "Dataset statistics: complexity and operators"}
    for path in drawn:
        if path.suffix == ".png":
            stem = path.stem
            lines += [f"### {titles.get(stem, stem)}", "", f"![{stem}]({path.name})", "",
                      f"[PDF]({stem}.pdf) · [data]({stem}.csv)", ""]
    leaders = folder / reproduction.LEADERS_FIGURE  # drawn by the reproduction report, when two methods compete
    if claims_report and leaders.is_file():
        lines += ["### The two leading methods, task by task (1 - R^2 of one against the other)", "",
                  f"![leaders]({leaders.name})", "", f"[data]({leaders.with_suffix('.csv').name})", ""]
    lines += ["## Tables", ""]
    for key, path in tables.items():
        lines.append(f"- [{path.name}]({path.name}) ({key.replace('_', ' ')})")
    lines += ["", "## Failures", "", report.format_failures_markdown(rows)]
    index = folder / "index.md"
    index.write_text("\n".join(lines) + "\n")
    return index


def run_paper(config_path: str, quick: bool, jobs: int, backend: str, scheduler: str | None,
              progress: bool = True, method_files: tuple[str, ...] = (), data_folder=None,
              command: str | None = None, docs: str | None = None) -> Path:
    """Run or resume the sweep, write figures, tables and REPRODUCTION.md into <out>/figures, and
    copy the report with its tables and main figures into `docs` when given; returns the index."""
    config = load_config(config_path, quick)
    sweep = sweep_from_config(config, quick, jobs, backend, scheduler, method_files)
    tasks = len(runner.build_tasks(sweep)) * len(sweep.methods)
    print(f"paper sweep: {tasks} (method, task) pairs -> {sweep.out}")
    runner.run(sweep, progress=progress)
    rows = runner.sweep_rows(sweep, ResultStore(sweep.out).read())  # the config's grid, whatever else the folder holds
    folder = Path(sweep.out) / "figures"
    folder.mkdir(parents=True, exist_ok=True)
    figures = config.get("figures")
    roles = claims.Roles(fd_methods=reproduction.fd_methods(sweep.methods), oracles=reproduction.oracles(sweep.methods),
                         main_dataset=figure_settings(figures, "main").get("dataset", protocol.MAIN_FIGURE["dataset"]),
                         extrap_n=figure_settings(figures, "by_dataset").get("n", protocol.DATASET_FIGURE_N))
    command = command or f"python -m bench paper --config {config_path}" + (" --quick" if quick else "")
    report_path = reproduction.write(rows, folder, Path(sweep.out), command, roles, config.get("note"))
    index = write_outputs(rows, folder, figures, data_folder, claims_report=reproduction.REPORT,
                          oracles=roles.oracles)
    print(f"reproduction report: {report_path}")
    if docs:
        copied = reproduction.publish(folder, Path(docs))
        print(f"copied {len(copied)} files to {docs}")
    return index
