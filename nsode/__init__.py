"""NSODE: predict a scalar autonomous ODE y' = f(y) in symbolic form from one trajectory.

Sub-packages: `nsode.data` (random ODEs, their solutions and the token vocabulary),
`nsode.model`, `nsode.train`, `nsode.decode` and `nsode.predict`. Nothing here imports `bench`.
"""
