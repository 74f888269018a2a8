#!/usr/bin/env bash
# Train NSODE on a lent GPU machine for a fixed wall-clock budget, across several device calls.
#
#   scripts/gpu_session.sh start MINUTES [PRESET]  # fresh data on the CPU cores, one detached run
#   scripts/gpu_session.sh watch SECONDS           # progress for SECONDS, then weights to $OUT
#
# PRESET tiny (default) continues the shipped nsode-eps-scaled; any other preset starts from
# scratch. `start` detaches (setsid) so that the run outlives the call while the machine stays
# lent (30 s between calls); `watch` keeps it busy and brings back the run's best and latest
# weights, so a lost machine costs at most one call. State lives under $RUNS, outside the repo.
#
# Measured in session 21 (model card, "A GPU session"): a GPU run reads a generated corpus of
# 160k solutions ten times in about five minutes and then overfits its skeletons, so data, not
# compute, is the limit. Hence the generators run for the whole session, growing the same two
# folders in rounds (a larger --n-skeletons extends a folder; training re-lists its shards on
# every pass), the first round small so that training starts within a minute or two.
set -uo pipefail
RUNS=${RUNS:-/root/nsode-runs}
PY=${PY:-python3}
PAPER_ROUNDS=${PAPER_ROUNDS:-1000 4000 10000 20000 40000 80000 160000}  # skeletons asked, cumulative
SCIENCE_ROUNDS=${SCIENCE_ROUNDS:-300 1000 2000}
cmd=${1:?start or watch}

if [ "$cmd" = start ]; then
  minutes=${2:?MINUTES}
  preset=${3:-tiny}
  if [ "$preset" = tiny ]; then from="--init nsode/checkpoints/nsode-eps-scaled --lr 1e-4 --warmup 300"
  else from="--lr 6e-4 --warmup 1000"; fi
  mkdir -p "$RUNS"/{data,runs}
  rm -rf "$RUNS/src" && mkdir -p "$RUNS/src" && cp -r core nsode "$RUNS/src/"
  cd "$RUNS/src" || exit 1
  export PYTHONPATH="$RUNS/src" OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1
  paper=$RUNS/data/cpu-s2080 science=$RUNS/data/science-s2081
  setsid bash -c "
    for n in $PAPER_ROUNDS; do
      $PY -m nsode.data generate --out $paper --n-skeletons \$n --seed 2080 -j 8 -q \
          --config nsode/checkpoints/data_cpu.yaml >> $RUNS/gen-cpu.log 2>&1
    done &
    for n in $SCIENCE_ROUNDS; do
      $PY -m nsode.data generate --out $science --n-skeletons \$n --seed 2081 -j 2 -q \
          --config nsode/checkpoints/data_science.yaml >> $RUNS/gen-sci.log 2>&1
    done &
    until ls $paper/shards/*.parquet >/dev/null 2>&1 && ls $science/shards/*.parquet >/dev/null 2>&1; do
      sleep 5; done
    $PY -m nsode.train --data $paper $science --weights 1 2 --input-scaling pow2 --preset $preset $from \
        --batch-size 256 --workers 6 --threads 2 --schedule cosine-time --max-minutes $minutes \
        --steps 100000000 --eval-every 1000 --val-batches 8 --val-decode 0 --seed 23 \
        --out $RUNS/runs/gpu-$preset > $RUNS/train.log 2>&1
    pkill -f 'nsode.data generate --out $RUNS'" > "$RUNS/daemon.log" 2>&1 < /dev/null &
  echo "started: $(date)"
  exit 0
fi

if [ "$cmd" = watch ]; then
  seconds=${2:?SECONDS}
  end=$((SECONDS + seconds))
  while [ $SECONDS -lt $end ]; do
    sleep 60
    echo "== $(date +%T) load $(cut -d' ' -f1 /proc/loadavg); GPU $(nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader)"
    for f in "$RUNS"/gen-*.log "$RUNS"/train.log; do [ -f "$f" ] && echo "$(basename "$f"): $(tail -n 1 "$f" | tail -c 300)"; done
    pgrep -f nsode.train >/dev/null || { echo "no training process"; break; }
  done
  for run in "$RUNS"/runs/gpu-*; do
    for kind in best last; do
      [ -d "$run/$kind" ] || continue
      mkdir -p "$OUT/$kind"
      cp "$run/$kind/model.safetensors" "$run/$kind/config.json" "$run/$kind/training_state.json" "$OUT/$kind/"
    done
    cp "$run/log.csv" "$OUT/"
  done
  tail -n 5 "$RUNS/train.log" "$RUNS/daemon.log"
fi
