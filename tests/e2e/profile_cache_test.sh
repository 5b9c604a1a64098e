#!/usr/bin/env bash
# The throughput profile cache (docs/planner.md#the-profile-cache): a run keeps the profile its
# actor measured, a second run of the same shapes on the same machine takes it from the cache
# and measures none (its log says so), --fresh-profiles measures again, and `packtune profile`
# shows and clears the cache. Bad input to `packtune profile` is one line and exit 2; a damaged
# cache is a warning for a run, never its failure.
set -euo pipefail
source "$(dirname "$0")/prelude.sh" "$@"

# Four trials of one shape, each its own job on the one CPU actor: the profile asked with the
# first job advances one unit size per round of the pack, and the jobs' rounds outnumber the
# sizes it times (1, 2, 4), so it is back before the run ends, however fast the machine.
tiny_config "$work/config.json" '{"tuner": {"name": "random", "trials": 4}, "max_pack": 4, "fuse": "auto"}'

run() {  # run NAME [ARGS...]: a run into $work/NAME; its driver.log must say how many were measured
  "$packtune" run "$work/config.json" --out "$work/$1" --quiet "${@:2}" >"$work/$1.out" 2>&1 ||
    fail "run $1 exited $?" "$work/$1.out" "$work/$1/driver.log"
}
summary() { grep -o "throughput profiles: [0-9]* measured, [0-9]* from the cache" "$work/$1/driver.log" || true; }

run first
[ "$(summary first)" = "throughput profiles: 1 measured, 0 from the cache" ] ||
  fail "the first run should measure its one shape's profile: '$(summary first)'" "$work/first/driver.log"
[ -f "$PACKTUNE_CACHE_DIR/throughput_profiles.json" ] || fail "no cache file in $PACKTUNE_CACHE_DIR"

run second
[ "$(summary second)" = "throughput profiles: 0 measured, 1 from the cache" ] ||
  fail "the second run should take the profile from the cache: '$(summary second)'" "$work/second/driver.log"
grep -q "throughput profile from the cache (measured 20" "$work/second/driver.log" ||
  fail "the second run's log does not say where its profile came from" "$work/second/driver.log"
if grep -q "profiles the throughput" "$work/second/driver.log"; then
  fail "the second run asked an actor for a profile" "$work/second/driver.log"
fi

run fresh --fresh-profiles
[ "$(summary fresh)" = "throughput profiles: 1 measured, 0 from the cache" ] ||
  fail "--fresh-profiles should measure again: '$(summary fresh)'" "$work/fresh/driver.log"

# packtune profile: one entry, with this run's shape, device and build.
"$packtune" profile >"$work/show.out"
grep -q "^1 throughput profile(s) in $PACKTUNE_CACHE_DIR/throughput_profiles.json" "$work/show.out" ||
  fail "packtune profile does not list the one profile" "$work/show.out"
"$packtune" profile --json >"$work/show.json"
"$py" - "$work/show.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
(p,) = doc["profiles"]
assert p["shape"].startswith("mlp"), p
assert "thread" in p["device_model"] and p["build"].startswith("LibTorch"), p
assert p["data"].startswith("images 1x28x28, 10 classes"), p
assert p["max_members"] == 4 and p["points"][0]["members"] == 1 and p["points"][0]["seconds"] > 0, p
PY

# Bad input: one line, exit 2.
code=0
"$packtune" profile --device x >"$work/bad.out" 2>&1 || code=$?
[ "$code" -eq 2 ] && [ "$(wc -l <"$work/bad.out")" -eq 1 ] || fail "--device without --clear: exit $code" "$work/bad.out"

"$packtune" profile --clear --device "no such device" | grep -q "^removed 0 throughput profile" ||
  fail "--clear --device of no device should remove nothing"
"$packtune" profile --clear | grep -q "^removed 1 throughput profile" || fail "--clear should remove the profile"
[ ! -e "$PACKTUNE_CACHE_DIR/throughput_profiles.json" ] || fail "the cache file is still there after --clear"

# A damaged cache: `packtune profile` says so in one line (exit 2); a run warns, measures and
# replaces the file.
echo "{not json" >"$PACKTUNE_CACHE_DIR/throughput_profiles.json"
code=0
"$packtune" profile >"$work/damaged.out" 2>&1 || code=$?
[ "$code" -eq 2 ] && [ "$(wc -l <"$work/damaged.out")" -eq 1 ] && grep -q "profile --clear" "$work/damaged.out" ||
  fail "a damaged cache: exit $code" "$work/damaged.out"
run damaged
grep -q "throughput profile cache cannot be read" "$work/damaged/driver.log" ||
  fail "the run did not warn of the damaged cache" "$work/damaged/driver.log"
[ "$(summary damaged)" = "throughput profiles: 1 measured, 0 from the cache" ] ||
  fail "with a damaged cache the run should measure: '$(summary damaged)'" "$work/damaged/driver.log"
"$packtune" profile >/dev/null || fail "the run did not replace the damaged cache"
echo "profile cache: ok"
