#!/usr/bin/env bash
# gpu_figures: the GPU figures of docs/benchmarks.md, phase by phase, on the lent GPU machine — so that a
# session that is lent one spends its device time measuring, not writing scripts.
#
# On the development machine, once: scripts/gpu-prepare.sh (fills .gpu/). Then `run` (the
# device tool) with carry [".gpu"], each call under its 10-minute limit:
#   bash bench/gpu_figures.sh build hyperband tests
#   bash bench/gpu_figures.sh --resnet-precision bf16 build resnet experiment
#   bash bench/gpu_figures.sh build cnn_always conv trace cnn
#   bash bench/gpu_figures.sh build pack peers
# (a warm machine keeps /tmp/build, so the second build is incremental; a fresh one builds again).
#
# Phases (default: all but tests, in this order):
#   build      .gpu/build.sh: packtune and pack_bench against the image's CUDA LibTorch, plotly.js from .gpu
#   pack       pack_bench --quick: fused packs of K = 1, 32, 128 MLPs and CNNs against one after another
#   conv       pack_bench on conv nets, in fp32, tf32 and bf16, and in fp32 without cuDNN's benchmark mode: the ResNet
#              of the conv goals (3 stages of 2 blocks, 16 channels, batch 128) and the CNN at K = 1, 8, 32; fused
#              against sequential
#   trace      where a fused ResNet step's time goes: pack_bench --trace on the same ResNet at K = 1, 2 and
#              8, fused and sequential, eager (PACKTUNE_CUDA_GRAPHS=0: each kernel on its own) and
#              captured; the 12 costliest kernels of each go to OUT/trace.log, Chrome traces to OUT/trace*/
#   cnn        examples/fashion_mnist_cnn.json on one GPU (--actors 1): wall time, best trial's test accuracy
#   cnn_always the same with "fuse": "always": its unlike widths fused, padded to the widest (does padding pay)
#   resnet     bench/resnet_search.json (the ResNet search of the goals: ASHA eta 3, 27 trials, 1 to 27 epochs,
#              16 or 32 channels) packed and with --max-pack 1: wall times, their ratio, best test accuracies
#   experiment peer_bench's 64 trials x 2 epochs (--max-pack 32) packed twice with one profile cache
#              (the second run should measure no profile), then the plain PyTorch loop
#   hyperband  hyperband_bench --max-epochs 6.75 (49 trials), two rounds: packed against --max-pack 1,
#              and whether each repeats bit for bit, packed also with one unit at a time
#              (mixed_never) and with CUBLAS_WORKSPACE_CONFIG=:16:8 (packed_cublas_ws)
#   peers      peers_bench: packtune, --max-pack 1 and Optuna (from .gpu/wheels) on the GPU; Ray Tune only
#              where it imports (its wheels do not fit in what a device call carries)
#   tests      the suite built with TESTS=ON, the actors' tests on the GPU, without the cluster and
#              faults labels (a third call)
# Each phase runs under its own time limit; its output goes to OUT/PHASE.json (or .txt) and its
# log to OUT/PHASE.log, and OUT/summary.txt gets one line per phase with its key figures. At the
# end everything but summary.txt is packed into OUT/gpu_figures.tgz: the device tool brings back
# only a few files of a call.
#
# Every run of packtune leaves its driver.log and actor logs in OUT/NAME.logs/ (inside the archive):
# where a run's time went, step by step.
#
# Options: --device D (default cuda), --build-dir DIR (default /tmp/build), --out DIR (default
# $OUT, else /tmp/gpu_figures), --packed-only (resnet and experiment run packtune packed alone:
# no --max-pack 1 run, no PyTorch loop; for a run's logs when device time is short),
# --resnet-precision P (the ResNet search in P, e.g. bf16; default its config's: auto, tf32 on a
# GPU), --smoke (the smallest sizes; the ctest bench/gpu_figures_smoke
# runs `--device cpu --smoke pack conv cnn resnet experiment hyperband` against the build tree here).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
device=cuda smoke=0 packed_only=0 resnet_precision= build=/tmp/build out=${OUT:-/tmp/gpu_figures}
phases=()
while [ $# -gt 0 ]; do
  case "$1" in
    --device) device=$2; shift 2 ;;
    --build-dir) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --smoke) smoke=1; shift ;;
    --packed-only) packed_only=1; shift ;;
    --resnet-precision) resnet_precision=$2; shift 2 ;;
    build|pack|conv|trace|cnn|cnn_always|resnet|experiment|hyperband|peers|tests) phases+=("$1"); shift ;;
    -h|--help) sed -n '2,48p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu_figures: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ ${#phases[@]} -gt 0 ] || phases=(build pack conv cnn resnet experiment hyperband peers)
