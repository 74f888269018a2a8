"""Running work in a child process under a hard deadline, and reporting failures in one line.

Used by the harness's warm workers (`bench.workers`: kill a whole process group at a task's
deadline) and by the baselines' per-hyperparameter runs (`baselines.fd.TimeLimited`: one fork
per fit). A deadline is enforced by killing, never by signals inside the worker, so methods
that use threads or catch signals behave normally.
"""
from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import traceback
from typing import Any, Callable


class Deadline(RuntimeError):
    """The child did not answer within its deadline and was killed."""


def one_line(err: BaseException) -> str:
    """`Type: first line of the message`: how a failure is recorded in a row's reason."""
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}".strip().rstrip(":")


def die_with_parent() -> None:
    """Ask Linux to kill this process when its parent dies (PR_SET_PDEATHSIG); no-op elsewhere."""
    try:
        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def kill_group(process) -> None:
    """SIGKILL the process group led by `process` (its own children die too), then reap it."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
    process.join()


def call_with_deadline(fn: Callable[..., Any], args: tuple, seconds: float, start_method: str = "fork") -> Any:
    """`fn(*args)` in a child process, killed after `seconds`; returns its (picklable) result.

    Raises `Deadline` when it overruns, RuntimeError (one line) when it fails or dies. The child
    dies with its parent and stays in the parent's process group, so killing the caller's group
    kills it too. Fork starts in milliseconds and sees the parent's imports.
    """
    ctx = multiprocessing.get_context(start_method)
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_call_in_child, args=(send, fn, args), daemon=False)
    child.start()
    send.close()
    try:
        message = receive.recv() if receive.poll(seconds) else None
    except EOFError:  # the child died without answering
        message = ("error", f"child process died (exit code {child.exitcode})")
    finally:
        if child.is_alive():
            child.kill()
        child.join()
        receive.close()
    if message is None:
        raise Deadline(f"exceeded its {seconds:g} s limit; killed")
    status, value = message
    if status != "ok":
        raise RuntimeError(value)
    return value


def _call_in_child(conn, fn, args) -> None:
    die_with_parent()
    try:
        conn.send(("ok", fn(*args)))
    except BaseException as err:  # noqa: BLE001 - everything, including SystemExit (ffx), is reported
        lines = str(err).strip().splitlines()
        conn.send(("error", f"{type(err).__name__}: {lines[0] if lines else ''}"
                            + ("" if lines else " " + traceback.format_exc(limit=-1).strip().splitlines()[-1])))
    finally:
        conn.close()
