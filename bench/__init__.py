"""The benchmark harness: datasets -> tasks -> methods -> predictions -> scores -> tables.

Public pieces: `Method`, `Budget`, `Prediction`, `Observations` (the plugin interface) and
`Task` (one trajectory of one ODE). Everything else is reached through `python -m bench`.
"""
from bench.method import Budget, Method, Observations, Prediction
from bench.tasks import Task

__all__ = ["Budget", "Method", "Observations", "Prediction", "Task"]
