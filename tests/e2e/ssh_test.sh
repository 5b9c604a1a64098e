#!/usr/bin/env bash
# scripts/packtune-ssh against two "hosts" made on this machine: network namespaces joined to
# this one by veth pairs, each running its own sshd (test host keys, a test client key, own
# config, root login by key only) in a mount namespace of its own in which /tmp is a fresh
# tmpfs, so no host sees the driver's output, checkpoints or this test's files, and each
# host's /tmp (where packtune-ssh puts keys and work folders) is its own.
#  1. A Hyperband experiment with promotions, run over ssh on the two hosts, reports the same
#     (trial, budget, metrics) as the same experiment run by plain `packtune run` here, within
#     2e-3; afterwards nothing of the run is left on either host (processes, folders).
#  2. SIGTERM to packtune-ssh mid-run: the driver keeps its reports, and again nothing is left.
# Usage: ssh_test.sh PACKTUNE
set -euo pipefail
work_template=/tmp/packtune-ssh-test.XXXXXX  # results: hidden from the hosts (/tmp is their own)
source "$(dirname "$0")/prelude.sh" "$@"
packtune_ssh="$here/../../scripts/packtune-ssh"

if [ "$(id -u)" -ne 0 ]; then echo "SKIPPED: network namespaces and sshd need root"; exit 77; fi
for tool in ip unshare nsenter ssh scp ssh-keygen /usr/sbin/sshd python3 ss; do
  command -v "$tool" >/dev/null || { echo "FAILED: $tool is missing; run scripts/setup.sh"; exit 1; }
done

# Names and a private /24 from this shell's pid, so that two runs of the test (two worktrees)
# do not meet; a /24 already on this machine is skipped.
net="$(private_net $$)"
hosts=(0 1)
ns_name() { echo "ptssh-$$-$1"; }
veth_name() { echo "pts$$h$1"; }           # at most 15 characters
host_ip() { echo "$net.$((4 * $1 + 2))"; }   # a /30 per host: .1/.2, .5/.6
root_ip() { echo "$net.$((4 * $1 + 1))"; }

