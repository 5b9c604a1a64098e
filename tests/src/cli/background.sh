# Sourced by CLI tests that start processes in the background: `$work`, a fresh folder, and
# `pids`, the processes to stop; both are cleaned up however the test ends.
work="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