mkdir -p "$out"
build=$(cd "$(dirname "$build")" && pwd)/$(basename "$build")
summary=$out/summary.txt

# What .gpu/build.sh unpacks the carried packages into (set before it runs: on a fresh machine
# the folder appears only then, and the binaries need its ZeroMQ and libsodium); the data set
# travels in .gpu/data.
export LD_LIBRARY_PATH=/opt/debs/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if [ -z "${PACKTUNE_DATA_DIR:-}" ] && [ -d .gpu/data ]; then export PACKTUNE_DATA_DIR=$root/.gpu/data; fi
gpu=$(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null | head -1)
echo "# $(date -u '+%Y-%m-%d %H:%M UTC') $(git rev-parse --short HEAD 2>/dev/null) device $device (${gpu:-no GPU seen}); $(nproc) cores" >> "$summary"

# run_phase NAME LIMIT_S OUTPUT COMMAND...: OUTPUT is the file stdout goes to.
run_phase() {
  local name=$1 limit=$2 output=$3; shift 3
  local start=$SECONDS rc
  echo "gpu_figures: $name: $*" >&2
  # The phases are shell functions: exported, a child bash under timeout runs them.
  timeout -k 10 "$limit" bash -c '"$@"' "$name" "$@" > "$output" 2> "$out/$name.log"
  rc=$?
  local took=$((SECONDS - start)) line
  if [ $rc -eq 0 ] && line=$(figures "$name" "$output"); then
    echo "$name ok ${took}s $line" >> "$summary"
  elif [ $rc -eq 0 ]; then
    echo "$name FAILED: exited 0 but its output $(basename "$output") is not what the phase prints" >> "$summary"
  else
    [ $rc -eq 124 ] && echo "$name: killed after its ${limit} s limit" >> "$out/$name.log"
    echo "$name FAILED rc=$rc ${took}s (log: $name.log) $(tail -2 "$out/$name.log" | tr '\n' ' ' | cut -c1-300)" >> "$summary"
  fi
  echo "gpu_figures: $(tail -1 "$summary")" >&2
  return 0
}

# The figures a phase's output gives, on one line.
figures() {
  python3 - "$1" "$2" <<'EOF' 2>>"$out/$1.log"
import json, sys
name, path = sys.argv[1], sys.argv[2]
text = open(path).read()
if name == "pack" or name.startswith("conv_") or name.startswith("trace_"):
    rows = json.loads(text)
    print("; ".join(f"{r['model']} K={r['k']} fused/sequential {r['fused'] / r['sequential']:.2f}x "
                    f"fused step {r['fused_step_s'] * 1e6:.0f} us" for r in rows if r.get("sequential")))
elif name.startswith("cnn"):
    r = json.loads(text)
    print(f"wall {r['wall_seconds']:.1f} s, best trial {r['trial']} val {r['val_accuracy']:.4f} "
          f"test {r['test_accuracy']}")
elif name == "resnet":
    r = json.loads(text)
    if "max_pack_1" not in r:
        print(f"packed {r['packed']['wall_seconds']:.1f} s (test {r['packed']['test_accuracy']}); no --max-pack 1 run "
              f"(--packed-only)")
        sys.exit(0)
    print(f"packed {r['packed']['wall_seconds']:.1f} s (test {r['packed']['test_accuracy']}), max_pack_1 "
          f"{r['max_pack_1']['wall_seconds']:.1f} s (test {r['max_pack_1']['test_accuracy']}), "
          f"max_pack_1/packed {r['max_pack_1']['wall_seconds'] / r['packed']['wall_seconds']:.2f}x")
elif name == "experiment":
    r = json.loads(text)
    first, second = r["first"]["ways"]["packed"], r["second"]["ways"]
    if "loop" not in second:
        print(f"packed {first['wall_seconds']:.2f} s measuring profiles, {second['packed']['wall_seconds']:.2f} s "
              f"from the cache ({r['profiles']}); no loop (--packed-only)")
        sys.exit(0)
    loop = second["loop"]["wall_seconds"]
    print(f"packed {first['wall_seconds']:.2f} s measuring profiles, {second['packed']['wall_seconds']:.2f} s from "
          f"the cache ({r['profiles']}); loop {loop:.1f} s, loop/packed "
          f"{loop / second['packed']['wall_seconds']:.1f}x")
elif name == "hyperband":
    r = json.loads(text)
    med = r["median_seconds"]
    repeats = ", ".join(f"{w} " + ("yes" if d["equal"] else f"no ({d['metrics_differing']} metrics, "
                                                            f"{d['pairs_only_in_one_run']} pairs in one round)")
                        for w, d in r.get("repeats", {}).items())
    print(f"{r['schedule']}: packed {med.get('packed', 0):.1f} s, max_pack_1 {med.get('max_pack_1', 0):.1f} s, "
          f"max_pack_1/packed {med['max_pack_1'] / med['packed']:.2f}x, ways within 2e-3 {r['same_reports']} "
          f"({'judged' if r.get('judged') == 'all' else 'measured, not judged'}) "
          f"(largest difference {r['largest_report_difference']:.1e}); repeats bit for bit: {repeats or 'one round'}")
elif name == "build":
    print(next((l for l in text.splitlines() if l.startswith("built in")), ""))
elif name == "tests":
    print(next((l for l in text.splitlines() if "tests passed" in l), ""))
elif name == "peers":
    r = json.loads(text)
    ways = ", ".join(f"{n} {w['wall_seconds']:.1f} s best {w['best_val_accuracy']}" for n, w in r["ways"].items())
    def x(v):
        return "never" if v is None else f"{v:.2f}"
    measures = ", ".join(f"{n}: strict {x(v.get('packtune_over_it_to_its_best'))}, same model "
                         f"{x(v.get('packtune_over_it_to_its_best_model'))}" for n, v in r["ratios"].items())
    print(f"{ways}; packtune's time to each way's best over its own: {measures}")
else:
    print(text.strip().splitlines()[-1] if text.strip() else "")
EOF
}

