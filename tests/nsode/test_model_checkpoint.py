import pickle

import pytest
import torch

from nsode.model import CheckpointError, build, load



def test_save_load_round_trip_gives_identical_outputs(tmp_path):
    torch.manual_seed(0)
    model = build("tiny").eval()
    bits = torch.randint(0, 2, (2, 16, 128)).float()
    ids = torch.randint(0, 36, (2, 5, 2))
    w = torch.rand(2, 5, 2)
    model.save_pretrained(tmp_path)
    again = load(tmp_path)
    assert torch.equal(model(bits, ids, w), again(bits, ids, w))
    assert again.config.constant_values == [float(v) for v in range(-10, 11)]


def test_checkpoint_folder_with_a_pickle_file_is_refused(tmp_path):
    build("tiny").save_pretrained(tmp_path)
    (tmp_path / "pytorch_model.bin").write_bytes(pickle.dumps({"x": 1}))
    with pytest.raises(CheckpointError, match="pickle"):
        load(tmp_path)


def test_missing_checkpoint_gives_a_clear_error(tmp_path):
    with pytest.raises(CheckpointError, match="config.json"):
        load(tmp_path / "nothing")


@pytest.mark.parametrize("damage, problem", [
    (lambda f: (f / "model.safetensors").write_bytes((f / "model.safetensors").read_bytes()[:1000]), "whole safetensors"),
    (lambda f: (f / "config.json").write_text("{garbage"), "cannot be read"),
    (lambda f: (f / "config.json").write_text("{}"), "not an NSODE model"),
    (lambda f: (f / "config.json").write_text((f / "config.json").read_text().replace('"tiny"', '"x"')),
     "cannot be loaded"),  # a preset this version does not know
])
def test_a_damaged_checkpoint_is_one_clear_error(tmp_path, damage, problem):
    build("tiny").save_pretrained(tmp_path)
    damage(tmp_path)
    with pytest.raises(CheckpointError, match=problem):
        load(tmp_path)


def test_a_training_run_folder_is_pointed_to_its_checkpoints(tmp_path):
    build("tiny").save_pretrained(tmp_path / "best")
    with pytest.raises(CheckpointError, match="a training run"):
        load(tmp_path)
