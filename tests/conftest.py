"""Helpers every test folder shares."""
import pandas as pd
import pytest


@pytest.fixture
def write_record():
    """Writes a record as a user hands it over: a CSV with columns t and y (and any others given),
    each number to the digits that read back as the same float."""
    def write(path, t, y, **columns):
        pd.DataFrame({"t": t, "y": y, **columns}).to_csv(path, index=False)
        return path
    return write


@pytest.fixture
def write_runs():
    """Writes one CSV holding several runs of 12 points each (t, t + 1), told apart by the header's
    third column, run after run in the order of `labels`."""
    def write(path, labels=("a", "b"), header="t,y,run"):
        path.write_text(header + "\n" + "".join(f"{t},{1 + t},{r}\n" for r in labels for t in range(12)))
        return path
    return write


@pytest.fixture
def process_gone():
    """Whether process `pid` has exited (or lingers as a zombie for init to reap) within `seconds`:
    how tests check that nothing a killed command started keeps running."""
    def gone(pid: int, seconds: float) -> bool:
        import time

        import psutil

        deadline = time.time() + seconds
        while time.time() < deadline:
            try:
                if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                    return True
            except psutil.NoSuchProcess:
                return True
            time.sleep(0.1)
        return False
    return gone
