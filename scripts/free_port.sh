# Sourced by scripts/packtune-ssh and the CLI tests (tests/e2e/prelude.sh); the Slurm
# batch script keeps a copy of the rule, since Slurm runs a copy of it without its siblings.
#
# free_port SEED: a tcp port for a driver to listen on, 20000 + SEED mod the span up to the
# kernel's ephemeral range (32768 up by default), or the next one with no socket on it. Below
# that range because an outgoing connection may take any port in it as its source port (ssh's
# own, or a port that bind(0) handed out and gave back), and a driver that binds it then fails
# with "Address already in use"; no socket in any state, listening or connected.
free_port() {
  local low=32768 span port
  read -r low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
  span=$((low - 20000))
  [ "$span" -gt 100 ] || span=12000  # an unusual range: keep to 20000 up and rely on the check
  port=$((20000 + $1 % span))
  while [ -n "$(ss -Htan "sport = :$port" 2>/dev/null)" ]; do port=$((port + 1)); done
  echo "$port"
}
