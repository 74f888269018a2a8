#!/usr/bin/env bash
# Train NSODE on a lent GPU machine for a fixed wall-clock budget, in one or more device calls.
#
#   scripts/gpu_session.sh start MINUTES [INIT|PRESET]  # data on the CPU cores, one detached run
#   scripts/gpu_session.sh watch SECONDS                # progress for SECONDS, then results to $OUT
#   scripts/gpu_session.sh fixed DATA...                # (here, before the call) .gpu/fixed: DATA's held-out rows
#
# INIT is a checkpoint folder to continue (default nsode/checkpoints/nsode-eps-scaled; its own input
# path, raw or scaled, is kept); a preset name (tiny, mini, ...) starts from scratch, scale-invariant.
# `start` detaches (setsid) so that the run outlives the call while the machine stays lent (30 s
# between calls); `watch` keeps it busy and brings back to $OUT the run's configs, training states
# and logs (run.tar), its weights as best.safetensors, last.safetensors and step-N.safetensors (the
# latest snapshots that fit; each is model.safetensors of that folder, a snapshot with last's config),
# and the skeleton lists of its data folders (skeletons.tar: the costly half of generation; a CPU
# machine can solve them later). State lives under $RUNS.
#
# Measured in session 21 (model card, "A GPU session"): a GPU run reads a generated corpus of 160k
# solutions ten times in about five minutes and then overfits its skeletons, so data, not compute,
# is the limit. Hence three sources of data, all grown for the whole lease on the machine's cores:
#  - skeleton lists carried in $SEEDED (folders holding a data folder's config.json and
#    skeletons.parquet, searched earlier on a CPU machine with `python -m nsode.data generate
#    --skeletons-only`): the machine only solves them, in
#    rounds, so training starts within a minute or two;
#    A carried folder may be a copy of another's list with a `solution_seed` in its config.json
#    (`generate --solution-seed`): the same skeletons solved again with new constants and initial
#    values, so a list whose family is exhausted still gives new solutions;
#  - a fresh paper-family seed ($FRESH_SEED), searched and solved in rounds; its list comes back.
#  - fresh science-family seeds ($SCIENCE_SEEDS, when nothing is carried): each search re-finds the
#    family's short head with its own constants and initial values, so several seeds multiply the
#    science solutions without a carried list.
# Training re-lists its folders' shards on every pass, so each round joins the run as it lands.
# With FIXED (data folders carried in the tree: `fixed` cuts the learning curves' fixed sets to their
# held-out skeletons, 5% of the rows, since whole folders exceed what a call carries), `watch` also
# measures every snapshot's validation loss on them once training has ended ($OUT/fixed.csv).
set -uo pipefail
RUNS=${RUNS:-/root/nsode-runs}
PY=${PY:-python3}
SEEDED=${SEEDED:-}                                     # folder of carried data folders (optional)
SEEDED_ROUNDS=${SEEDED_ROUNDS:-400 2000 6000 100000}   # skeletons solved, cumulative, per carried folder
FRESH_SEED=${FRESH_SEED:-2080}
FRESH_ROUNDS=${FRESH_ROUNDS:-1000 4000 10000 20000 40000 80000 160000}
SCIENCE_ROUNDS=${SCIENCE_ROUNDS:-300 1000 2000}        # fresh science family, when nothing is carried
SCIENCE_SEEDS=${SCIENCE_SEEDS:-$((FRESH_SEED + 1))}     # one folder each, when nothing is carried
SCIENCE_JOBS=${SCIENCE_JOBS:-2}
FIXED=${FIXED:-}
LR=${LR:-1e-4}
DROPOUT=${DROPOUT:-0}                                  # dropout of a run from scratch (a preset)
WORKERS=${WORKERS:-6}
cmd=${1:?start, watch or fixed}

if [ "$cmd" = fixed ]; then
  shift
  for d in "$@"; do
    echo "$(basename "$d"): $($PY -c "import sys; from nsode.train.stream import held_out_copy
print(held_out_copy(sys.argv[1], sys.argv[2]))" "$d" ".gpu/fixed/$(basename "$d")") held-out solutions in .gpu/fixed"
  done
  exit 0
fi

