"""Connecting to a running Dask scheduler, for the harness (`bench run --backend dask`) and the
training-data generator alike: an address nobody answers at is one line that names it."""
from __future__ import annotations


class ClusterError(ValueError):
    """The Dask scheduler cannot be reached; the message names its address."""


def scheduler_address(text: str) -> str:
    """An argparse type: an address Dask can dial (tcp://HOST:PORT, HOST:PORT, tls://...), checked
    before a sweep or a generation starts, so a typo is one line rather than a traceback at connect."""
    import argparse

    try:
        check_address(text)
    except ClusterError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


def check_address(address: str) -> None:
    """ClusterError, naming `address`, where Dask could not dial it."""
    from distributed.comm.addressing import parse_address, parse_host_port
    from distributed.comm.registry import get_backend

    try:
        scheme, location = parse_address(address)
        get_backend(scheme)
        if scheme in ("tcp", "tls", "ws", "wss"):
            parse_host_port(location)
    except ValueError as err:
        raise ClusterError(f"{address!r} is not a Dask scheduler address such as tcp://HOST:8786 ({err})") from None


def connect(address: str, timeout: str = "20s"):
    """A `distributed.Client` on the scheduler at `address`; ClusterError when it does not answer."""
    from distributed import Client

    check_address(address)
    try:
        return Client(address, timeout=timeout)
    except (OSError, TimeoutError) as err:
        raise ClusterError(f"cannot reach the Dask scheduler at {address} ({err})") from None
