"""Running work in a child process under a hard deadline, and reporting failures in one line.

One helper, `Child`, serves the harness's warm workers (`bench.workers`: spawned, in their own
process group, killed with it at a task's deadline), the training-data generator's simplifier
(`nsode.data.simplify`: a warm fork under a CPU-time limit) and, through `call_with_deadline`,
the baselines' per-hyperparameter runs (`odebaselines.fd.TimeLimited`: one fork per fit). A
deadline is enforced by killing, never by signals inside the child, so methods that use
threads or catch signals behave normally.
"""
from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import threading
import time
import traceback
from typing import Any, Callable


WALL_FACTOR = 5  # wall-clock safety net of a CPU-time deadline: this many times the limit
POLL_SECONDS = 0.005  # how often a CPU-time deadline is checked


class Deadline(RuntimeError):
    """The child did not answer within its deadline and was killed."""


def one_line(err: BaseException) -> str:
    """`Type: first line of the message`: how a failure is recorded in a row's reason."""
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}".strip().rstrip(":")


def die_with_parent() -> None:
    """What a forked child does first. Ask Linux to kill it when its parent dies (PR_SET_PDEATHSIG;
    no-op elsewhere), and let SIGTERM stop it plainly: a parent's `terminated_as_interrupt`
    handler, inherited through fork, made the child print a traceback when the parent stopped it."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def when_orphaned(act: Callable[[], Any], every: float = 1.0) -> None:
    """Call `act` (from a daemon thread) once this process's parent is gone: a worker notices a closed
    pipe only when it next reads it, which one stuck in a long job never does, and a SIGKILLed parent
    stops nobody. (PR_SET_PDEATHSIG fires when the parent's *thread* that started this process ends,
    which for pool workers is not when the parent does.)"""
    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(every)
        act()

    threading.Thread(target=watch, name="orphan-watch", daemon=True).start()


@contextlib.contextmanager
def signal_handled(signum: int, handler):
    """`handler` answers `signum` inside the block, and the caller's own handler comes back after
    it (a notebook, a test process). Outside the main thread (where handlers cannot change) it
    does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signum, handler)
    try:
        yield
    finally:
        signal.signal(signum, before)


class Terminated(KeyboardInterrupt):
    """SIGTERM (`kill`, `timeout`, a scheduler's preemption), raised where the main thread is, so that
    a long command saves its work and stops its children as on Ctrl-C."""


def _raise_terminated(signum, frame):
    raise Terminated()


def terminated_as_interrupt():
    """SIGTERM stops the block as Ctrl-C does (`Terminated`, a KeyboardInterrupt), not silently."""
    return signal_handled(signal.SIGTERM, _raise_terminated)


def interrupts_ignored():
    """Ctrl-C ignored for a block. While a child is started: a spawned Python keeps SIGINT ignored
    when it starts with it ignored, so Ctrl-C reaches only the parent, which stops its children
    itself (otherwise a child still importing prints its own KeyboardInterrupt traceback). While
    a parent stops its children: a second Ctrl-C must not cut that short and leave them running."""
    return signal_handled(signal.SIGINT, signal.SIG_IGN)


