"""Warm worker processes that run one (method, task) at a time under a hard deadline.

The driver never runs method code. Each worker is a child process in its own process group;
it loads a method once (`setup`) and keeps it for later tasks. The supervising thread waits
on a pipe with a deadline and, when it passes, kills the worker's whole process group (so the
method's own child processes die too) and starts a fresh worker. No signals are used inside
the method's process, so methods that use threads or catch signals behave normally.
"""
from __future__ import annotations

import json
import multiprocessing
import os
import signal
import time
import traceback
from dataclasses import dataclass

from core.expressions import ExpressionError, parse, to_string
from bench.method import Budget, InvalidInput, Prediction
from bench.registry import MethodSpec
from bench.scoring import score
from bench.tasks import Task
from core.processes import kill_group, one_line

SETUP_TIME_LIMIT = 900.0  # seconds for a method's one-off setup (imports, model loading)
SCORE_TIME_LIMIT = 120.0  # seconds for scoring a prediction (its solves have their own limits)


@dataclass(frozen=True)
class Job:
    spec: MethodSpec
    task: Task
    time_limit: float


def _serve(conn, memory_limit: int | None) -> None:
    """Worker main loop: receive a Job, send back the prediction, then its scores."""
    os.setsid()
    if memory_limit:
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    methods = {}
    while True:
        job = conn.recv()
        if job is None:
            return
        try:
            if job.spec not in methods:
                start = time.perf_counter()
                method = job.spec.load()()
                method.setup()
                methods[job.spec] = (method, time.perf_counter() - start)
                setup_time = methods[job.spec][1]
            else:
                setup_time = 0.0
            method, _ = methods[job.spec]
            conn.send({"phase": "started", "setup_time": setup_time})
            observations = job.task.observations(with_truth=method.oracle)
            start = time.perf_counter()
            prediction = method.run(observations, Budget(time_limit=job.time_limit, seed=job.task.seed))
            fit_time = time.perf_counter() - start
        except InvalidInput as err:
            conn.send({"phase": "prediction", "status": "error", "reason": f"bad input: {err}"})
            continue
        except Exception as err:
            conn.send({"phase": "prediction", "status": "error", "reason": one_line(err),
                       "traceback": traceback.format_exc(limit=-3)})
            continue
        row = _check_prediction(prediction)
        row.update(phase="prediction", fit_time=fit_time)
        conn.send(row)
        if row["status"] == "ok":
            conn.send({"phase": "scores", **score(row["expression"], job.task.trajectory).as_row()})


def _check_prediction(prediction) -> dict:
    """Accept only a Prediction whose expression parses; keep its candidates and metadata as JSON."""
    if not isinstance(prediction, Prediction):
        return {"status": "invalid", "reason": f"method returned {type(prediction).__name__}, not a Prediction"}
    try:
        expression = to_string(parse(prediction.expression))
    except ExpressionError as err:
        return {"status": "invalid", "reason": f"prediction {str(prediction.expression)[:80]!r}: {err}",
                "expression": str(prediction.expression)[:1000]}
    try:
        metadata = json.dumps(prediction.metadata, default=str)
    except (TypeError, ValueError):
        metadata = json.dumps({"unserialisable": True})
    return {"status": "ok", "reason": "", "expression": expression,
            "candidates": json.dumps([str(c) for c in prediction.candidates]), "metadata": metadata}


class Worker:
    """One warm child process and the pipe to it."""

    def __init__(self, memory_limit: int | None = None):
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_serve, args=(child, memory_limit), daemon=False)
        self.process.start()
        child.close()
        self.memory_limit = memory_limit

    def execute(self, job: Job) -> dict:
        """The result row fields for `job`; kills this worker if the job overruns (check `alive`)."""
        self.conn.send(job)
        started = self._receive(SETUP_TIME_LIMIT, "setup")
        if "status" in started:
            return started
        prediction = self._receive(job.time_limit, "fit")
        prediction["setup_time"] = started["setup_time"]
        if prediction.get("status") != "ok":
            return prediction
        scores = self._receive(SCORE_TIME_LIMIT, "scoring")
        if "status" in scores:  # the worker died or hung while scoring
            scores = {"score_status": "error", "score_reason": scores["reason"]}
        return {**prediction, **scores}

    def _receive(self, timeout: float, stage: str) -> dict:
        try:
            if self.conn.poll(timeout):
                message = self.conn.recv()
                message.pop("phase", None)
                message.pop("traceback", None)
                return message
        except (EOFError, OSError):  # the worker closed its end: it is exiting
            self.process.join(timeout=5)
        if self.process.is_alive():
            self.kill()
            return {"status": "timeout", "reason": f"{stage} exceeded its {timeout:g} s limit; killed"}
        self.process.join()
        code = self.process.exitcode
        why = f"killed by signal {-code}" if code and code < 0 else f"exit code {code}"
        hint = " (out of memory?)" if code == -signal.SIGKILL else ""
        return {"status": "error", "reason": f"worker process died during {stage}: {why}{hint}"}

    @property
    def alive(self) -> bool:
        return self.process.is_alive()

    def kill(self) -> None:
        kill_group(self.process)

    def close(self, grace: float = 2.0) -> None:
        """Ask the worker to exit; kill it if it is still busy after `grace` seconds."""
        if self.alive:
            try:
                self.conn.send(None)
                self.process.join(timeout=grace)
            except (BrokenPipeError, OSError):
                pass
        if self.alive:
            self.kill()
