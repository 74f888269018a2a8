"""Random scalar autonomous ODEs y' = f(y) with their solutions: NSODE's training data and Large.

One job per module, in the order data flows:
`config` (the distribution's parameters), `trees` (uniform random unary-binary trees),
`tokens` (vocabulary, prefix <-> sympy <-> infix, two-hot constants), `simplify` (sympy
simplification under a time limit, the support filter, skeletons, constant resampling),
`expressions` and `solve` (numeric evaluation, LSODA, the finite-difference check),
`generate` (skeletons -> ODEs -> solutions, parallel and resumable), `shards` (parquet store and
streaming), `stats`, `large` (the Large benchmark dataset). Command line: `python -m nsode.data`.
"""
