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
