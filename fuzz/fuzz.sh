#!/usr/bin/env bash
# Runs the libFuzzer targets of a PACKTUNE_BUILD_FUZZ build (docs/fuzzing.md), each from its
# seeds (fuzz/make_seeds) with a fresh corpus, `jobs` targets at a time, and prints one JSON
# object: per target the inputs run, execs/s, coverage (libFuzzer's cov: edges and ft:
# features), the corpus it grew, its peak memory and its crashes (for checkpoints also the
# crashes of HDF5 itself that the driver's child-process verification contains). Exits 1 when
# any target crashed (its input is kept under OUT/TARGET/crashes/ and named on stderr), 2 on
# bad usage.
#
# Usage: fuzz/fuzz.sh [--build DIR] [--runs N | --seconds S] [--jobs J] [--out DIR] [TARGET...]
#   --build DIR   the fuzz build folder (default build-fuzz)
#   --runs N      inputs per target (libFuzzer -runs); --seconds S: time per target instead
#   --jobs J      targets run at once (default: the number of cores)
#   --out DIR     keep corpora, logs and crashes there (default: a temporary folder, removed
#                 at the end unless something crashed)
#   TARGET        message handshake config actor_groups checkpoint (default: all five)
set -euo pipefail
cd "$(dirname "$0")/.."

build=build-fuzz
runs=""
seconds=""
jobs=$(nproc)
out=""
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    message|handshake|config|actor_groups|checkpoint) targets+=("$1"); shift ;;
    *) sed -n '2,16p' "$0" >&2; exit 2 ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(message handshake config actor_groups checkpoint)
if [ -z "$runs" ] && [ -z "$seconds" ]; then seconds=20; fi
seeds="$build/fuzz/seeds"
checkpoint_timeout=1
checkpoint_lsan="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$PWD/fuzz/checkpoint_hdf5.lsan"
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
for t in "${targets[@]}"; do
  [ -x "$build/fuzz/fuzz_$t" ] || { echo "fuzz: no $build/fuzz/fuzz_$t; build the fuzz targets first (docs/fuzzing.md)" >&2; exit 2; }
done
[ -d "$seeds/message" ] || { echo "fuzz: no seeds in $seeds; build the fuzz_seeds target" >&2; exit 2; }

keep_out=1
if [ -z "$out" ]; then out=$(mktemp -d "${TMPDIR:-/tmp}/packtune-fuzz.XXXXXX"); keep_out=0; fi
mkdir -p "$out"

# Inputs larger than this are not tried: the seeds (a checkpoint is a few KiB) plus room to
# grow; libFuzzer's default would be the largest seed.
max_len() { case "$1" in checkpoint) echo 16384 ;; config) echo 8192 ;; *) echo 4096 ;; esac; }

run_one() {
  local t=$1 dir="$out/$t"
  rm -rf "$dir"
  mkdir -p "$dir/corpus" "$dir/crashes"
  local limit=()
  if [ -n "$runs" ]; then limit+=(-runs="$runs"); fi
  if [ -n "$seconds" ]; then limit+=(-max_total_time="$seconds"); fi
  # -rss_limit_mb: an input that makes the code allocate without bound is a finding too.
  # HDF5 1.10 crashes on some damaged files by itself: the checkpoint target runs in
  # libFuzzer's fork mode, which goes on after a crash, and each crash is judged below.
  # An input takes about a millisecond; HDF5's loops on damaged files took 10 s each at
  # -timeout=10, most of that target's time. Its crash reports are symbolized when judged,
  # not in the run, and its leaks are HDF5's own (checkpoint_hdf5.lsan says why).
  local timeout=10 sanitizers=()
  if [ "$t" = checkpoint ]; then
    limit+=(-fork=1 -ignore_crashes=1)
    timeout=$checkpoint_timeout
    sanitizers=(ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}symbolize=0" LSAN_OPTIONS="$checkpoint_lsan")
  fi
  local start=$SECONDS
  set +e
  env "${sanitizers[@]}" PACKTUNE_FUZZ_DIR="$dir" "$build/fuzz/fuzz_$t" "${limit[@]}" -max_len="$(max_len "$t")" -rss_limit_mb=2048 \
    -timeout="$timeout" -print_final_stats=1 -artifact_prefix="$dir/crashes/" "$dir/corpus" "$seeds/$t" >"$dir/log" 2>&1
  echo $? >"$dir/rc"
  set -e
  echo $((SECONDS - start)) >"$dir/seconds"
  [ "$t" = checkpoint ] && judge_hdf5_crashes "$dir"
  return 0
}

