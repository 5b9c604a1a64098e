# Sourced by CLI tests that start processes in the background: `$work`, a fresh folder, and
# `pids`, the processes to stop; both are cleaned up however the test ends. `$compare` compares
# two results.jsonl report by report.
work="$(mktemp -d)"
echo "work: $work"
pids=()
compare="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../scripts" && pwd)/compare_results.py"
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# A private 10.x.y prefix for a /24 of test addresses that no interface here uses, picked from
# `$1` (a pid), so that two runs of a test do not meet.
private_net() {
  local id="$1" net
  while :; do
    net="10.$((64 + id % 128)).$(((id / 128) % 256))"
    ip -4 -o addr | grep -qF " $net." || break
    id=$((id + 7919))
  done
  echo "$net"
}

# free_port SEED: a port for a driver to listen on (the rule packtune-ssh uses).
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../scripts" && pwd)/free_port.sh"
