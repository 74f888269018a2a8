import json
import math
import multiprocessing
import shutil

import numpy as np
import pandas as pd
import pytest

from nsode.data import config, generate, shards, tokens
from nsode.train.stream import held_out_copy, in_validation, stream_examples
import torch
from safetensors.torch import load_file

from nsode.train import run as train
from nsode.train import validation as validation_module
from nsode.train.run import default_warmup, lr_at, main
from nsode.train.validation import Validation

VAL_PERCENT = 30


def small_folder(folder, seed: int):
    """A few shards written by the real generator (small: 16 skeletons, 2 x 2 solutions each)."""
    small = config.from_dict({**config.default().to_dict(), "n_const": 2, "n_iv": 2, "skeletons_per_shard": 4})
    generate.generate(folder, 16, seed=seed, config=small, progress=False)
    return folder


@pytest.fixture(scope="session")
def training_data(tmp_path_factory):
    return small_folder(tmp_path_factory.mktemp("data") / "train", seed=3)


def refused(capsys, argv, words: str) -> bool:
    """`main(argv)` stopped with exit code 2 and a one-line error that says `words` (not another refusal)."""
    code = main(argv)
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err, err
    return code == 2


def test_stream_reads_the_generator_shards_into_two_hot_targets(training_data):
    examples = list(stream_examples(training_data, split="train", val_percent=0))
    stored = sum(len(shards.read_shard(p, ["ode_id"])) for p in shards.shard_paths(training_data))
    assert len(examples) == stored > 0
    for ex in examples[:20]:
        assert len(ex.y) == len(ex.t) == 1024 and ex.t[-1] == 2.0
        assert ex.rows == tokens.targets(tokens.encode(tokens.parse_infix(ex.expression)))
    both = list(stream_examples([training_data, training_data], split="train", val_percent=0))
    assert len(both) == 2 * stored  # several folders (e.g. seeds) stream as one
    weighted = list(stream_examples(training_data, split="train", val_percent=0, weights=[3]))
    assert len(weighted) == 3 * stored  # a supplement read several times per pass
    assert len(list(stream_examples(training_data, split="val", val_percent=100, weights=[3]))) == stored
    with pytest.raises(ValueError, match="weight"):
        list(stream_examples([training_data, training_data], split="train", val_percent=0, weights=[2]))
    assert main(["--data", str(training_data), "--weights", "1", "2", "--out", str(training_data / "run")]) == 2


def test_validation_split_holds_out_whole_skeletons(training_data):
    val = {e.skeleton for e in stream_examples(training_data, split="val", val_percent=VAL_PERCENT)}
    train = {e.skeleton for e in stream_examples(training_data, split="train", val_percent=VAL_PERCENT)}
    assert val and train and not val & train
    ids = {s: i for p in shards.shard_paths(training_data)
           for s, i in shards.read_shard(p, ["skeleton", "skeleton_id"]).itertuples(index=False)}
    assert all(in_validation(ids[s], VAL_PERCENT) for s in val)


def test_a_held_out_copy_streams_the_same_validation_and_no_training(training_data, tmp_path):
    """How a fixed validation set travels light (`.gpu/fixed`): shards keep only held-out rows, so
    some are empty, and an empty shard streams as no examples."""
    import pyarrow.parquet as pq

    cut = tmp_path / "cut"
    kept = held_out_copy(training_data, cut, val_percent=VAL_PERCENT)
    assert any(pq.read_metadata(p).num_rows == 0 for p in shards.shard_paths(cut))
    val = [(e.skeleton, e.expression) for e in stream_examples(training_data, split="val", val_percent=VAL_PERCENT)]
    assert kept == len(val) > 0
    assert [(e.skeleton, e.expression) for e in stream_examples(cut, split="val", val_percent=VAL_PERCENT)] == val
    assert list(stream_examples(cut, split="train", val_percent=VAL_PERCENT)) == []


def test_a_shard_that_cannot_be_read_is_skipped_with_one_warning_not_one_a_pass(training_data, tmp_path, capsys):
    import itertools
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(training_data, copy)
    broken = shards.shard_paths(copy)[0]
    broken.write_bytes(broken.read_bytes()[:1000])  # a copy stopped halfway
    stored = sum(len(shards.read_shard(p, ["ode_id"])) for p in shards.shard_paths(copy)[1:])
    examples = list(itertools.islice(stream_examples(copy, split="train", val_percent=0, repeat=True), 2 * stored))
    assert len(examples) == 2 * stored  # two passes over the readable shards
    list(stream_examples(copy, split="val", val_percent=50))  # validation reads the same shards
    assert capsys.readouterr().err.count(f"warning: skipped {broken}") == 1


def test_warm_up_then_constant_or_cosine_learning_rate():
    assert lr_at(0, 1e-3, 10) == pytest.approx(1e-4) and lr_at(9, 1e-3, 10) == pytest.approx(1e-3)
    assert lr_at(500, 1e-3, 10, total=1000) == 1e-3
    assert lr_at(1000, 1e-3, 10, total=1000, schedule="cosine") == pytest.approx(1e-4)
    assert lr_at(105, 1e-3, 10, start=100, total=1000) == pytest.approx(6e-4)  # re-warm-up after --init
    assert default_warmup(35_000, 0) == 700
    assert default_warmup(35_000, 25_000) == 200  # --init: 2% of the 10,000 steps this run adds
    assert default_warmup(189_788, 187_788) == 100