phase_build() {
  [ -f .gpu/build.sh ] || { echo "no .gpu/build.sh: run scripts/gpu-prepare.sh on the development machine" >&2; return 2; }
  local targets="packtune pack_bench" tests=OFF
  [ "${1:-}" = tests ] && { targets=""; tests=ON; }
  # The reference tests' numpy python: Debian's /usr/bin/python3 by default, which the image's lacks.
  TARGETS=$targets TESTS=$tests \
    EXTRA="-DPACKTUNE_PLOTLY_JS=$root/.gpu/plotly.js${PACKTUNE_TEST_PYTHON:+ -DPACKTUNE_REFERENCE_PYTHON=$PACKTUNE_TEST_PYTHON}" \
    bash .gpu/build.sh
}

# phase_cnn [FUSE]: the CNN example, with "fuse" FUSE where given (always: unlike widths padded).
phase_cnn() {
  local name=cnn${1:+_$1}
  local config=$out/$name.config.json
  python3 - "$device" "$smoke" "$config" "${1:-}" <<'EOF' || return 2
import json, sys
device, smoke, path, fuse = sys.argv[1], sys.argv[2] == "1", sys.argv[3], sys.argv[4]
c = json.load(open("examples/fashion_mnist_cnn.json"))
c["device"] = device
if fuse:
    c["fuse"] = fuse
c["actors"] = 1 if device.startswith("cuda") else c.get("actors", 2)  # one actor per GPU
if smoke:
    c["data"].update({"train_size": 1024, "validation_size": 512})
    c["budget"] = {"unit": "epochs", "min": 0.5, "max": 1.5, "report_every": 0.5}
    c["tuner"]["trials"] = 4
json.dump(c, open(path, "w"), indent=2)
EOF
  run_config "$config" "$name"
}

# run_config CONFIG NAME [RUN-ARGS...]: one run of CONFIG in a fresh folder; prints its wall time and
# best trial's figures, and keeps its results.jsonl as OUT/NAME.results.jsonl.
run_config() {
  local config=$1 name=$2 run=/tmp/gpu_figures-$2; shift 2
  rm -rf "$run"
  local start=$SECONDS
  "$build/src/packtune" run "$config" --out "$run" --quiet "$@" >&2 || return 1
  cp "$run/results.jsonl" "$out/$name.results.jsonl"
  keep_logs "$run" "$name"
  python3 - "$run/best.json" $((SECONDS - start)) <<'EOF'
import json, sys
best = json.load(open(sys.argv[1]))
test = best.get("test") or {}
print(json.dumps({"wall_seconds": float(sys.argv[2]), "trial": best.get("trial"),
                  "val_accuracy": best.get("value"),
                  "test_accuracy": test.get("test_accuracy", test.get("accuracy")), "best": best}))
EOF
  rm -rf "$run"
}

# keep_logs RUN NAME: RUN's driver.log and actor logs into OUT/NAME.logs/.
keep_logs() {
  mkdir -p "$out/$2.logs"
  cp "$1/driver.log" "$out/$2.logs/" 2>/dev/null
  cp -r "$1/logs" "$out/$2.logs/actors" 2>/dev/null
  return 0
}

