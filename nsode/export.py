"""Export trained weights for shipping: fp16 safetensors + config (no optimizer state).

    python -m nsode.export RUN/best checkpoints/my-eps                      # a new folder
    python -m nsode.export RUN/best nsode/checkpoints/nsode-eps --replace   # ship it in place

Training can continue from the shipped folder with `python -m nsode.train --init FOLDER`
(weights are loaded back as float32; the optimizer restarts).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

import torch

from nsode.checkpoint_files import share_weights
from nsode.model import WEIGHTS_NAME, CheckpointError, count_parameters, load

MAX_BYTES = 16 * 2**20  # keep the repository light (issue 5)


def export(src: Path, dst: Path, replace: bool = False) -> int:
    if dst.resolve() == src.resolve():
        raise CheckpointError(f"{dst} is the folder exported: write the fp16 copy elsewhere (its fp32 weights "
                              "would be lost)")
    if (dst / "optimizer.safetensors").exists():
        raise CheckpointError(f"{dst} holds a training run's state (optimizer.safetensors): export to a new folder")
    if dst.exists() and not dst.is_dir():
        raise CheckpointError(f"{dst} is a file, not a folder")
    if (dst / WEIGHTS_NAME).exists() and not replace:  # e.g. a shipped checkpoint every NSODE method reads
        raise CheckpointError(f"{dst} already holds weights: export to a new folder, or add --replace")
    model = load(src).to(torch.float16)
    staging = dst.parent / f".{dst.name}.export"  # written and checked in full before DST is touched
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        model.save_pretrained(staging)
        size = (staging / WEIGHTS_NAME).stat().st_size
        if size > MAX_BYTES:
            raise CheckpointError(f"the fp16 weights of {src} are {size / 2**20:.1f} MiB, over the 16 MiB limit "
                                  f"for shipped checkpoints; {dst} is left as it was (any checkpoint folder loads as it is: "
                                  f"--checkpoint {src})")
        if (src / "training_state.json").is_file():
            shutil.copy(src / "training_state.json", staging / "training_state.json")
        dst.mkdir(parents=True, exist_ok=True)
        (dst / "training_state.json").unlink(missing_ok=True)  # a replaced model's state would describe it
        for file in staging.iterdir():
            os.replace(file, dst / file.name)
        share_weights(dst)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    print(json.dumps({"written": str(dst), "parameters": count_parameters(model), "bytes": size}))
    return size


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m nsode.export", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("src", type=Path, help="a checkpoint folder written by nsode.train (e.g. RUN/best)")
    p.add_argument("dst", type=Path, help="where to write the shipped checkpoint")
    p.add_argument("--replace", action="store_true", help="overwrite the weights DST already holds "
                   "(refused without it: DST may be a shipped checkpoint)")
    args = p.parse_args(argv)
    try:
        export(args.src, args.dst, args.replace)
    except CheckpointError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # DST under a file, a read-only place, a full disk
        print(f"error: {args.dst}: cannot write there ({err.strerror or err})", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