def test_a_data_folder_that_cannot_be_read_is_one_line_not_skipped(training_data, tmp_path, capsys):
    import shutil

    args = ["--preset", "tiny", "--batch-size", "4", "--steps", "2", "--out", str(tmp_path / "run")]
    assert main(args + ["--data", str(training_data), str(tmp_path / "typo"), "--weights", "1", "2"]) == 2
    assert "typo: no such folder" in capsys.readouterr().err  # a mistyped supplement is not dropped unseen
    (tmp_path / "good.csv").write_text("t,y\n0,1\n")
    assert main(args + ["--data", str(tmp_path / "good.csv")]) == 2
    assert "good.csv: a file, not a folder" in capsys.readouterr().err
    shutil.copytree(training_data / "shards", tmp_path / "bare" / "shards")  # shards copied without config.json
    assert main(args + ["--data", str(tmp_path / "bare")]) == 2
    assert "no config.json" in capsys.readouterr().err
    (tmp_path / "bare" / "config.json").write_text("[1]")
    assert main(args + ["--data", str(tmp_path / "bare")]) == 2
    assert "cannot be read" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_data_without_training_examples_is_one_line(training_data, tmp_path, capsys, monkeypatch):
    import nsode.train.stream

    monkeypatch.setattr(nsode.train.stream, "excluded_skeletons", lambda: _Everything())
    assert main(["--data", str(training_data), "--preset", "tiny", "--batch-size", "4", "--steps", "2",
                 "--val-batches", "1", "--out", str(tmp_path / "run")]) == 2
    assert "no training examples" in capsys.readouterr().err
    assert not (tmp_path / "run" / "log.csv").exists()  # no header-only log of a run that never evaluated


class _Everything(frozenset):
    def __contains__(self, item):
        return True


def test_a_data_folder_given_twice_or_holding_no_shards_is_named(training_data, tmp_path, capsys):
    from nsode.data.shards import why_no_shards

    assert main(["--data", str(training_data), str(training_data), "--out", str(tmp_path / "run"), "--steps", "2"]) == 2
    assert "is given twice (its data and its validation would count double)" in capsys.readouterr().err
    assert why_no_shards(tmp_path / "none") == f"{tmp_path / 'none'}: no such folder"
    (tmp_path / "good.csv").write_text("t,y\n0,1\n")
    assert why_no_shards(tmp_path / "good.csv").startswith(f"{tmp_path / 'good.csv'} is a file, not a folder")
    (tmp_path / "list").mkdir()
    (tmp_path / "list" / shards.SKELETON_FILE).touch()
    assert "run the same generate command without --skeletons-only" in why_no_shards(tmp_path / "list")


