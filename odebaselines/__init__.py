"""Shared machinery of the baseline methods in `methods/`.

`fd` holds the finite-difference protocol (derivative estimate, [0, 1] / (1, 2] split, grid
search with a hard per-run time limit) that every FD method uses; `grammar` holds the
ProGED-style probabilistic grammar and trajectory fitting; `gp` and friends hold the GP family.
Method files stay short and declarative because the work lives here.
"""
