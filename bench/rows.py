"""The one schema of a result row, and the one function that builds a row.

A row is one (method, task): its key, what is known about the task, what the method's worker
reported (prediction or failure), and the scores the driver computed. The store, the runner,
the scoring and the reports all read their column names from here.
"""
from __future__ import annotations

import json

from odecore.metrics import METRICS

KEY = ("dataset", "equation_id", "y0_index", "noise", "n", "seed", "method")
TASK_FIELDS = ("method_version", "truth_expression", "truth_kind", "truth_complexity", "y0", "n_observed",
               "time_limit", "record")
RESULT_FIELDS = ("status", "reason", "expression", "candidates", "metadata", "fit_time", "setup_time", "warnings",
                 "output")
SCORE_FIELDS = ("score_status", "score_reason", "complexity", "skeleton",
                *(f"{metric}_{part}" for part in ("interp", "extrap") for metric in METRICS))
COLUMNS = (*KEY, *TASK_FIELDS, *RESULT_FIELDS, *SCORE_FIELDS, "finished_at")
EXTRAP_DIVERGED = "diverged-extrap"  # score_status of a prediction that fails only after T (bench.scoring)
# stored types, the same in every part whatever its rows hold (a part of timeouts alone has no
# expressions, and would otherwise store them as nulls that no other part's text can join)
TEXT_COLUMNS = ("dataset", "equation_id", "method", "method_version", "truth_expression", "truth_kind", "status",
                "reason", "expression", "candidates", "metadata", "warnings", "output", "score_status", "score_reason",
                "record")
WHOLE_COLUMNS = ("y0_index", "n", "seed", "n_observed")
NUMBER_COLUMNS = tuple(c for c in COLUMNS if c not in TEXT_COLUMNS and c not in WHOLE_COLUMNS)


def stored_types(frame):
    """`frame` with every known column in its stored type: text, whole numbers, or float64."""
    types = {**dict.fromkeys(TEXT_COLUMNS, "str"), **dict.fromkeys(WHOLE_COLUMNS, "int64"),
             **dict.fromkeys(NUMBER_COLUMNS, "float64")}
    return frame.astype({column: kind for column, kind in types.items() if column in frame})


def make_row(task, method: str, version: str, time_limit: float, result: dict, scores: dict | None = None) -> dict:
    """The row of `method` on `task`: the worker's `result` fields and the driver's `scores`."""
    trajectory = task.trajectory
    row = dict(zip(KEY, (*task.key, method)))
    row.update(
        method_version=version,
        truth_expression=trajectory.expression,
        truth_kind="solution" if trajectory.has_truth else "observations",
        truth_complexity=trajectory.complexity,
        y0=trajectory.y0,
        n_observed=min(task.n, len(trajectory.t)),
        time_limit=time_limit,
        record=trajectory.record,
    )
    row.update({k: result.get(k) for k in RESULT_FIELDS})
    row.update({k: (scores or {}).get(k) for k in SCORE_FIELDS})
    return row


def cut_by_time(status, metadata) -> bool:
    """Whether a row's result depends on its time limit: the task timed out, or a run stopped at
    its own time limit. A longer limit could change such a result."""
    return status == "timeout" or runs_stopped_by_time(metadata)


DASK_FAILED = "dask task failed"  # a row's reason where Dask, not the method, gave no answer


def lost_with_its_workers(status, reason) -> bool:
    """Whether a row records a task whose every Dask worker died under it (KilledWorker: machines
    lost, preempted), a failure of the cluster rather than of the method: a resume runs it again."""
    return status == "error" and str(reason).startswith(f"{DASK_FAILED}: KilledWorker")


def runs_stopped_by_time(metadata) -> bool:
    """Whether a row's metadata (JSON text) records a run that stopped at its own time limit
    (`runs_stopped_by_time`) before its counted budget was spent."""
    try:
        return bool(json.loads(metadata).get("runs_stopped_by_time", 0))
    except (TypeError, ValueError, AttributeError):
        return False

# the numeric columns the reports summarise (medians, quartiles), in the tables' order
METRIC_COLUMNS = (*(f"{metric}_{part}" for metric in METRICS for part in ("interp", "extrap")), "complexity",
                  "fit_time")
