"""Connecting to a running Dask scheduler, for the harness (`bench run --backend dask`) and the
training-data generator alike: an address nobody answers at is one line that names it."""
from __future__ import annotations


class ClusterError(ValueError):
    """The Dask scheduler cannot be reached; the message names its address."""


def connect(address: str, timeout: str = "20s"):
    """A `distributed.Client` on the scheduler at `address`; ClusterError when it does not answer."""
    from distributed import Client

    try:
        return Client(address, timeout=timeout)
    except (OSError, TimeoutError) as err:
        raise ClusterError(f"cannot reach the Dask scheduler at {address} ({err})") from None