# A checkpoint crash is HDF5's own when the report's first frame outside the sanitizers'
# runtime (frames of the fuzz binary without a source file) is in libhdf5, and the driver's
# path for uploads (verify_checkpoint, in a child process) refuses the same input with an
# InputError. Those move to DIR/hdf5/. A crash, an oom or a leak that the input alone does
# not reproduce (HDF5 keeps state between the files of one process; packtune's reader keeps
# none) and that verify_checkpoint refuses too moves to DIR/unreproduced/. The rest stay in
# DIR/crashes/ and fail the run.
judge_hdf5_crashes() {
  local dir=$1 input report frame judge_timeout
  mkdir -p "$dir/hdf5" "$dir/unreproduced"
  for input in "$dir"/crashes/*; do
    [ -f "$input" ] || continue
    # No RSS thread (-rss_limit_mb=0): a timeout's SIGALRM can land on it rather than on the
    # main thread (when the main thread already has a signal pending), and the report then
    # shows that thread's stack, with no HDF5 frame. A single allocation over 2 GiB is still
    # caught, in the main thread, and a hang is still stopped after the timeout.
    # Only a timeout input is re-run under the fuzzing timeout. Any other gets 30 s: the
    # report's stack is symbolized after the error, and under load that took more than 1 s,
    # so the alarm cut the report before its first frame (CI, an oom in H5Fopen).
    judge_timeout=30
    [[ "$(basename "$input")" == timeout-* ]] && judge_timeout=$checkpoint_timeout
    report=$(LSAN_OPTIONS="$checkpoint_lsan" PACKTUNE_FUZZ_DIR="$dir" "$build/fuzz/fuzz_checkpoint" -rss_limit_mb=0 \
      -malloc_limit_mb=2048 -timeout="$judge_timeout" "$input" 2>&1 || true)
    printf '%s\n' "$report" >"$input.judge.log"
    frame=$(grep -E '^ +#[0-9]+ ' <<<"$report" | grep -vE 'libclang_rt|libc\.so|sysdeps/|fuzz_checkpoint\+0x' | head -1 || true)
    # The driver gives HDF5 10 s; 2 s here refuses the same hangs without a 10 s wait for each
    # (an input HDF5 finished between 2 and 10 s would still have to pass every CRC).
    PACKTUNE_FUZZ_VERIFY=2 PACKTUNE_FUZZ_DIR="$dir" "$build/fuzz/fuzz_checkpoint" -timeout=30 "$input" >"$input.verify.log" 2>&1 ||
      continue
    # A hang is interrupted wherever it happens to be: in an allocation or a libc call of
    # HDF5's loop, or in packtune's reader between HDF5 calls (its loops are bounded by the
    # file's size). It is HDF5's when any frame of the stack is in libhdf5.
    if [[ "$(basename "$input")" == timeout-* ]] && grep -qE '^ +#[0-9]+ .*libhdf5' <<<"$report"; then
      frame=libhdf5
    fi
    if [[ "$frame" == *libhdf5* ]]; then
      mv "$input" "$input.judge.log" "$input.verify.log" "$dir/hdf5/"
    elif ! grep -qE 'ERROR: |runtime error' <<<"$report"; then
      mv "$input" "$input.judge.log" "$input.verify.log" "$dir/unreproduced/"
    fi
  done
}

running=0
for t in "${targets[@]}"; do
  run_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
done
wait

failed=0
json="{"
first=1
for t in "${targets[@]}"; do
  dir="$out/$t"
  log="$dir/log"
  stat() { sed -n "s/^stat::$1: *//p" "$log" | tail -1; }
  # The last status line: "#N  DONE  cov: C ft: F corp: U/S ..." (or the last pulse).
  status=$(grep -E '^#[0-9]+' "$log" | grep -E 'cov: ' | tail -1 || true)
  cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$status")
  ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$status")
  corp=$(sed -nE 's/.* corp: ([0-9]+)\/.*/\1/p' <<<"$status")
  crashes=$(find "$dir/crashes" -type f ! -name '*.log' | wc -l)
  hdf5=0
  unreproduced=0
  [ -d "$dir/hdf5" ] && hdf5=$(find "$dir/hdf5" -type f ! -name '*.log' | wc -l)
  [ -d "$dir/unreproduced" ] && unreproduced=$(find "$dir/unreproduced" -type f ! -name '*.log' | wc -l)
  rc=$(cat "$dir/rc")
  # Fork mode exits with a crashed job's code after crashes it went on from; they are judged
  # one by one instead. A run that did not get to its end still fails.
  if [ "$t" = checkpoint ] && [ "$crashes" -eq 0 ] && grep -q '^INFO: exiting: ' "$log"; then rc=0; fi
  if [ "$crashes" -gt 0 ] || [ "$rc" -ne 0 ]; then
    failed=1
    echo "fuzz: fuzz_$t failed (exit $rc); log $log" >&2
    # Each input left, with why it stayed: its re-run's error and first frame, and the
    # driver's path's last line (CI keeps only this output).
    while IFS= read -r -d '' input; do
      echo "fuzz:   input $input" >&2
      if [ -f "$input.judge.log" ]; then
        grep -m1 -E 'ERROR: |runtime error' "$input.judge.log" | sed 's/^/fuzz:     re-run: /' >&2 || echo "fuzz:     re-run: no error" >&2
        grep -E '^ +#[0-9]+ ' "$input.judge.log" | grep -vE 'libclang_rt|libc\.so|sysdeps/|fuzz_checkpoint\+0x' | head -3 |
          sed 's/^ */fuzz:     frame: /' >&2 || true
      fi
      if [ -f "$input.verify.log" ]; then tail -1 "$input.verify.log" | sed 's/^/fuzz:     driver path: /' >&2; fi
    done < <(find "$dir/crashes" -type f ! -name '*.log' -print0)
    grep -m1 -E 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|terminate called|==ERROR' "$log" >&2 || tail -5 "$log" >&2
  fi
  executed=$(stat number_of_executed_units)
  speed=$(stat average_exec_per_sec)
  rss=$(stat peak_rss_mb)
  if [ "$t" = checkpoint ]; then  # fork mode's status line: "#N: cov: C ft: F corp: U exec/s E ..."
    executed=$(sed -nE 's/^#([0-9]+):.*/\1/p' <<<"$status")
    cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$status")
    corp=$(sed -nE 's/.* corp: ([0-9]+).*/\1/p' <<<"$status")
    speed=$(awk -v n="${executed:-0}" -v s="$(cat "$dir/seconds")" 'BEGIN { if (s > 0) printf "%d", n / s; else print 0 }')
  fi
  [ $first -eq 1 ] || json+=", "
  first=0
  json+="\"$t\": {\"runs\": ${executed:-null}, \"seconds\": $(cat "$dir/seconds"),"
  json+=" \"execs_per_second\": ${speed:-null}, \"coverage_edges\": ${cov:-null}, \"features\": ${ft:-null},"
  json+=" \"corpus\": ${corp:-null}, \"peak_rss_mb\": ${rss:-null}, \"crashes\": $crashes"
  [ "$t" = checkpoint ] && json+=", \"hdf5_crashes_contained\": $hdf5, \"unreproduced\": $unreproduced"
  json+="}"
done
json+="}"
echo "$json"
if [ $failed -eq 0 ] && [ $keep_out -eq 0 ]; then rm -rf "$out"; fi
if [ $failed -ne 0 ] && [ $keep_out -eq 0 ]; then echo "fuzz: corpora, logs and crashes kept in $out" >&2; fi
exit $failed
