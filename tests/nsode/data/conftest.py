"""A tiny generator configuration and one folder generated with it, shared by the data tests."""
import pytest

from nsode.data import config as cfg
from nsode.data import generate

# small enough for seconds per run, large enough to exercise every stage (FD check included)
TINY = dict(grid=64, n_const=2, n_iv=2, candidates_per_block=6, skeletons_per_shard=3, max_rhs_calls=4000)


@pytest.fixture(scope="session")
def tiny_config():
    return cfg.default().replace(**TINY)


@pytest.fixture(scope="session")
def tiny_folder(tmp_path_factory, tiny_config):
    """7 skeletons, seed 3, one process."""
    folder = tmp_path_factory.mktemp("tiny") / "data"
    generate.generate(folder, 7, 3, tiny_config, jobs=1, progress=False)
    return folder
