"""Connecting to a running Dask scheduler, for the harness (`bench run --backend dask`) and the
training-data generator alike: an address nobody answers at is one line that names it."""
from __future__ import annotations

from odecore.processes import one_line


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
    """A `distributed.Client` on the scheduler at `address`; ClusterError when it does not answer,
    or answers as something else (`probe`)."""
    from dask.utils import parse_timedelta
    from distributed import Client

    check_address(address)
    probe(address, parse_timedelta(timeout))
    try:
        return Client(address, timeout=timeout)
    except Exception as err:  # noqa: BLE001 - OSError, TimeoutError, or a reply Dask misread as frames
        raise ClusterError(f"cannot reach the Dask scheduler at {address} ({one_line(err)})") from None


def probe(address: str, seconds: float) -> None:
    """ClusterError unless a TCP address speaks first, as a Dask scheduler does: Dask's own
    handshake waits without a deadline, so a port that accepts and stays silent (the dashboard's
    8787 for the scheduler's 8786, any web server) would hang the command for good, and an HTTP
    reply read as Dask frames asks for exabytes. Other schemes are left to Dask."""
    import socket
    import struct

    from distributed.comm.addressing import parse_address, parse_host_port

    scheme, location = parse_address(address)
    if scheme != "tcp":
        return
    host, port = parse_host_port(location)
    try:
        with socket.create_connection((host, port), timeout=seconds) as sock:
            sock.settimeout(seconds)
            first = b""
            while len(first) < 8:
                chunk = sock.recv(8 - len(first))
                if not chunk:
                    break
                first += chunk
    except TimeoutError:
        raise ClusterError(f"the port at {address} accepts but says nothing within {seconds:g} s: not a Dask "
                           "scheduler (its dashboard? the scheduler listens on 8786 by default)") from None
    except OSError as err:
        raise ClusterError(f"cannot reach the Dask scheduler at {address} ({err.strerror or err})") from None
    size = struct.unpack("<Q", first)[0] if len(first) == 8 else 0
    if not 0 < size < 2**32:  # a Dask message opens with its length in bytes ("HTTP/1.1" reads as 1e16)
        raise ClusterError(f"{address} answers, but not as a Dask scheduler (it sent {first[:8]!r})")