phase_resnet() {
  local config=$out/resnet.config.json
  python3 - "$device" "$smoke" "$config" "$resnet_precision" <<'EOF' || return 2
import json, sys
device, smoke, path, precision = sys.argv[1], sys.argv[2] == "1", sys.argv[3], sys.argv[4]
c = json.load(open("bench/resnet_search.json"))
c["device"] = device
if precision:
    c["precision"] = precision
if smoke:
    c["data"].update({"train_size": 512, "validation_size": 256})
    c["budget"] = {"unit": "epochs", "min": 0.25, "max": 0.75}
    c["tuner"]["trials"] = 3
json.dump(c, open(path, "w"), indent=2)
EOF
  local packed max1
  packed=$(run_config "$config" resnet_packed) || return 1
  if [ "$packed_only" = 1 ]; then echo "{\"packed\": $packed}"; return 0; fi
  max1=$(run_config "$config" resnet_max_pack_1 --max-pack 1) || return 1
  echo "{\"packed\": $packed, \"max_pack_1\": $max1}"
}

phase_experiment() {
  local cache=/tmp/gpu_figures-profiles kept=/tmp/gpu_figures-experiment size=() first second said ways=packed,loop
  [ "$smoke" = 1 ] && size=(--smoke)
  [ "$packed_only" = 1 ] && ways=packed
  # One profile cache for both runs, apart from the user's.
  rm -rf "$cache" "$kept"
  export PACKTUNE_CACHE_DIR=$cache
  first=$("$build/bench/peer_bench" --device "$device" --max-pack 32 --ways packed --json \
          --keep "$kept/first" "${size[@]}") || return 1
  second=$("$build/bench/peer_bench" --device "$device" --max-pack 32 --ways "$ways" --json \
           --keep "$kept/second" "${size[@]}") || return 1
  # What the second run's driver.log says of its profiles.
  said=$(grep -rh "throughput profiles:" "$kept/second" --include=driver.log | head -1 | sed 's/.*throughput profiles: //')
  local run
  for run in first second; do
    keep_logs "$(dirname "$(find "$kept/$run" -name driver.log | head -1)")" "experiment_$run"
  done
  rm -rf "$cache" "$kept"
  python3 -c 'import json, sys; print(json.dumps({"first": json.loads(sys.argv[1]), "second": json.loads(sys.argv[2]),
                                                   "profiles": sys.argv[3]}, indent=1))' \
    "$first" "$second" "${said:-no profile line in driver.log}"
}