def kill_group(process) -> None:
    """SIGKILL the process group led by `process` (its own children die too), then reap it."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
    process.join()


class ChildDied(RuntimeError):
    """The child exited without answering; `exitcode` says how (negative: killed by a signal)."""

    def __init__(self, exitcode: int | None):
        super().__init__(f"child process died (exit code {exitcode})")
        self.exitcode = exitcode


class Child:
    """A child process that answers over a pipe, each answer awaited under a deadline.

    `target(conn, *args)` runs in the child; it may serve one request or loop over many (a warm
    child keeps its imports and loaded models). The deadline is wall-clock seconds, or with
    `cpu=True` the child's CPU seconds (so a busy machine does not change which requests time
    out), with WALL_FACTOR x the limit in wall clock as a safety net. At the deadline the child
    is killed, with its process group when it leads one (`kill_group`); start a new one after.
    With `shield` a spawned child ignores Ctrl-C (`interrupts_ignored`): its parent stops it.
    """

    def __init__(self, target: Callable, args: tuple = (), start_method: str = "fork", daemon: bool = False,
                 shield: bool = False):
        ctx = multiprocessing.get_context(start_method)
        self.conn, child_end = ctx.Pipe()
        self.process = ctx.Process(target=target, args=(child_end, *args), daemon=daemon)
        with interrupts_ignored() if shield else contextlib.nullcontext():
            self.process.start()
        child_end.close()
        self._clock = None
        self._led_group = False  # seen leading its own process group: close() kills the group

    @property
    def alive(self) -> bool:
        return self.process.is_alive()

    def send(self, message: Any) -> None:
        self.conn.send(message)

    def receive(self, seconds: float, cpu: bool = False) -> Any:
        """The child's next message; raises `Deadline` (child killed) or `ChildDied`."""
        try:
            if self._answered(seconds, cpu):
                message = self.conn.recv()
                self._led_group = self._led_group or self._leads_group()  # seen before it can exit
                return message
        except (EOFError, OSError):  # the child closed its end: it is exiting
            self.process.join(timeout=5)
        if not self._exited():
            self.kill()
            raise Deadline(f"exceeded its {seconds:g} s limit; killed")
        self.process.join()
        for _ in range(100):  # reaped by another thread (below): its exit code is being stored
            if self.process.exitcode is not None:
                break
            time.sleep(0.01)
        raise ChildDied(self.process.exitcode)

    def _exited(self) -> bool:
        """Whether the child has exited. `Process.start()` in another thread reaps every finished
        child (multiprocessing's cleanup), and until it stores the exit code `is_alive()` reads
        true; the child's sentinel tells its exit whoever reaped it."""
        from multiprocessing.connection import wait

        return not self.process.is_alive() or bool(wait([self.process.sentinel], timeout=0))

    def _answered(self, seconds: float, cpu: bool) -> bool:
        if not cpu:
            return self.conn.poll(seconds)
        import psutil

        self._clock = self._clock or psutil.Process(self.process.pid)
        start, wall_deadline = _cpu_seconds(self._clock), time.monotonic() + WALL_FACTOR * seconds
        while not self.conn.poll(POLL_SECONDS):
            try:
                over = _cpu_seconds(self._clock) - start > seconds or time.monotonic() > wall_deadline
            except psutil.NoSuchProcess:
                return False
            if over or not self.process.is_alive():
                return False
        return True

    def kill(self) -> None:
        kill_group(self.process)

    def close(self, grace: float = 0.0) -> None:
        """Kill the child; with `grace`, first send None (please exit) and wait that long. A child
        that leads its own process group takes the group with it, even when it exited by itself
        (a method's background children must not outlive the sweep): whether it leads one is read
        when it answers, as a child that has exited can no longer be asked."""
        leads = self._led_group or self._leads_group()
        if grace and self.alive:
            try:
                self.conn.send(None)
                self.process.join(timeout=grace)
            except (BrokenPipeError, OSError):
                pass
        if self.alive:
            self.kill()
        self.process.join()
        if leads:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
        self.conn.close()

    def _leads_group(self) -> bool:
        try:
            return self.alive and os.getpgid(self.process.pid) == self.process.pid
        except ProcessLookupError:
            return False


def _cpu_seconds(process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def call_with_deadline(fn: Callable[..., Any], args: tuple, seconds: float, start_method: str = "fork") -> Any:
    """`fn(*args)` in a one-off `Child`, killed after `seconds`; returns its (picklable) result.

    Raises `Deadline` when it overruns, RuntimeError (one line) when it fails or dies. The child
    dies with its parent and stays in the parent's process group, so killing the caller's group
    kills it too. Fork starts in milliseconds and sees the parent's imports.
    """
    child = Child(_call_in_child, (fn, args), start_method)
    try:
        status, value = child.receive(seconds)
    except ChildDied as err:
        raise RuntimeError(str(err)) from None
    finally:
        child.close()
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
