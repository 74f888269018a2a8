"""Warm worker processes that run one (method, task) at a time under a hard deadline.

The driver never runs method code. Each worker is a child process in its own process group;
it loads a method once (`setup`) and keeps it for later tasks. The supervising thread waits
on a pipe with a deadline and, when it passes, kills the worker's whole process group (so the
method's own child processes die too) and starts a fresh worker. No signals are used inside
the method's process, so methods that use threads or catch signals behave normally.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import time
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path

from bench.method import Budget, InvalidInput, Observations, Oracle, OutOfTime, Prediction
from bench.registry import MethodSpec
from odecore.expressions import ExpressionError, parse, to_string
from odecore.processes import Child, ChildDied, Deadline, one_line, when_orphaned

SETUP_TIME_LIMIT = 900.0  # seconds for a method's one-off setup (imports, model loading)
MAX_WARNINGS = 5  # distinct warning messages kept in a row
OUTPUT_KEPT = 2000  # characters of what a method printed kept in its row


@dataclass(frozen=True)
class Job:
    """All a worker receives: which method, the observations, the budget. The ground truth
    travels only to an `Oracle` (`truth`, filled by the runner for oracles and None otherwise)."""

    spec: MethodSpec
    observations: Observations
    budget: Budget
    truth: str | None = None

    @property
    def time_limit(self) -> float:
        return self.budget.time_limit


def _serve(conn, memory_limit: int | None, log: str) -> None:
    """Worker main loop: receive a Job, send back the prediction. When the driver is gone (the
    pipe is closed) it exits quietly: an orphaned worker has nobody to report to. What the
    method prints (Python or C, stdout or stderr) goes to the file `log`, not the terminal."""
    os.setsid()
    sys.argv = sys.argv[:1]  # spawn hands down the driver's command line, and with it the sweep's --noise
    when_orphaned(lambda: os.killpg(0, signal.SIGKILL))  # a driver gone: the method's own children go too
    out = os.open(log, os.O_WRONLY | os.O_APPEND)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(out)
    if memory_limit:
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    methods = {}
    try:
        while True:
            job = conn.recv()
            if job is None:
                return
            for message in _run_job(job, methods):
                sys.stdout.flush()
                sys.stderr.flush()
                conn.send(message)
    except (EOFError, BrokenPipeError, ConnectionResetError, KeyboardInterrupt):
        os._exit(0)


def _run_job(job: Job, methods: dict):
    """The messages of one job: "started" (after setup), then the prediction or the failure.
    Warnings raised by the method (setup or run) are recorded in the row, never printed."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            key = (job.spec.file, job.spec.entry_point, job.spec.label)  # parameter values may be unhashable
            if key not in methods:
                start = time.perf_counter()
                method = job.spec.instantiate()
                method.setup()
                methods[key] = method
                setup_time = time.perf_counter() - start
            else:
                setup_time = 0.0
            method = methods[key]
            yield {"phase": "started", "setup_time": setup_time}
            if isinstance(method, Oracle):
                method.receive_truth(job.truth)
            start = time.perf_counter()
            prediction = method.run(job.observations, job.budget)
            fit_time = time.perf_counter() - start
        except InvalidInput as err:
            yield {"phase": "prediction", "status": "error", "reason": f"bad input: {err}",
                   "warnings": _warning_summary(caught)}
            return
        except OutOfTime as err:
            yield {"phase": "prediction", "status": "timeout", "reason": str(err), "warnings": _warning_summary(caught)}
            return
        except (Exception, SystemExit, KeyboardInterrupt) as err:  # sys.exit inside a library (ffx) fails the
            # task, not the worker; so does a KeyboardInterrupt, which only the method can raise (workers ignore Ctrl-C)
            yield {"phase": "prediction", "status": "error", "reason": one_line(err),
                   "traceback": traceback.format_exc(limit=-3), "warnings": _warning_summary(caught)}
            return
    row = _check_prediction(prediction)
    row.update(phase="prediction", fit_time=fit_time, warnings=_warning_summary(caught))
    yield row


