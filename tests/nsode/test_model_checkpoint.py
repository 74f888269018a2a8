import json
import pickle
import shutil
import stat
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


def _run_folder(path, state=None):
    torch.manual_seed(0)
    build("tiny").save_pretrained(path)
    if state is not None:
        (path / "training_state.json").write_text(json.dumps(state))
    return path


def test_export_writes_fp16_weights_readable_as_the_config(tmp_path):
    """The shipped weights are fp16 (half the bytes); they get config.json's permissions."""
    from nsode.export import export

    src = _run_folder(tmp_path / "run")
    size = export(src, tmp_path / "shipped")
    assert {w.dtype for w in load_file(str(tmp_path / "shipped" / "model.safetensors")).values()} == {torch.float16}
    assert size < 0.6 * (src / "model.safetensors").stat().st_size
    (tmp_path / "shipped" / "config.json").chmod(0o644)
    (tmp_path / "shipped" / "model.safetensors").chmod(0o600)
    export(src, tmp_path / "shipped", replace=True)
    mode = stat.S_IMODE((tmp_path / "shipped" / "model.safetensors").stat().st_mode)
    assert mode == stat.S_IMODE((tmp_path / "shipped" / "config.json").stat().st_mode)


def test_a_replaced_checkpoint_does_not_keep_the_old_training_state(tmp_path):
    """--replace with weights that have no training_state.json drops the old model's state."""
    from nsode.export import export

    export(_run_folder(tmp_path / "a", {"step": 7}), tmp_path / "shipped")
    assert (tmp_path / "shipped" / "training_state.json").is_file()
    export(_run_folder(tmp_path / "b"), tmp_path / "shipped", replace=True)
    assert not (tmp_path / "shipped" / "training_state.json").exists()


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    return _run_folder(tmp_path_factory.mktemp("tiny") / "ckpt")


def _copy(saved, tmp_path, **changes):
    folder = tmp_path / "ckpt"
    shutil.copytree(saved, folder)
    _config_with(folder, **changes)
    return folder


@pytest.mark.parametrize("suffix", [".bin", ".pt", ".pth", ".pkl", ".pickle", ".ckpt", ".PKL"])
def test_every_pickle_suffix_is_refused(saved, tmp_path, suffix):
    """Each pickle suffix is refused, not only the two the load test uses."""
    from nsode.checkpoint_files import CheckpointError, check

    folder = _copy(saved, tmp_path)
    (folder / f"weights{suffix}").write_bytes(b"\x80\x04N.")
    with pytest.raises(CheckpointError, match="pickle files"):
        check(folder)


def test_weights_cut_short_after_an_intact_header_are_refused(saved, tmp_path):
    """The tensors must end exactly at the file's end (a copy cut in its data, header whole)."""
    from nsode.checkpoint_files import CheckpointError, check

    folder = _copy(saved, tmp_path)
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-64])
    with pytest.raises(CheckpointError, match="not a whole safetensors file"):
        check(folder)


def _config(saved):
    return json.loads((saved / "config.json").read_text())


@pytest.mark.parametrize("edit, problem", [
    (lambda c: {"vocab_size": c["vocab_size"] - 1}, "36 tokens and vocab_size 35"),
    (lambda c: {"dropout": 1.0}, r"dropout 1.0 is not a rate in \[0, 1\)"),
    (lambda c: {"constant_token_ids": c["constant_token_ids"][:1], "constant_values": c["constant_values"][:1]},
     "two or more"),
    (lambda c: {"pad_token_id": 36}, "pad_token_id 36 is not a token"),
    (lambda c: {"constant_token_ids": c["constant_token_ids"][:1] + c["constant_token_ids"],
                "constant_values": c["constant_values"][:1] + c["constant_values"]}, "do not increase"),
])
def test_the_pre_sweep_check_refuses_configs_no_model_runs_with(saved, tmp_path, edit, problem):
    """The harness's check (no torch) names each problem before a sweep, not one error per task."""
    from nsode.checkpoint_files import CheckpointError, check

    folder = _copy(saved, tmp_path, **edit(_config(saved)))
    with pytest.raises(CheckpointError, match=problem):
        check(folder)