def test_training_writes_checkpoints_log_and_plot_and_resumes(training_data, tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    args = ["--data", str(training_data), "--out", str(out), "--preset", "tiny", "--batch-size", "4",
            "--eval-every", "2", "--val-batches", "1", "--val-decode", "1", "--val-percent", str(VAL_PERCENT)]
    assert main(args + ["--steps", "4"]) == 0
    printed = capsys.readouterr()
    assert f"stopped at step 4 (--steps): weights in {out / 'last'}" in printed.out
    assert "the warm-up (100 steps) lasts past --steps 4" in printed.err  # a test-sized run
    assert json.loads((out / "last" / "training_state.json").read_text())["step"] == 4
    assert (out / "best" / "model.safetensors").is_file() and (out / "loss_curve.png").is_file()
    assert not list(out.rglob("*.bin")) and not list(out.rglob("*.pt"))  # safetensors only
    saved = load_file(str(out / "last" / "model.safetensors"))
    resumed = {}
    real_load = train.nsode_model.load

    def spy(folder, device):  # the model the resumed run starts from
        model = real_load(folder, device)
        resumed.update({k: v.detach().clone() for k, v in model.state_dict().items()})
        return model

    monkeypatch.setattr(train.nsode_model, "load", spy)
    assert main(args + ["--steps", "6"]) == 2  # a run is there: continuing it needs --resume
    assert main(args + ["--steps", "6", "--resume"]) == 0
    assert "validation trajectories, from step 4\n" in capsys.readouterr().out
    assert saved and set(saved) <= set(resumed)
    assert all(torch.equal(resumed[k].to(saved[k].dtype), saved[k]) for k in saved), "resumed weights differ"
    log = pd.read_csv(out / "log.csv")
    assert list(log["step"]) == [2, 4, 6] and log["samples"].iloc[-1] == 24
    assert np.isfinite(log["val_loss"]).all()
    optimizer = out / "last" / "optimizer.safetensors"
    optimizer.write_bytes(optimizer.read_bytes()[:1000])  # damaged: one line saying what to do
    assert main(args + ["--steps", "8", "--resume"]) == 2
    assert "delete it to resume with a fresh optimizer" in capsys.readouterr().err


def test_a_resumed_run_keeps_its_own_warm_up(training_data, tmp_path):
    out = tmp_path / "run"
    args = ["--data", str(training_data), "--out", str(out), "--preset", "tiny", "--batch-size", "4",
            "--eval-every", "2", "--val-batches", "1", "--val-decode", "0", "--val-percent", str(VAL_PERCENT)]
    assert main(args + ["--steps", "2", "--warmup", "3"]) == 0
    assert main(args + ["--steps", "4", "--resume"]) == 0  # without --warmup: not the default's 100
    assert json.loads((out / "last" / "training_state.json").read_text())["warmup"] == 3


def test_the_same_seed_trains_the_same_weights_from_the_same_start(training_data, tmp_path):
    args = ["--data", str(training_data), "--preset", "tiny", "--batch-size", "4", "--eval-every", "2",
            "--val-batches", "1", "--val-decode", "1", "--val-percent", str(VAL_PERCENT), "--steps", "2", "--seed", "3"]
    for name in ("a", "b"):
        assert main(args + ["--out", str(tmp_path / name)]) == 0
    first, second = (load_file(str(tmp_path / name / "last" / "model.safetensors")) for name in "ab")
    assert all(torch.equal(first[k], second[k]) for k in first)  # initial weights included (--seed's promise)


def test_training_continues_from_exported_fp16_weights(training_data, tmp_path, monkeypatch, capsys):
    from nsode.export import export
    from nsode.model import CheckpointError

    args = ["--data", str(training_data), "--preset", "tiny", "--batch-size", "4", "--eval-every", "2",
            "--val-batches", "1", "--val-decode", "0", "--val-percent", str(VAL_PERCENT)]
    assert main(args + ["--out", str(tmp_path / "a"), "--steps", "2"]) == 0
    export(tmp_path / "a" / "best", tmp_path / "shipped")
    with pytest.raises(CheckpointError, match="already holds weights"):  # a shipped folder is kept
        export(tmp_path / "a" / "last", tmp_path / "shipped")
    export(tmp_path / "a" / "last", tmp_path / "shipped", replace=True)
    before = {f.name: f.read_bytes() for f in (tmp_path / "shipped").iterdir()}
    monkeypatch.setattr("nsode.export.MAX_BYTES", 1000)
    with pytest.raises(CheckpointError, match="over the 16 MiB limit"):  # checked before the folder is touched
        export(tmp_path / "a" / "best", tmp_path / "shipped", replace=True)
    assert {f.name: f.read_bytes() for f in (tmp_path / "shipped").iterdir()} == before
    monkeypatch.undo()
    with pytest.raises(CheckpointError, match="exported"):
        export(tmp_path / "shipped", tmp_path / "shipped")  # would overwrite its own weights with fp16
    with pytest.raises(CheckpointError, match="training run"):
        export(tmp_path / "shipped", tmp_path / "a" / "last")  # next to another step's optimizer state
    from nsode.export import main as export_main

    (tmp_path / "afile").write_text("")
    assert export_main([str(tmp_path / "a" / "best"), str(tmp_path / "afile" / "sub")]) == 2  # not a traceback
    assert "afile/sub: cannot write there (Not a directory)" in capsys.readouterr().err
    more = [a if a != "tiny" else "small" for a in args]  # --preset at another size than the weights
    assert refused(capsys, more + ["--out", str(tmp_path / "b"), "--steps", "4", "--init", str(tmp_path / "shipped")],
                   "--preset small: the loaded weights are tiny")
    assert refused(capsys, args + ["--out", str(tmp_path / "b"), "--steps", "2", "--init", str(tmp_path / "shipped")],
                   "--steps 2 is not beyond the loaded step 2")
    with monkeypatch.context() as patched:  # a shipped checkpoint by its name: its counts continue too
        patched.setattr("nsode.CHECKPOINTS", tmp_path)
        patched.chdir(tmp_path / "a")
        assert refused(capsys, args + ["--out", str(tmp_path / "b"), "--steps", "2", "--init", "shipped"],
                       "--steps 2 is not beyond the loaded step 2")
    assert main(args[:2] + args[4:] + ["--out", str(tmp_path / "b"), "--steps", "4", "--init", str(tmp_path / "shipped")]) == 0
    state = json.loads((tmp_path / "b" / "last" / "training_state.json").read_text())
    assert state["step"] == 4 and state["samples"] == 16 and state["warmup_start"] == 2
    assert state["preset"] == "tiny"  # the loaded weights' size, not the command line's


def test_skeletons_of_the_large_test_set_are_never_streamed(training_data, monkeypatch):
    import nsode.train.stream

    everything = list(stream_examples(training_data, split="train", val_percent=0))
    banned = everything[0].skeleton
    monkeypatch.setattr(nsode.train.stream, "excluded_skeletons", lambda: frozenset({banned}))
    kept = list(stream_examples(training_data, split="train", val_percent=0))
    assert banned not in {e.skeleton for e in kept}
    assert len(kept) == sum(e.skeleton != banned for e in everything)


def test_scaled_input_training_is_recorded_and_used_by_predict(training_data, tmp_path, capsys):
    from nsode.model import load
    from nsode.predict import Predictor

    out = tmp_path / "scaled"
    args = ["--data", str(training_data), "--out", str(out), "--preset", "tiny", "--batch-size", "4",
            "--eval-every", "2", "--val-batches", "1", "--val-decode", "1", "--val-percent", str(VAL_PERCENT),
            "--input-scaling", "pow2", "--bf16", "--snapshot-every", "2"]
    assert main(args + ["--steps", "2"]) == 0
    assert json.loads((out / "last" / "training_state.json").read_text())["input_scaling"] == "pow2"
    assert (out / "snapshots" / "step-0000002" / "model.safetensors").is_file()
    model = load(out / "last")
    assert model.config.input_scaling == "pow2"
    t = np.linspace(0, 50, 40)
    assert Predictor(model, beam=2).candidates(t, 300 * np.exp(-0.01 * t))  # decodes in user units
    # a run keeps its input path: resuming with the other one is refused
    assert refused(capsys, args[:-5] + ["--input-scaling", "none", "--resume", "--steps", "3"],
                   "--input-scaling none differs from the run's pow2")


def test_cosine_time_anneals_over_the_wall_clock_budget(training_data, tmp_path, capsys):
    assert lr_at(50, 1e-3, 10, schedule="cosine-time", time_frac=0.0) == pytest.approx(1e-3)
    assert lr_at(50, 1e-3, 10, schedule="cosine-time", time_frac=0.5) == pytest.approx(5.5e-4)
    assert lr_at(50, 1e-3, 10, schedule="cosine-time", time_frac=2.0) == pytest.approx(1e-4)  # past the budget
    assert refused(capsys, ["--data", str(training_data), "--out", str(tmp_path / "r"), "--schedule", "cosine-time"],
                   "anneals over --max-minutes; give it")


def test_data_workers_read_disjoint_shares_of_the_shards(training_data):
    from nsode.train.stream import list_shards

    everything = [p for p, _ in list_shards(training_data)]
    shares = [[p for p, _ in list_shards(training_data, part=(k, 3))] for k in range(3)]
    assert sorted(sum(shares, [])) == sorted(everything)  # each shard in exactly one share


def test_training_with_data_worker_processes(training_data, tmp_path):
    out = tmp_path / "workers"
    args = ["--data", str(training_data), "--out", str(out), "--preset", "tiny", "--batch-size", "4",
            "--eval-every", "3", "--val-batches", "1", "--val-decode", "0", "--val-percent", str(VAL_PERCENT),
            "--workers", "2", "--steps", "3"]
    before = set(multiprocessing.active_children())  # e.g. the generator's simplifier
    assert main(args) == 0
    # workers stopped when training ends, not at exit (a process of an earlier test may end meanwhile)
    assert set(multiprocessing.active_children()) <= before
    state = json.loads((out / "last" / "training_state.json").read_text())
    assert state["step"] == 3 and state["samples"] == 12


def test_bf16_on_a_cpu_without_native_bf16_is_warned_about(training_data, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(train, "cpu_has_bf16", lambda: False)
    args = ["--data", str(training_data), "--out", str(tmp_path / "r"), "--device", "cpu", "--bf16",
            "--schedule", "cosine-time"]  # refused after the warning, before any training
    assert main(args) == 2
    assert "no native bf16" in capsys.readouterr().err


def test_validation_draws_from_every_data_folder(training_data, tmp_path, monkeypatch):
    other = small_folder(tmp_path / "other", seed=4)
    read = {}

    def spy(folder, **kw):  # what each folder gave the validation set
        examples = list(stream_examples(folder, **kw))
        read[str(folder)] = len(examples)
        return examples

    monkeypatch.setattr(validation_module, "stream_examples", spy)
    args = train.parse_args(["--data", str(training_data), str(other), "--out", str(tmp_path / "r"),
                             "--batch-size", "4", "--val-batches", "1", "--val-decode", "0",
                             ])
    args.off_grid, args.input_scaling, args.variant, args.val_percent = 0.5, "none", "nsode-eps", 100  # all held out
    validation = Validation([training_data, other], args, bos=1, pad=0, max_rows=63)
    assert validation.size == 4
    assert read == {str(training_data): 8, str(other): 8}  # 4 x 4 wanted, half from each folder


def test_dropout_of_a_fresh_model_is_saved_and_a_loaded_model_keeps_its_own(training_data, tmp_path, capsys):
    from nsode.model import load

    args = ["--data", str(training_data), "--preset", "tiny", "--batch-size", "4", "--eval-every", "2",
            "--val-batches", "1", "--val-decode", "0", "--val-percent", str(VAL_PERCENT), "--steps", "2"]
    assert main(args + ["--out", str(tmp_path / "a"), "--dropout", "0.1"]) == 0
    model = load(tmp_path / "a" / "last")
    assert model.config.dropout == pytest.approx(0.1) and not model.training  # loaded for inference
    more = args[:-1] + ["4"]  # counts continue from the loaded step
    assert main(more + ["--out", str(tmp_path / "b"), "--init", str(tmp_path / "a" / "last")]) == 0
    assert load(tmp_path / "b" / "last").config.dropout == pytest.approx(0.1)
    assert refused(capsys, more + ["--out", str(tmp_path / "c"), "--init", str(tmp_path / "a" / "last"), "--dropout", "0"],
                   "--dropout 0.0 differs from the loaded model's 0.1")


def test_an_interrupted_run_saves_its_last_update_and_resumes_from_it(training_data, tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    args = ["--data", str(training_data), "--out", str(out), "--preset", "tiny", "--batch-size", "4",
            "--eval-every", "100", "--val-batches", "1", "--val-decode", "0", "--val-percent", str(VAL_PERCENT)]
    real = train.lr_at

    def interrupted_at_3(step, *a, **k):  # Ctrl-C arrives before the fourth update
        if step == 3:
            raise KeyboardInterrupt
        return real(step, *a, **k)

    monkeypatch.setattr(train, "lr_at", interrupted_at_3)
    assert main(args + ["--steps", "10"]) == 130
    assert "interrupted at step 3" in capsys.readouterr().err
    assert json.loads((out / "last" / "training_state.json").read_text())["step"] == 3
    assert not list(out.glob("last.*"))  # the save swapped in whole
    monkeypatch.setattr(train, "lr_at", real)
    assert refused(capsys, args + ["--steps", "5", "--resume", "--variant", "nsode"],
                   "--variant nsode: the run in")  # trained as nsode-eps
    assert refused(capsys, args + ["--steps", "5", "--resume", "--init", str(out / "last")], "--init and --resume")
    assert main(args + ["--steps", "5", "--resume"]) == 0
    assert json.loads((out / "last" / "training_state.json").read_text())["variant"] == "nsode-eps"


def test_a_run_whose_state_file_is_lost_or_edited_is_refused_not_trained_over(training_data, tmp_path, capsys):
    out = tmp_path / "run"
    args = ["--data", str(training_data), "--out", str(out), "--preset", "tiny", "--batch-size", "4",
            "--eval-every", "2", "--val-batches", "1", "--val-decode", "0", "--val-percent", str(VAL_PERCENT)]
    assert main(args + ["--steps", "2"]) == 0
    state_file = out / "last" / "training_state.json"
    state = json.loads(state_file.read_text())
    state_file.write_text(json.dumps({**state, "step": "x"}))
    assert main(args + ["--steps", "4", "--resume"]) == 2
    assert "step is 'x'" in capsys.readouterr().err
    state_file.unlink()
    weights = (out / "last" / "model.safetensors").read_bytes()
    for resume in ([], ["--resume"]):
        assert main(args + ["--steps", "4", *resume]) == 2
        assert "holds weights but no training_state.json" in capsys.readouterr().err
    assert (out / "last" / "model.safetensors").read_bytes() == weights


@pytest.mark.parametrize("flag", [["--batch-size", "0"], ["--batch-size", "100000000"], ["--eval-every", "0"], ["--val-percent", "100"],
                                  ["--lr", "0"], ["--threads", "0"], ["--workers", "-1"], ["--dropout", "1.5"],
                                  ["--accum", "0"], ["--off-grid", "2"], ["--max-minutes", "-1"]])
def test_a_flag_that_cannot_train_is_refused_in_one_line(tmp_path, flag, capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["--data", str(tmp_path), "--out", str(tmp_path / "o"), *flag])
    assert stopped.value.code == 2 and flag[0] in capsys.readouterr().err


def test_init_continues_with_the_variant_the_weights_were_trained_with(training_data, tmp_path):
    args = ["--data", str(training_data), "--batch-size", "4", "--eval-every", "2", "--val-batches", "1",
            "--val-decode", "0", "--val-percent", str(VAL_PERCENT)]
    assert main(args + ["--preset", "tiny", "--variant", "nsode", "--out", str(tmp_path / "a"), "--steps", "2"]) == 0
    assert main(args + ["--init", str(tmp_path / "a" / "last"), "--out", str(tmp_path / "b"), "--steps", "4"]) == 0
    state = json.loads((tmp_path / "b" / "last" / "training_state.json").read_text())
    assert state["variant"] == "nsode" and state["off_grid"] == 0


def test_a_resumed_cosine_time_run_continues_its_anneal(training_data, tmp_path, capsys):
    out = tmp_path / "run"
    args = ["--data", str(training_data), "--out", str(out), "--preset", "tiny", "--batch-size", "4",
            "--eval-every", "1", "--val-batches", "1", "--val-decode", "0", "--val-percent", str(VAL_PERCENT),
            "--schedule", "cosine-time", "--max-minutes", "10", "--warmup", "0", "--lr", "1e-3"]
    assert main(args + ["--steps", "2"]) == 0
    state_file = out / "last" / "training_state.json"
    state = json.loads(state_file.read_text())
    assert state["schedule"] == "cosine-time" and 0 < state["anneal_s"] < 60
    state_file.write_text(json.dumps({**state, "anneal_s": 300.0}))  # interrupted half-way through the anneal
    assert main(args + ["--steps", "3", "--resume"]) == 0
    lr = pd.read_csv(out / "log.csv")["lr"].iloc[-1]
    assert lr == pytest.approx(5.5e-4, abs=2e-5)  # not back at the peak
    assert json.loads(state_file.read_text())["anneal_s"] > 300
    state_file.write_text(json.dumps({**state, "anneal_s": 600.0}))  # the whole budget is spent
    assert refused(capsys, args + ["--steps", "4", "--resume"], "has already spent 10.0 minutes")
    assert main(args[:-8] + ["--steps", "4", "--resume", "--schedule", "constant"]) == 0  # a constant one starts afresh
    assert "note: --schedule constant: the run in" in capsys.readouterr().err


def test_a_resume_keeps_the_run_s_schedule_and_peak_unless_given(training_data, tmp_path, capsys):
    """A run stopped by a scheduler is resumed by its plain command line: that once switched a cosine
    run to the default constant schedule at the default peak, without a word."""
    out = tmp_path / "run"
    args = ["--data", str(training_data), "--out", str(out), "--preset", "tiny", "--batch-size", "4",
            "--eval-every", "1", "--val-batches", "1", "--val-decode", "0", "--val-percent", str(VAL_PERCENT)]
    assert main(args + ["--steps", "2", "--schedule", "cosine", "--lr", "1e-3", "--warmup", "0"]) == 0
    assert main(args + ["--steps", "4", "--resume"]) == 0
    state = json.loads((out / "last" / "training_state.json").read_text())
    assert (state["schedule"], state["lr"]) == ("cosine", 1e-3)
    logged = pd.read_csv(out / "log.csv")["lr"].iloc[-1]
    assert logged == pytest.approx(lr_at(3, 1e-3, 0, start=0, total=4, schedule="cosine")) and logged < 1e-3
    assert "note:" not in capsys.readouterr().err
    assert main(args + ["--steps", "5", "--resume", "--lr", "2e-3"]) == 0
    assert "note: --lr 0.002: the run in" in capsys.readouterr().err
    assert json.loads((out / "last" / "training_state.json").read_text())["lr"] == 2e-3


def test_a_save_killed_between_its_renames_is_finished_on_resume(training_data, tmp_path):
    out = tmp_path / "run"
    args = ["--data", str(training_data), "--out", str(out), "--preset", "tiny", "--batch-size", "4",
            "--eval-every", "2", "--val-batches", "1", "--val-decode", "0", "--val-percent", str(VAL_PERCENT)]
    assert main(args + ["--steps", "2"]) == 0
    shutil.copytree(out / "last", out / "last.tmp")  # the new save was complete ...
    (out / "last").rename(out / "last.old")  # ... and the old one moved aside when the kill came
    assert main(args + ["--steps", "4", "--resume"]) == 0
    assert json.loads((out / "last" / "training_state.json").read_text())["step"] == 4
    (out / "last").rename(out / "last.old")  # killed before the new save was complete
    (out / "last.tmp").mkdir()
    assert main(args + ["--steps", "6", "--resume"]) == 0
    assert json.loads((out / "last" / "training_state.json").read_text())["step"] == 6


def test_init_from_weights_whose_config_contradicts_them_is_refused_in_one_line(training_data, tmp_path, capsys):
    from nsode.model import build

    build("tiny").save_pretrained(tmp_path / "bad")
    config = json.loads((tmp_path / "bad" / "config.json").read_text())
    (tmp_path / "bad" / "config.json").write_text(json.dumps({**config, "tokens": config["tokens"][:-1]}))
    capsys.readouterr()  # the setup's own output (transformers' progress bar, when no test before it turned it off)
    assert main(["--data", str(training_data), "--preset", "tiny", "--batch-size", "4", "--steps", "2",
                 "--init", str(tmp_path / "bad"), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "config.json does not match its weights: 35 tokens" in err and err.count("\n") == 1
    assert not (tmp_path / "run" / "last").exists()


def test_the_cosine_anneal_starts_where_the_warm_up_ends():
    """The warm-up lasts `warmup` steps (step `warmup` is at the peak), and the cosine runs over the
    steps after it, reaching half-way at the middle of those (not of all steps)."""
    assert lr_at(10, 1e-3, 10) == 1e-3
    assert lr_at(10, 1e-3, 10, total=110, schedule="cosine") == pytest.approx(1e-3)
    assert lr_at(60, 1e-3, 10, total=110, schedule="cosine") == pytest.approx(5.5e-4)
    assert lr_at(110, 1e-3, 10, start=100, total=210, schedule="cosine") == pytest.approx(1e-3)  # after --init


def test_val_percent_holds_out_that_percent_of_skeleton_ids():
    """--val-percent 5 holds out ids 0..4 of each hundred: 5%, not 6%."""
    assert in_validation(4, 5) and not in_validation(5, 5) and not in_validation(105, 5)
    assert sum(in_validation(i, 5) for i in range(10_000)) == 500


def test_a_target_of_exactly_max_rows_is_kept(training_data):
    """Only targets longer than `max_rows` (the decoder's positions) are skipped."""
    everything = list(stream_examples(training_data, split="train", val_percent=0))
    longest = max(len(e.rows) for e in everything)
    assert len(list(stream_examples(training_data, split="train", val_percent=0, max_rows=longest))) == len(everything)


def test_weights_below_one_or_fractional_are_refused():
    from nsode.train.stream import folder_weights

    for weights in ([0], [1.5], [-1]):
        with pytest.raises(ValueError, match="whole-number weight >= 1"):
            folder_weights(weights, 1)
    assert folder_weights([2.0], 1) == [2]


def test_a_data_folder_without_shards_yet_is_accepted_beside_one_with_shards(training_data, tmp_path):
    """Training may start while the generator is still writing a supplement (passes re-list shards)."""
    from nsode.train.run import check_data, parse_args

    waiting = tmp_path / "waiting"
    waiting.mkdir()
    shutil.copy(training_data / "config.json", waiting / "config.json")
    args = parse_args(["--data", str(training_data), str(waiting), "--out", str(tmp_path / "run")])
    assert check_data(args) == [training_data, waiting]


def _saved_tiny(folder, state: dict, opt_steps: int = 0):
    """A tiny model saved as a training checkpoint with `state` (and an optimizer after `opt_steps` updates)."""
    from nsode.model import build
    from nsode.train.checkpoints import save_checkpoint

    torch.manual_seed(0)
    model = build("tiny")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3) if opt_steps else None
    for _ in range(opt_steps):
        sum(p.sum() for p in model.parameters()).backward()
        opt.step()
    save_checkpoint(folder, model, opt, {"step": 2, "samples": 8, "elapsed_s": 1.0, "warmup_start": 0,
                                         "best_val_loss": math.inf, "preset": "tiny", **state})
    return model, opt


def test_init_continues_with_the_off_grid_share_the_weights_were_trained_with(tmp_path):
    from nsode.train.run import parse_args, start

    _saved_tiny(tmp_path / "w", {"variant": "nsode-eps", "off_grid": 0.25})
    args = parse_args(["--data", "x", "--out", str(tmp_path / "run"), "--init", str(tmp_path / "w"), "--steps", "10"])
    _, state = start(args, tmp_path / "run", torch.device("cpu"))
    assert args.off_grid == 0.25 and state["off_grid"] == 0.25  # not the variant's default 0.5


def test_a_resume_with_another_off_grid_share_is_refused(tmp_path):
    from nsode.train.run import UsageError, parse_args, start

    _saved_tiny(tmp_path / "run" / "last", {"variant": "nsode-eps", "off_grid": 0.5})
    args = parse_args(["--data", "x", "--out", str(tmp_path / "run"), "--resume", "--off-grid", "0.2", "--steps", "10"])
    with pytest.raises(UsageError, match="--off-grid 0.2: the run in .* was trained with 0.5"):
        start(args, tmp_path / "run", torch.device("cpu"))


def test_init_may_switch_the_input_path_that_a_resume_keeps(tmp_path):
    """--input-scaling differing from the weights' is refused on --resume only: --init starts a new run."""
    from nsode.train.run import parse_args, start

    _saved_tiny(tmp_path / "w", {"variant": "nsode-eps", "off_grid": 0.5})
    args = parse_args(["--data", "x", "--out", str(tmp_path / "run"), "--init", str(tmp_path / "w"),
                       "--input-scaling", "pow2", "--steps", "10"])
    model, state = start(args, tmp_path / "run", torch.device("cpu"))
    assert model.config.input_scaling == "pow2" and state["input_scaling"] == "pow2"


def test_a_resumed_optimizer_holds_the_saved_moments(tmp_path):
    """optimizer.safetensors is read back into the optimizer: AdamW's moments, not zeros."""
    from nsode.model import load
    from nsode.train.checkpoints import load_optimizer

    _, opt = _saved_tiny(tmp_path / "last", {}, opt_steps=2)
    model = load(tmp_path / "last", "cpu")
    fresh = torch.optim.AdamW(model.parameters(), lr=1e-3)
    load_optimizer(tmp_path / "last", fresh)
    saved = [opt.state[p] for g in opt.param_groups for p in g["params"]]
    loaded = [fresh.state[p] for g in fresh.param_groups for p in g["params"]]
    assert len(loaded) == len(saved) and all(set(a) == set(b) == {"step", "exp_avg", "exp_avg_sq"}
                                             for a, b in zip(loaded, saved))
    assert all(torch.equal(a[k], b[k]) for a, b in zip(loaded, saved) for k in a)


def test_a_state_file_with_a_negative_or_nan_count_is_refused(tmp_path):
    from nsode.model import CheckpointError
    from nsode.train.checkpoints import read_training_state

    for key, value in (("step", -1), ("samples", -5), ("elapsed_s", -0.5), ("best_val_loss", math.nan)):
        (tmp_path / "training_state.json").write_text(json.dumps({"step": 2, key: value}))
        with pytest.raises(CheckpointError, match=f"{key} is"):
            read_training_state(tmp_path)
    (tmp_path / "training_state.json").write_text(json.dumps({"step": 2, "best_val_loss": math.inf}))
    assert read_training_state(tmp_path)["step"] == 2  # no validation yet: an infinite best loss is fine


def test_best_is_kept_at_the_lowest_validation_loss_and_snapshots_every_n_steps(tmp_path):
    """OUT/best changes only when the validation loss improves; OUT/snapshots only at multiples of N."""
    from nsode.model import build
    from nsode.train.run import checkpoint

    model = build("tiny")
    state = {"step": 3, "samples": 12, "best_val_loss": math.inf, "preset": "tiny"}
    checkpoint(tmp_path, model, None, state, {"val_loss": 2.0}, snapshot_every=3)
    assert json.loads((tmp_path / "best" / "training_state.json").read_text())["step"] == 3
    assert (tmp_path / "snapshots" / "step-0000003").is_dir()
    state["step"] = 4
    checkpoint(tmp_path, model, None, state, {"val_loss": 3.0}, snapshot_every=3)  # worse: best stays at step 3
    assert json.loads((tmp_path / "best" / "training_state.json").read_text())["step"] == 3
    assert json.loads((tmp_path / "last" / "training_state.json").read_text())["step"] == 4
    assert state["best_val_loss"] == 2.0 and not (tmp_path / "snapshots" / "step-0000004").exists()


def test_a_short_validation_set_keeps_its_last_partial_batch():
    """Validation batches keep the examples that do not fill a last batch (training's stream drops them)."""
    from nsode.train.loader import batches
    from nsode.train.stream import Example

    t = np.linspace(0, 2, 1024)
    rows = tokens.targets(tokens.encode(tokens.parse_infix("-0.5*y")))
    examples = [Example(t, k * np.exp(-0.5 * t), rows, "c*y", "-0.5*y") for k in (1.0, 2.0, 3.0, 4.0, 5.0)]
    kept = list(batches(examples, "nsode", 4, 1, 0, np.random.default_rng(0), keep_last=True))
    assert [len(b.bits) for b in kept] == [4, 1]
    assert [len(b.bits) for b in batches(examples, "nsode", 4, 1, 0, np.random.default_rng(0))] == [4]


def test_validation_is_rebuilt_once_shards_arrive_and_leaves_the_model_training(training_data, tmp_path):
    """A run started before its data folder held shards gets a validation set when they come, and
    the model goes on training (dropout on) after each evaluation."""
    from nsode.model import build

    folder = tmp_path / "growing"
    folder.mkdir()
    args = train.parse_args(["--data", str(folder), "--out", str(tmp_path / "r"), "--batch-size", "4",
                             "--val-batches", "1", "--val-decode", "0"])
    args.off_grid, args.input_scaling, args.variant, args.val_percent = 0.5, "none", "nsode-eps", 100  # all held out
    model = build("tiny", dropout=0.1)
    validation = Validation([folder], args, model.config.bos_token_id, model.config.pad_token_id, 63)
    assert validation.size == 0 and validation(model, torch.device("cpu")) == {"val_n": 0}
    shutil.copytree(training_data / "shards", folder / "shards")
    shutil.copy(training_data / "config.json", folder / "config.json")
    model.train()
    metrics = validation(model, torch.device("cpu"))
    assert metrics["val_n"] == 4 and math.isfinite(metrics["val_loss"])
    assert model.training


def test_the_validation_loss_weighs_each_batch_by_its_size():
    from nsode.train.batching import collate, two_hot_loss
    from nsode.train.validation import mean_loss

    t = np.linspace(0, 2, 8)
    laws = ["-0.5*y", "y - y**2", "sin(y)", "-y"]
    rows = [tokens.targets(tokens.encode(tokens.parse_infix(law))) for law in laws]
    full = collate([(t, np.exp(-t))] * 3, rows[:3], 1, 0)
    last = collate([(t, np.exp(-t))], rows[3:], 1, 0)
    logits = {3: torch.randn(3, full.tgt_ids.shape[1], 36, generator=torch.Generator().manual_seed(0)),
              1: torch.randn(1, last.tgt_ids.shape[1], 36, generator=torch.Generator().manual_seed(1))}

    def model(bits, ids, w, mask):
        return logits[len(bits)]

    loss, _ = mean_loss(model, [full, last], "cpu")
    each = [float(two_hot_loss(logits[len(b.bits)], b.tgt_ids, b.tgt_w)[0]) for b in (full, last)]
    assert loss == pytest.approx((3 * each[0] + each[1]) / 4) and each[0] != pytest.approx(each[1])


def test_a_run_saves_its_last_step_between_evaluations_and_init_restarts_the_warm_up(training_data, tmp_path):
    """--steps 5 with --eval-every 2 from the loaded step 2: evaluated and saved at 4 and at 5 (the
    end), and the warm-up counts from the loaded step (step 3 is its second step: 2e-4, not 4e-4)."""
    _saved_tiny(tmp_path / "w", {"variant": "nsode-eps", "off_grid": 0.5})
    assert main(["--data", str(training_data), "--init", str(tmp_path / "w"), "--out", str(tmp_path / "run"),
                 "--batch-size", "2", "--eval-every", "2", "--val-batches", "1", "--val-decode", "0",
                 "--val-percent", "30", "--warmup", "10", "--lr", "1e-3", "--steps", "5"]) == 0
    log = pd.read_csv(tmp_path / "run" / "log.csv")
    assert list(log["step"]) == [4, 5]
    assert json.loads((tmp_path / "run" / "last" / "training_state.json").read_text())["step"] == 5
    assert log["lr"].iloc[0] == pytest.approx(2e-4)


def test_max_minutes_stops_and_saves_the_run(training_data, tmp_path, capsys):
    assert main(["--data", str(training_data), "--preset", "tiny", "--out", str(tmp_path / "run"), "--batch-size", "2",
                 "--eval-every", "100", "--val-batches", "1", "--val-decode", "0", "--val-percent", "30",
                 "--steps", "4", "--max-minutes", "1e-9"]) == 0
    assert "stopped at step 1 (--max-minutes)" in capsys.readouterr().out
    assert json.loads((tmp_path / "run" / "last" / "training_state.json").read_text())["step"] == 1