if [ "$cmd" = start ]; then
  minutes=${2:?MINUTES}
  from=${3:-nsode/checkpoints/nsode-eps-scaled}
  if [ -d "$from" ]; then init="--init $(realpath "$from") --lr $LR --warmup 300"
  else init="--preset $from --input-scaling pow2 --lr 6e-4 --warmup 1000 --dropout $DROPOUT"; fi
  mkdir -p "$RUNS"/{data,runs}
  rm -rf "$RUNS/src" && mkdir -p "$RUNS/src" && cp -r core nsode "$RUNS/src/"
  seeded=()
  if [ -n "$SEEDED" ]; then
    for d in "$SEEDED"/*/; do d=${d%/}; cp -r "$d" "$RUNS/data/"; seeded+=("$RUNS/data/$(basename "$d")"); done
  fi
  cd "$RUNS/src" || exit 1
  export PYTHONPATH="$RUNS/src" OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1
  fresh=$RUNS/data/fresh-s$FRESH_SEED
  gen="$PY -m nsode.data generate -q"
  solve_seeded=""  # one chain per carried folder, with its own seed and config; no searching past its list
  for d in "${seeded[@]}"; do
    read -r seed count solution_seed < <($PY -c "import sys, yaml, pyarrow.parquet as pq
from nsode.data.shards import read_config
config, provenance = read_config(sys.argv[1])
yaml.safe_dump(config.to_dict(), open(sys.argv[1] + '.yaml', 'w'))
print(provenance['seed'], pq.read_metadata(sys.argv[1] + '/skeletons.parquet').num_rows,
      provenance.get('solution_seed', provenance['seed']))" "$d")
    rounds=$(for n in $SEEDED_ROUNDS; do echo $((n < count ? n : count)); done | uniq | tr '\n' ' ')
    solve_seeded+="(for n in $rounds; do $gen --out $d --n-skeletons \$n --seed $seed --solution-seed $solution_seed -j ${SEEDED_JOBS:-1} --config $d.yaml; done >> $RUNS/gen-$(basename "$d").log 2>&1) & "
  done
  data=("$fresh" "${seeded[@]}")
  science_chain=""
  if [ ${#seeded[@]} -eq 0 ]; then
    for seed in $SCIENCE_SEEDS; do
      science=$RUNS/data/science-s$seed
      data+=("$science")
      science_chain+="(for n in $SCIENCE_ROUNDS; do $gen --out $science --n-skeletons \$n --seed $seed -j $SCIENCE_JOBS \
          --config nsode/checkpoints/data_science.yaml; done >> $RUNS/gen-sci-s$seed.log 2>&1) & "
    done
  fi
  weights=${WEIGHTS:-$(printf '1 %.0s' "${data[@]}")}
  setsid bash -c "
    for n in $FRESH_ROUNDS; do
      $gen --out $fresh --n-skeletons \$n --seed $FRESH_SEED -j ${FRESH_JOBS:-8} \
          --config nsode/checkpoints/data_cpu.yaml >> $RUNS/gen-fresh.log 2>&1
    done &
    $science_chain
    $solve_seeded
    until ls $(printf '%s/shards/*.parquet ' "${data[@]}") >/dev/null 2>&1; do sleep 5; done
    $PY -m nsode.train --data ${data[*]} --weights $weights $init \
        --batch-size 256 --workers $WORKERS --threads 2 --schedule cosine-time --max-minutes $minutes \
        --steps 100000000 --eval-every 1000 --snapshot-every ${SNAPSHOT_EVERY:-4000} --val-batches 8 \
        --val-decode 0 --seed 23 --out $RUNS/runs/gpu > $RUNS/train.log 2>&1
    pkill -f 'nsode.data generate -q --out $RUNS'" > "$RUNS/daemon.log" 2>&1 < /dev/null &
  echo "started: $(date); data: ${data[*]}; weights: $weights"
  exit 0
fi

if [ "$cmd" = watch ]; then
  seconds=${2:?SECONDS}
  end=$((SECONDS + seconds))
  while [ $SECONDS -lt $end ]; do
    sleep 30
    echo "== $(date +%T) load $(cut -d' ' -f1 /proc/loadavg); GPU $(nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader)"
    for f in "$RUNS"/gen-*.log "$RUNS"/train.log; do [ -f "$f" ] && echo "$(basename "$f"): $(tail -n 1 "$f" | tail -c 200)"; done
    [ -f "$RUNS/train.log" ] && ! pgrep -f nsode.train >/dev/null && { echo "training has ended"; break; }
  done
  run=$RUNS/runs/gpu
  if [ -n "$FIXED" ] && [ -d "$run/last" ]; then  # snapshots exist at multiples of 1,000 steps (--eval-every)
    snapshots=(); [ -d "$run/snapshots" ] && snapshots=(--runs "$run")
    PYTHONPATH=$PWD $PY benchmarks/nsode_curves.py --losses-only --val-limit 256 --data $FIXED --threads 8 \
        --extra nsode/checkpoints/nsode-eps-scaled "$run/best" "$run/last" "${snapshots[@]}" \
        --out "$OUT/fixed.csv" > "$RUNS/fixed.log" 2>&1 || tail -n 3 "$RUNS/fixed.log"
  fi
  [ -d "$run" ] && tar -C "$RUNS" -cf "$OUT/run.tar" --exclude '*.safetensors' runs/gpu/best runs/gpu/last runs/gpu/log.csv $(cd "$RUNS" && ls gen-*.log)
  # Weights one file each (a file comes back up to 16 MiB; fp32 `tiny` is 4.4 MB, `mini` 11 MB): best,
  # last, then the latest snapshots while 56 of the 64 MiB in all are left (the rest: lists, logs)
  # and 5 of the 8 files a call brings back (run.tar, skeletons.tar and train.log are the others);
  # with fixed.csv, 4: the run's weights with the lowest sum of fixed-set losses first.
  budget=$((56 * 1048576)) slots=5 order=("$run"/best "$run"/last $(ls -d "$run"/snapshots/step-* 2>/dev/null | sort -r))
  if [ -f "$OUT/fixed.csv" ]; then
    slots=4
    mapfile -t order < <($PY -c "import sys, pandas as pd
t = pd.read_csv(sys.argv[1]); t = t[t.checkpoint.str.startswith(sys.argv[2])]
print('\n'.join(t.checkpoint[t.filter(like='val_loss').sum(axis=1).sort_values().index]))" "$OUT/fixed.csv" "$run")
  fi
  for w in "${order[@]}"; do
    [ -f "$w/model.safetensors" ] && [ "$slots" -gt 0 ] || continue
    size=$(stat -c %s "$w/model.safetensors"); [ "$size" -le "$budget" ] || break
    cp "$w/model.safetensors" "$OUT/$(basename "$w").safetensors" && budget=$((budget - size)) slots=$((slots - 1))
  done
  (cd "$RUNS/data" && tar -cf "$OUT/skeletons.tar" */config.json */skeletons.parquet 2>/dev/null)
  cp "$RUNS/train.log" "$OUT/" 2>/dev/null
  for d in "$RUNS"/data/*/; do echo "$(basename "$d"): $(ls "$d/shards" 2>/dev/null | wc -l) shards"; done
  tail -n 5 "$RUNS/train.log" "$RUNS/daemon.log"
fi
