import json
import pickle
import struct

import pytest
import torch
from safetensors.torch import load_file, save_file

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
    (tmp_path / "pytorch_model.bin").rename(tmp_path / "optimizer.PT")  # the suffix in any case
    with pytest.raises(CheckpointError, match=r"pickle files \(optimizer.PT\)"):
        load(tmp_path)


def test_missing_checkpoint_gives_a_clear_error(tmp_path):
    with pytest.raises(CheckpointError, match="no such checkpoint folder"):
        load(tmp_path / "nothing")
    (tmp_path / "weights.bin").write_bytes(b"0")
    with pytest.raises(CheckpointError, match="is a file; a checkpoint is a folder"):
        load(tmp_path / "weights.bin")
    with pytest.raises(CheckpointError, match="config.json"):
        load(tmp_path)


def _header_only(folder, header):
    text = json.dumps(header).encode()
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(text)) + text)


def _drop_tensor(folder, prefix):
    tensors = load_file(str(folder / "model.safetensors"))
    save_file({k: v for k, v in tensors.items() if not k.startswith(prefix)}, str(folder / "model.safetensors"))


def _with_weight(folder, name, value, dtype=torch.float16):
    """The weights saved in `dtype` (as a run that diverged would save them), one entry of `name` set to `value`."""
    tensors = {k: v.to(dtype) for k, v in load_file(str(folder / "model.safetensors")).items()}
    tensors[name].view(-1)[7] = value
    save_file(tensors, str(folder / "model.safetensors"))


def _config_with(folder, **changes):
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **changes}))


@pytest.mark.parametrize("damage, problem", [
    (lambda f: _header_only(f, []), "whole safetensors"),  # a header that is not a map of tensors
    (lambda f: _header_only(f, {"a": {"dtype": "F16"}}), "whole safetensors"),  # a tensor without offsets
    (lambda f: _drop_tensor(f, "lm_head"), "1 missing keys"),  # would load with a random output layer
    (lambda f: _config_with(f, input_scaling="Pow2"), "input_scaling 'Pow2'"),  # would read raw inputs
    (lambda f: _config_with(f, d_model=256), "d_model 256, but lm_head.weight has 128"),  # before building
    (lambda f: _config_with(f, encoder_layers=100_000), "encoder_layers 100000, but the weights hold 2"),
    (lambda f: _config_with(f, decoder_ffn_dim=64), "decoder_ffn_dim 64, but decoder.layers.0.fc1.weight has 512"),
    (lambda f: _with_weight(f, "decoder.layers.1.fc2.bias", float("nan")), "decoder.layers.1.fc2.bias holds NaN"),
    (lambda f: _with_weight(f, "lm_head.weight", float("inf"), torch.bfloat16), "lm_head.weight holds NaN or inf"),
    (lambda f: _config_with(f, max_points=-1), "max_points -1 is not a whole number of at least 1"),  # a traceback
    (lambda f: _config_with(f, max_tokens=0), "max_tokens 0 is not a whole number of at least 2"),  # y' = 0, silently
    (lambda f: _config_with(f, max_points=4096), "max_points 4096 exceeds max_position_embeddings 512"),
    (lambda f: _config_with(f, dropout=5), r"dropout 5 is not a rate in \[0, 1\)"),
])
def test_weights_that_do_not_fit_the_model_are_refused_not_initialised(tmp_path, damage, problem, capsys):
    build("tiny").save_pretrained(tmp_path)
    damage(tmp_path)
    with pytest.raises(CheckpointError, match=problem):
        load(tmp_path)
    assert "newly initialized" not in capsys.readouterr().err.lower()


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


def _edited_vocabulary(folder, edit):
    config = json.loads((folder / "config.json").read_text())
    edit(config)
    (folder / "config.json").write_text(json.dumps(config))


@pytest.mark.parametrize("edit, problem", [
    (lambda c: c["tokens"].pop(), "35 tokens and vocab_size 36, but lm_head.weight scores 36"),
    (lambda c: c.update(tokens=c["tokens"][:-1], vocab_size=35), "35 tokens and vocab_size 35, but lm_head.weight"),
    (lambda c: c.update(constant_values=[1.0]), r"constant_token_ids and constant_values differ in length \(21 and 1"),
    (lambda c: c["constant_values"].__setitem__(3, 2.5), "constant value 2.5 is not its token '-7'"),
    (lambda c: c.update(eos_token_id=36), "eos_token_id 36 is not a token of the 36"),
    (lambda c: c.update(constant_token_ids=c["constant_token_ids"][::-1], constant_values=c["constant_values"][::-1]),
     "constant_values do not increase"),  # each value its token's, in the wrong order
])
def test_a_config_whose_vocabulary_contradicts_its_weights_is_refused_at_load(tmp_path, edit, problem):
    from nsode.checkpoint_files import check

    build("tiny").save_pretrained(tmp_path)
    check(tmp_path)  # as saved: consistent
    _edited_vocabulary(tmp_path, edit)
    with pytest.raises(CheckpointError, match=f"config.json does not match its weights: {problem}"):
        load(tmp_path)
