"""The benchmark harness: datasets -> tasks -> methods -> predictions -> scores -> tables.

Public pieces: `Method`, `Budget`, `Prediction`, `Observations` (the plugin interface) and
`Task` (one trajectory of one ODE). Everything else is reached through `python -m bench`.
They are imported when first asked for, so that `python -m bench` starts (and answers Ctrl-C)
before sympy loads.
"""
from __future__ import annotations

import importlib

_PUBLIC = {"Budget": "bench.method", "Method": "bench.method", "Observations": "bench.method",
           "Prediction": "bench.method", "Task": "bench.tasks"}
__all__ = list(_PUBLIC)


def __getattr__(name: str):
    if name not in _PUBLIC:
        raise AttributeError(f"module 'bench' has no attribute {name!r}")
    return getattr(importlib.import_module(_PUBLIC[name]), name)