@pytest.mark.parametrize("edit, problem", [
    (lambda c: {"input_bits": 64}, "input_bits 64, but input_proj.weight has 128"),
    (lambda c: {"decoder_layers": 3}, "decoder_layers 3, but the weights hold 2"),
    (lambda c: {"max_tokens": 1000}, "max_tokens 1000 exceeds max_position_embeddings 512"),
    (lambda c: {"dropout": -0.1}, r"dropout -0.1 is not a rate in \[0, 1\)"),
    (lambda c: {"attention_dropout": 1.5}, r"attention_dropout 1.5 is not a rate in \[0, 1\)"),
    (lambda c: {"activation_dropout": 1.5}, r"activation_dropout 1.5 is not a rate in \[0, 1\)"),
    (lambda c: {"bos_token_id": 36}, "bos_token_id 36 is not a token of the 36"),
    (lambda c: {"constant_token_ids": [99] + c["constant_token_ids"][1:]}, "must name two or more of the 36 tokens"),
])
def test_the_pre_sweep_check_names_every_size_rate_and_token_it_reads(saved, tmp_path, edit, problem):
    """Each field the check reads is checked, not only the one the other tests edit: the input width,
    the decoder's layers, max_tokens within the positions, a negative or too large dropout of each
    kind, the bos id, and a grid id outside the vocabulary (an IndexError without the check)."""
    from nsode.checkpoint_files import CheckpointError, check

    folder = _copy(saved, tmp_path, **edit(_config(saved)))
    with pytest.raises(CheckpointError, match=problem):
        check(folder)


def test_weights_with_bytes_after_their_last_tensor_are_refused(saved, tmp_path):
    """A whole safetensors file ends where its tensors end: safetensors refuses a longer one
    ("file not fully covered"), so the pre-sweep check must too."""
    from nsode.checkpoint_files import CheckpointError, check

    folder = _copy(saved, tmp_path)
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes() + bytes(64))
    with pytest.raises(CheckpointError, match="not a whole safetensors file"):
        check(folder)


def test_nan_in_float32_weights_is_refused(saved, tmp_path):
    """Training saves float32 weights: a NaN in them is found as in fp16 and bf16 ones."""
    from nsode.checkpoint_files import CheckpointError, check

    folder = _copy(saved, tmp_path)
    _with_weight(folder, "lm_head.weight", float("nan"), torch.float32)
    with pytest.raises(CheckpointError, match="lm_head.weight holds NaN or inf"):
        check(folder)


# --- nsode/model.py ---------------------------------------------------------------------------

def test_a_config_whose_positions_differ_from_the_weights_is_refused_not_reinitialised(saved, tmp_path):
    """max_position_embeddings edited after training passes the pre-sweep check (it reads no
    position table), but the loaded positional embeddings would be random: load names them."""
    from nsode.model import CheckpointError, load

    folder = _copy(saved, tmp_path, max_position_embeddings=600)
    with pytest.raises(CheckpointError, match="mismatched keys .*embed_positions"):
        load(folder)


def test_padding_is_hidden_from_the_decoder_too():
    """A padded record decodes as it does alone: forward's mask reaches the decoder's cross-attention."""
    from nsode.model import build

    torch.manual_seed(0)
    model = build("tiny").eval()
    bits = torch.randint(0, 2, (1, 16, 128)).float()
    mask = torch.ones(1, 16, dtype=torch.long)
    mask[0, 10:] = 0
    ids, w = torch.randint(0, 36, (1, 5, 2)), torch.rand(1, 5, 2)
    with torch.no_grad():
        padded = model(bits, ids, w, mask)
        alone = model(bits[:, :10], ids, w)
    torch.testing.assert_close(padded, alone, atol=1e-5, rtol=1e-4)


def test_a_model_for_short_records_still_has_positions_for_its_tokens():
    """max_position_embeddings covers max_tokens as well as max_points: a model built for 16 points
    decodes 64 tokens."""
    from nsode.model import DecoderInput, build

    model = build("tiny", max_points=16).eval()
    assert model.config.max_position_embeddings == 64
    ids = torch.full((1, 64, 2), model.config.bos_token_id)
    with torch.no_grad():
        logits, _ = model.decode(DecoderInput(ids, torch.ones(1, 64, 2) / 2), torch.zeros(1, 16, 128))
    assert logits.shape == (1, 64, 36)


def test_a_device_this_machine_lacks_or_cannot_read_is_one_clear_error(monkeypatch):
    """resolve_device: auto falls back to the CPU; cuda without CUDA and an unknown name are ValueErrors."""
    from nsode.model import resolve_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == torch.device("cpu") == resolve_device("cpu")
    for name, problem in (("cuda", "no CUDA device"), ("cuda:1", "no CUDA device"), ("gpu", "use auto, cpu or cuda")):
        with pytest.raises(ValueError, match=problem):
            resolve_device(name)


# --- nsode/export.py --------------------------------------------------------------------------

def test_export_onto_a_file_is_refused_before_anything_is_written(tmp_path):
    """DST an existing file: one CheckpointError naming it, the file kept, no staging folder left."""
    from nsode.export import export

    src = _run_folder(tmp_path / "run")
    (tmp_path / "shipped").write_text("notes")
    with pytest.raises(CheckpointError, match="is a file, not a folder"):
        export(src, tmp_path / "shipped")
    assert (tmp_path / "shipped").read_text() == "notes"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run", "shipped"]