def _warning_summary(caught: list) -> str:
    """Warnings raised inside the method, recorded in the row instead of printed (JSON list of
    up to MAX_WARNINGS distinct `Category: message` lines)."""
    lines = list(dict.fromkeys(f"{w.category.__name__}: {str(w.message).splitlines()[0] if str(w.message) else ''}"
                               for w in caught))
    more = [f"... and {len(lines) - MAX_WARNINGS} other distinct warnings"] if len(lines) > MAX_WARNINGS else []
    return json.dumps(lines[:MAX_WARNINGS] + more)


def _check_prediction(prediction) -> dict:
    """Accept only a Prediction whose expression parses; keep its candidates and metadata as JSON."""
    if not isinstance(prediction, Prediction):
        return {"status": "invalid", "reason": f"method returned {type(prediction).__name__}, not a Prediction"}
    try:
        expression = to_string(parse(prediction.expression))
    except Exception as err:  # noqa: BLE001 - ExpressionError, or sympy failing on a law it accepted
        why = str(err) if isinstance(err, ExpressionError) else one_line(err)
        return {"status": "invalid", "reason": f"prediction {str(prediction.expression)[:80]!r}: {why}",
                "expression": str(prediction.expression)[:1000]}
    try:
        metadata = json.dumps(prediction.metadata, default=str)
    except (TypeError, ValueError):
        metadata = json.dumps({"unserialisable": True})
    return {"status": "ok", "reason": "", "expression": expression,
            "candidates": json.dumps(list(prediction.candidates)), "metadata": metadata}


def setup_overran(result: dict) -> bool:
    """Whether a job's result says the method's setup overran SETUP_TIME_LIMIT: executors then
    stop trying it, so a hanging setup costs its limit once, not once per task."""
    return result.get("status") == "timeout" and result.get("reason", "").startswith("setup")


def not_tried_again(overran: dict) -> dict:
    """The result of a job skipped because its method's setup overran on an earlier task."""
    return {"status": "timeout", "reason": f"{overran['reason']} on an earlier task; not tried again"}


class Worker:
    """One warm child process (`odecore.processes.Child`, spawned, in its own process group)."""

    def __init__(self, memory_limit: int | None = None):
        handle, name = tempfile.mkstemp(prefix="bench-worker-", suffix=".log")
        os.close(handle)
        self.log = Path(name)
        self.child = Child(_serve, (memory_limit, name), start_method="spawn", shield=True)
        self.memory_limit = memory_limit

    def execute(self, job: Job) -> dict:
        """The worker's result fields for `job` (prediction or failure; never scores: the driver
        scores), with the end of what the method printed; kills this worker if the job overruns
        (check `alive`)."""
        os.truncate(self.log, 0)
        self.child.send(job)
        started = self._receive(SETUP_TIME_LIMIT, "setup")
        if "status" not in started:
            prediction = self._receive(job.time_limit, "fit")
            prediction["setup_time"] = started["setup_time"]
            started = prediction
        printed = self._printed()
        if printed:
            started["output"] = printed
        return started

    def _printed(self) -> str:
        """The last OUTPUT_KEPT characters the method printed during the job."""
        with open(self.log, "rb") as log:
            log.seek(max(0, os.fstat(log.fileno()).st_size - OUTPUT_KEPT))
            return log.read().decode(errors="replace")

    def _receive(self, timeout: float, stage: str) -> dict:
        try:
            message = self.child.receive(timeout)
        except Deadline:
            return {"status": "timeout", "reason": f"{stage} exceeded its {timeout:g} s limit; killed"}
        except ChildDied as err:
            code = err.exitcode
            why = f"killed by signal {-code}" if code and code < 0 else f"exit code {code}"
            hint = " (out of memory?)" if code == -signal.SIGKILL else ""
            last = [line for line in self._printed().splitlines() if line.strip()][-1:]
            said = f"; it last printed: {last[0].strip()[:200]}" if last else ""
            return {"status": "error", "reason": f"worker process died during {stage}: {why}{hint}{said}"}
        message.pop("phase", None)
        message.pop("traceback", None)
        return message

    @property
    def alive(self) -> bool:
        return self.child.alive

    def kill(self) -> None:
        self.child.kill()
        self.log.unlink(missing_ok=True)

    def close(self, grace: float = 2.0) -> None:
        """Ask the worker to exit; kill it if it is still busy after `grace` seconds."""
        self.child.close(grace)
        self.log.unlink(missing_ok=True)
