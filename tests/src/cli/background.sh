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

# A tcp port for a driver to listen on: below the kernel's ephemeral range, where no outgoing
# connection takes its source port (a port that bind(0) handed out and gave back may be taken by
# the next connect before the driver binds it), and with no socket on it now.
free_port() {
  local low=32768 span port
  read -r low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
  span=$((low - 20000))
  [ "$span" -gt 100 ] || span=12000
  port=$((20000 + $$ % span))
  while [ -n "$(ss -Htan "sport = :$port" 2>/dev/null)" ]; do port=$((port + 1)); done
  echo "$port"
}
