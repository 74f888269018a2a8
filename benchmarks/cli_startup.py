"""Where the seconds of a short `python -m bench` command go, each measured in a fresh process.

Rows: importing the CLI; finding one method (`registry.discover(only=...)`, which reads the
method files' source and imports only the file that declares it) against finding every method
(every file imported, as `bench list` and a run without --methods do); and a whole
`bench run --methods METHOD` of one task of one equation, worker start and scoring included.

    python benchmarks/cli_startup.py [--method truth] [--repeat 3]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from odecore.arguments import whole_number

ROOT = Path(__file__).resolve().parents[1]


def seconds(code: str) -> float:
    """Wall seconds of `python -c code` in a fresh process, from the repository root."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - start


def run_seconds(method: str, dataset: Path, out: Path) -> float:
    """Wall seconds of a `bench run` of `method` on the one-task `dataset`, into a new `out`; the
    dataset's solved truth is cached beside `out` (BENCH_CACHE), so every repeat solves it again and
    the repository's cache is left alone."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "bench", "run", "--dataset", str(dataset), "--methods", method,
                    "--noise", "0", "--n", "128", "--quiet", "--out", str(out)], cwd=ROOT, check=True,
                   capture_output=True, env={**os.environ, "BENCH_CACHE": str(out.parent / f"{out.name}-cache")})
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--method", default="truth", help="the method a command names (default truth)")
    parser.add_argument("--repeat", type=whole_number(1), default=3, help="repetitions; the median is reported")
    args = parser.parse_args()
    from bench import registry

    if args.method not in registry.discover(only=(args.method,)):
        sys.exit(f"error: unknown method {args.method!r}")
    find = "import bench.cli; from bench import registry; registry.discover"
    codes = {
        "python start": "pass",
        "import bench.cli": "import bench.cli",
        f"  + discover(only=({args.method!r},))": f"{find}(only=({args.method!r},))",
        "  + discover() (every method file)": f"{find}()",
    }
    timed = {name: [seconds(code) for _ in range(args.repeat)] for name, code in codes.items()}
    with tempfile.TemporaryDirectory() as folder:
        dataset = Path(folder) / "one.json"
        dataset.write_text(json.dumps({"format": "bench-dataset/1", "name": "one", "version": "1",
                                       "equations": [{"id": "decay", "expression": "-0.3*y", "y0": [1.0]}]}))
        timed[f"bench run --methods {args.method} (1 task)"] = [
            run_seconds(args.method, dataset, Path(folder) / f"run-{k}") for k in range(args.repeat)]
    print(f"median of {args.repeat} fresh processes, seconds")
    for name, values in timed.items():
        print(f"  {name:<42} {statistics.median(values):6.2f}")


if __name__ == "__main__":
    main()