phase_peers() {
  # A path: peers_bench checks that the peers' python is an executable file.
  local python=${PACKTUNE_PEERS_PYTHON:-$(command -v python3)} ways=packtune,max_pack_1,optuna
  if ! "$python" -c 'import optuna' 2>/dev/null && [ -d .gpu/wheels ]; then
    # Wheels are zip files: unpacked onto PYTHONPATH they import without pip or a venv.
    local lib=/tmp/gpu_figures-pylib
    python3 -c 'import sys, zipfile; [zipfile.ZipFile(w).extractall(sys.argv[1]) for w in sys.argv[2:]]' \
      "$lib" .gpu/wheels/*.whl || return 2
    export PYTHONPATH=$lib${PYTHONPATH:+:$PYTHONPATH}
  fi
  "$python" -c 'import torch, optuna' || { echo "no torch and optuna for $python" >&2; return 2; }
  if "$python" -c 'import ray.tune' 2>/dev/null; then ways=$ways,ray_tune
  else echo "Ray Tune does not import here: left out" >&2; fi
  local size=()
  [ "$smoke" = 1 ] && size=(--smoke)
  python3 bench/peers_bench.py --config examples/fashion_mnist.json --packtune "$build/src/packtune" \
    --peers-python "$python" --device "$device" --ways "$ways" --peer-timeout 300 --json "${size[@]}"
}

# h5dump and h5copy for the checkpoint test: Debian's, each with its own HDF5 on its own library
# path only (the image's HDF5 is what packtune links, and HDF5 aborts on a version mismatch).
h5tools() {
  [ -d .gpu/h5tools ] || return 0
  local dir=/opt/h5tools tool
  mkdir -p "$dir/bin"
  for f in .gpu/h5tools/*.deb; do dpkg -x "$f" "$dir"; done
  for tool in "$dir"/usr/bin/h5*; do
    printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$dir/usr/lib/x86_64-linux-gnu" "$tool" \
      > "$dir/bin/$(basename "$tool")"
    chmod +x "$dir/bin/$(basename "$tool")"
  done
  export PATH=$dir/bin:$PATH
}

phase_tests() {
  h5tools
  # The shell tests' Python needs h5py and numpy: the image's python3, where /usr/bin/python3 lacks them.
  local py
  for py in /usr/bin/python3 python3 /usr/local/bin/python3; do
    if "$py" -c 'import h5py, numpy' 2>/dev/null; then export PACKTUNE_TEST_PYTHON=$(command -v "$py"); break; fi
  done
  # tuner_bench serves its test functions with it too (bench/tuner_bench_smoke).
  [ -n "${PACKTUNE_TEST_PYTHON:-}" ] && export PACKTUNE_FUNCTIONS_PYTHON=$PACKTUNE_TEST_PYTHON
  # PACKTUNE_TEST_DEVICE puts the fusion equivalence tests (tests/src/actors) on the GPU, graphs included.
  phase_build tests && PACKTUNE_TEST_DEVICE=$device ctest --test-dir "$build" -LE 'cluster|faults' --output-on-failure -j12
}

export root device smoke build out
export packed_only resnet_precision
export -f phase_build phase_cnn phase_resnet phase_experiment run_config keep_logs phase_peers phase_tests h5tools
limit() { if [ "$smoke" = 1 ]; then echo 300; else echo "$1"; fi; }
for phase in "${phases[@]}"; do
  case "$phase" in
    build) run_phase build 480 "$out/build.txt" phase_build ;;
    tests) run_phase tests 560 "$out/tests.txt" phase_tests ;;
    pack)
      if [ "$smoke" = 1 ]; then args=(--smoke --models mlp); else args=(--quick); fi
      run_phase pack "$(limit 240)" "$out/pack.json" "$build/bench/pack_bench" --device "$device" --json "${args[@]}" ;;
    conv)
      if [ "$smoke" = 1 ]; then args=(--smoke --k 1,2 --batch 16); else args=(--seconds 1 --k 1,8,32); fi
      # fp32, tf32 (a GPU's default) and bf16; fp32 again without cuDNN's benchmark mode (on by default
      # since it paid).
      for way in fp32:1 tf32:1 bf16:1 fp32:0; do
        IFS=: read -r precision bench <<< "$way"
        name=conv_$precision$([ "$bench" = 0 ] && echo _no_cudnn_benchmark)
        PACKTUNE_CUDNN_BENCHMARK=$bench run_phase "$name" "$(limit 200)" "$out/$name.json" "$build/bench/pack_bench" \
          --device "$device" --json --precision "$precision" --models resnet,cnn --stages 3 --blocks 2 \
          --modes fused,sequential "${args[@]}"
      done ;;
    trace)
      if [ "$smoke" = 1 ]; then args=(--smoke --k 1,2 --batch 16); else args=(--seconds 0.5 --k 1,2,8); fi
      for graphs in 0 1; do
        PACKTUNE_CUDA_GRAPHS=$graphs run_phase "trace_graphs$graphs" "$(limit 150)" "$out/trace_graphs$graphs.json" \
          "$build/bench/pack_bench" --device "$device" --json --models resnet --stages 3 --blocks 2 \
          --modes fused,sequential --trace "$out/trace_graphs$graphs" "${args[@]}"
      done ;;
    cnn) run_phase cnn "$(limit 420)" "$out/cnn.json" phase_cnn ;;
    cnn_always) run_phase cnn_always "$(limit 420)" "$out/cnn_always.json" phase_cnn always ;;
    resnet) run_phase resnet "$(limit 400)" "$out/resnet.json" phase_resnet ;;
    experiment) run_phase experiment "$(limit 300)" "$out/experiment.json" phase_experiment ;;
    hyperband)
      if [ "$smoke" = 1 ]; then args=(--smoke); else args=(--max-epochs 6.75 --repeat 2); fi
      run_phase hyperband "$(limit 360)" "$out/hyperband.json" python3 bench/hyperband_bench.py \
        --packtune "$build/src/packtune" --device "$device" --ways packed,max_pack_1,mixed_never,packed_cublas_ws \
        --json "${args[@]}" ;;
    peers) run_phase peers "$(limit 420)" "$out/peers.json" phase_peers ;;
  esac
done
cat "$summary"
# The device tool brings back only a few files of a call: one archive beside the summary.
(cd "$out" && find . -mindepth 1 -maxdepth 1 ! -name summary.txt ! -name gpu_figures.tgz -printf '%P\0' |
  xargs -0 -r tar czf gpu_figures.tgz --remove-files)
grep -q FAILED "$summary" && exit 1
exit 0