build_dir="$(dirname "$(dirname "$(readlink -f "$packtune")")")"  # build/src/packtune -> build
build_top="$(echo "$build_dir" | sed -n 's#^/tmp/\([^/]*\).*#\1#p')"  # its folder in /tmp, if there
sshdir="$(mktemp -d /tmp/packtune-ssh-hosts.XXXXXX)" # sshd's files, bound into each host
sshd_pids=()
script_pid=""
cleanup() {
  local code=$? i pid
  trap - EXIT
  [ -z "$script_pid" ] || kill -TERM "$script_pid" 2>/dev/null || true
  for i in "${hosts[@]}"; do
    ns="$(ns_name "$i")"
    if ip netns list | grep -qw "$ns"; then
      # Everything in the namespace is ours: sshd, sessions, whatever a failed run left.
      for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
      ip netns del "$ns" 2>/dev/null || true
    fi
    ip link del "$(veth_name "$i")" 2>/dev/null || true
  done
  [ -z "$script_pid" ] || { sleep 1; kill -KILL "$script_pid" 2>/dev/null || true; }
  if [ "$code" -ne 0 ]; then
    for f in "$sshdir"/h*/sshd.log "$work"/*.log; do
      [ -f "$f" ] && { echo "--- $f (last 25 lines)"; tail -n 25 "$f"; }
    done
  fi
  rm -rf "$sshdir"
  cleanup_work
  exit "$code"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

ssh-keygen -q -t ed25519 -N '' -C packtune-test-client -f "$sshdir/client_key"
: > "$sshdir/known_hosts"
for i in "${hosts[@]}"; do
  ns="$(ns_name "$i")"; veth="$(veth_name "$i")"; d="$sshdir/h$i"
  mkdir -m 700 "$d"
  ssh-keygen -q -t ed25519 -N '' -C "packtune-test-host-$i" -f "$d/host_key"
  cp "$sshdir/client_key.pub" "$d/authorized_keys"
  echo "[$(host_ip "$i")]:2222 $(cut -d' ' -f1,2 "$d/host_key.pub")" >> "$sshdir/known_hosts"
  # Paths as the host sees them: its /run is a fresh tmpfs with this folder bound in.
  cat > "$d/sshd_config" <<EOF
Port 2222
ListenAddress $(host_ip "$i")
HostKey /run/packtune-host/host_key
PidFile /run/packtune-host-sshd.pid
AuthorizedKeysFile /run/packtune-host/authorized_keys
UsePAM no
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
StrictModes no
PrintMotd no
Subsystem sftp internal-sftp
LogLevel VERBOSE
EOF
  ip netns add "$ns"
  ip link add "$veth" type veth peer name "${veth}n"
  ip link set "${veth}n" netns "$ns"
  ip addr add "$(root_ip "$i")/30" dev "$veth"
  ip link set "$veth" up
  ip netns exec "$ns" ip addr add "$(host_ip "$i")/30" dev "${veth}n"
  ip netns exec "$ns" ip link set "${veth}n" up
  ip netns exec "$ns" ip link set lo up
  # The driver listens on the first host's route source (.1); the other host reaches it through
  # its own link, since the root namespace answers for all its addresses.
  ip netns exec "$ns" ip route add default via "$(root_ip "$i")"
  # The build under test may itself live in /tmp (a CI checkout): its build folder (the binary
  # and the libraries its RUNPATH names) is bound back at the same path after /tmp is
  # replaced; the test's folders stay hidden.
  ip netns exec "$ns" unshare --mount --propagation private bash -c '
    set -e
    mount -t tmpfs -o mode=755 packtune-run /run
    mkdir -m 755 /run/sshd /run/packtune-host /run/packtune-build
    mount --bind "$1" /run/packtune-host
    mount --bind "$2" /run/packtune-build
    mount -t tmpfs -o mode=1777 packtune-tmp /tmp
    case "$2" in /tmp/*) mkdir -p "$2"; mount --bind /run/packtune-build "$2" ;; esac
    exec /usr/sbin/sshd -D -e -f /run/packtune-host/sshd_config' _ "$d" "$build_dir" > "$d/sshd.log" 2>&1 &
  sshd_pids+=($!)
  disown "$!"  # killed at cleanup: no "Killed" line from bash
done

# One thread per actor, as threads_per_actor says for the run here: BLAS sums in another order
# with two threads, and one validation image in 256 can tip.
ssh_options=(--node-threads 1 --ssh-port 2222 --identity "$sshdir/client_key" -o "UserKnownHostsFile=$sshdir/known_hosts"
  -o StrictHostKeyChecking=yes -o IdentitiesOnly=yes -o ConnectTimeout=10)
on_host() {  # $1: host index; the rest: a remote command
  local i="$1"; shift
  ssh -p 2222 -i "$sshdir/client_key" -o "UserKnownHostsFile=$sshdir/known_hosts" -o StrictHostKeyChecking=yes \
    -o IdentitiesOnly=yes -o BatchMode=yes -o ConnectTimeout=10 -T "root@$(host_ip "$i")" "$@" </dev/null
}
for i in "${hosts[@]}"; do
  for _ in $(seq 1 50); do on_host "$i" true 2>/dev/null && break; sleep 0.2; done
  on_host "$i" true || { echo "FAILED: cannot log in to host $i"; exit 1; }
  # The isolation the test relies on: the hosts do not see this test's folder.
  if on_host "$i" test -e "$work"; then echo "FAILED: host $i sees $work"; exit 1; fi
done

# What must be left on a host after a run: its sshd and nothing else; no packtune folder.
check_hosts_clean() {  # $1: what ran
  local i host_pids extra
  for i in "${hosts[@]}"; do
    host_pids="$(ip netns pids "$(ns_name "$i")" | sort -n | tr '\n' ' ')"
    extra=""
    for pid in $host_pids; do [ "$pid" = "${sshd_pids[$i]}" ] || extra+="$pid "; done
    if [ -n "$extra" ]; then
      echo "FAILED: after $1, host $i still runs:"; ps -o pid=,args= -p "${extra// /,}" || true; exit 1
    fi
    # The build folder bound in (when it lives in /tmp) is the test's, not the run's.
    if [ -n "$(nsenter -t "${sshd_pids[$i]}" -m ls -A /tmp | grep -vx -- "$build_top" || true)" ]; then
      echo "FAILED: after $1, host $i's /tmp holds:"; nsenter -t "${sshd_pids[$i]}" -m ls -lA /tmp; exit 1
    fi
  done
  # Nor any process here that belongs to the run (the driver's arguments name $work).
  if pgrep -f -- "$work/" > /dev/null; then
    echo "FAILED: after $1, processes here still run:"; pgrep -a -f -- "$work/"; exit 1
  fi
}

cat > "$work/hosts" <<EOF
# two hosts, one CPU actor each
root@$(host_ip 0) 1
root@$(host_ip 1) 1   # the second
EOF
# Hyperband, eta 2 over budgets 0.125..0.5 epochs: 10 trials in three brackets, 4 of them
# promoted from a checkpoint, which another host may have written.
cat > "$work/config.json" <<'JSON'
{
  "seed": 23,
  "budget": {"unit": "epochs", "min": 0.125, "max": 0.5, "report_every": 0.125},
  "tuner": {"name": "hyperband", "eta": 2},
  "threads_per_actor": 1,
  "max_pack": 2, "fuse": "never",
  "data": {"train_size": 2048, "validation_size": 256},
  "model": {"family": "mlp", "depth": 1, "width": 32, "batch_size": 64, "optimizer": "sgd"},
  "space": {"lr": {"type": "loguniform", "low": 0.01, "high": 0.3},
            "momentum": {"type": "uniform", "low": 0.0, "high": 0.9}}
}
JSON

"$packtune" run "$work/config.json" --out "$work/local" --actors 2 --quiet > "$work/local.log" 2>&1 \
  || { echo "FAILED: the run on this machine exited with $?"; exit 1; }

"$packtune_ssh" "${ssh_options[@]}" --packtune "$packtune" "$work/hosts" "$work/config.json" \
  --out "$work/ssh" > "$work/ssh.log" 2>&1 || { echo "FAILED: packtune-ssh exited with $?"; exit 1; }
grep -q "^\[root@$(host_ip 0)\] " "$work/ssh.log" && grep -q "^\[root@$(host_ip 1)\] " "$work/ssh.log" \
  || { echo "FAILED: the hosts' output is not labelled in packtune-ssh's output"; exit 1; }
# Promoted trials resumed from checkpoints the hosts could only get over ZeroMQ.
grep -q "resumes from its checkpoint" "$work/ssh/driver.log" || { echo "FAILED: no trial was promoted"; exit 1; }
if grep -E "could not resume|no checkpoint to resume" "$work/ssh.log"; then
  echo "FAILED: a promoted trial did not resume from its checkpoint"; exit 1
fi
python3 - "$work/ssh" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(f"{sys.argv[1]}/results.jsonl")]
actors = {r["actor"] for r in rows}
assert len(actors) == 2, f"both hosts' actors should train, got actors {actors}"
PY
python3 "$compare" "$work/local/results.jsonl" "$work/ssh/results.jsonl" --tolerance 2e-3 \
  || { echo "FAILED: the run over ssh reported otherwise than the run on one machine"; exit 1; }
check_hosts_clean "a finished run"

# 2. Interrupted: Hyperband sweeps over 300 trials, SIGTERM once the first reports are in.
"$packtune_ssh" "${ssh_options[@]}" --packtune "$packtune" "$work/hosts" "$work/config.json" \
  --out "$work/stopped" --trials 300 > "$work/stopped.log" 2>&1 &
script_pid=$!
for _ in $(seq 1 600); do
  [ -s "$work/stopped/results.jsonl" ] && break
  kill -0 "$script_pid" 2>/dev/null || break
  sleep 0.1
done
[ -s "$work/stopped/results.jsonl" ] || { echo "FAILED: the run to interrupt reported nothing"; exit 1; }
kill -TERM "$script_pid"
code=0
timeout 90 tail --pid="$script_pid" -f /dev/null || { echo "FAILED: packtune-ssh still runs 90 s after SIGTERM"; exit 1; }
wait "$script_pid" || code=$?
script_pid=""
[ "$code" -ne 0 ] || { echo "FAILED: an interrupted packtune-ssh exited with 0"; exit 1; }
[ -s "$work/stopped/best.json" ] || { echo "FAILED: the interrupted driver wrote no best.json"; exit 1; }
check_hosts_clean "an interrupted run"
reports=$(wc -l < "$work/stopped/results.jsonl")
echo "1 passed, 0 failed: $(wc -l < "$work/ssh/results.jsonl") reports over ssh equal the local run's; interrupted after $reports report(s) (exit $code); nothing left on the hosts"
