"""Training NSODE on the generator's shards: `python -m nsode.train` (nsode/checkpoints/README.md).

One job per module, in the order data flows: `stream` (examples read from the parquet shards,
split into training and validation by skeleton), `batching` (an example observed as its variant
says, put into bits and two-hot rows; the loss), `loader` (the batches training reads, in this
process or in data worker processes), `validation` (what a run is judged by), `checkpoints`
(a run's checkpoints on disk, read without unpickling) and `run` (the command line, the
learning-rate schedule and the loop).
"""
