#!/usr/bin/env bash
# Train NSODE on a lent GPU machine for a fixed wall-clock budget, across several device calls.
#
#   scripts/gpu_session.sh start MINUTES   # generate fresh data on the CPU cores and start two runs
#   scripts/gpu_session.sh watch SECONDS   # print progress for SECONDS, then copy weights to $OUT
#
# `start` detaches (setsid) so that the runs outlive the call while the machine stays lent;
# `watch` keeps the machine busy and brings back each run's latest weights, so a lost machine
# costs at most one call. Two runs share the GPU and the data: `tiny` continued from the shipped
# nsode-eps-scaled, and `mini` from scratch (the model-size comparison at equal GPU time).
# Everything lives under $RUNS (default /root/nsode-runs), outside the repository.
set -uo pipefail
RUNS=${RUNS:-/root/nsode-runs}
PY=${PY:-python3}
cmd=${1:?start or watch}

if [ "$cmd" = start ]; then
  minutes=${2:?MINUTES}
  mkdir -p "$RUNS"/{data,runs}
  rm -rf "$RUNS/src" && mkdir -p "$RUNS/src" && cp -r core nsode "$RUNS/src/"
  cd "$RUNS/src" || exit 1
  export PYTHONPATH="$RUNS/src" OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1
  setsid bash -c "
    $PY -m nsode.data generate --out $RUNS/data/cpu-s2070 --n-skeletons 40000 --seed 2070 -j 8 -q \
        --config nsode/checkpoints/data_cpu.yaml > $RUNS/gen-cpu.log 2>&1 &
    $PY -m nsode.data generate --out $RUNS/data/science-s2071 --n-skeletons 2000 --seed 2071 -j 2 -q \
        --config nsode/checkpoints/data_science.yaml > $RUNS/gen-sci.log 2>&1 &
    until ls $RUNS/data/cpu-s2070/shards/*.parquet >/dev/null 2>&1 && \
          ls $RUNS/data/science-s2071/shards/*.parquet >/dev/null 2>&1; do sleep 5; done
    common='--data $RUNS/data/cpu-s2070 $RUNS/data/science-s2071 --weights 1 2 --input-scaling pow2
            --batch-size 256 --workers 6 --threads 2 --schedule cosine-time --max-minutes $minutes
            --steps 100000000 --eval-every 1500 --val-batches 8 --val-decode 0'
    $PY -m nsode.train \$common --preset tiny --init nsode/checkpoints/nsode-eps-scaled --lr 2e-4 --warmup 300 \
        --seed 21 --out $RUNS/runs/gpu-tiny > $RUNS/train-tiny.log 2>&1 &
    $PY -m nsode.train \$common --preset mini --lr 6e-4 --warmup 1000 \
        --seed 22 --out $RUNS/runs/gpu-mini > $RUNS/train-mini.log 2>&1 &
    wait" > "$RUNS/daemon.log" 2>&1 < /dev/null &
  echo "started: $(date)"
  exit 0
fi

if [ "$cmd" = watch ]; then
  seconds=${2:?SECONDS}
  end=$((SECONDS + seconds))
  while [ $SECONDS -lt $end ]; do
    sleep 60
    echo "== $(date +%T) load $(cut -d' ' -f1 /proc/loadavg); $(nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader)"
    for f in "$RUNS"/gen-*.log "$RUNS"/train-*.log; do [ -f "$f" ] && echo "$(basename "$f"): $(tail -c 300 "$f" | tail -n 1)"; done
    ls "$RUNS"/data/*/shards 2>/dev/null | grep -c parquet | sed 's/^/shards: /'
    pgrep -f nsode.train >/dev/null || { echo "no training process"; break; }
  done
  for run in tiny mini; do
    src="$RUNS/runs/gpu-$run/last"
    [ -d "$src" ] || continue
    mkdir -p "$OUT/$run"
    cp "$src/model.safetensors" "$src/config.json" "$src/training_state.json" "$OUT/$run/"
    cp "$RUNS/runs/gpu-$run/log.csv" "$OUT/$run/"
  done
  tail -n 5 "$RUNS"/train-*.log "$RUNS/daemon.log"
fi
