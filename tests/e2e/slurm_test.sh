#!/usr/bin/env bash
# scripts/slurm/packtune.sbatch under a real Slurm made for this test on this machine: its own
# munged (own key and socket), slurmctld and slurmd (own slurm.conf, ports, state, spool and
# logs in a temporary folder; proctrack/linuxproc, no cgroups), one node = this machine. Two
# jobs run at once on the node, so that their drivers must pick different ports: one Hyperband
# experiment runs to the end (results, best.json, progress in the job's output), the other is
# cancelled with scancel after its first report (the driver keeps what was reported, and no
# process of either job is left).
# Usage: slurm_test.sh PACKTUNE
set -euo pipefail
work_template="${TMPDIR:-/tmp}/packtune-slurm-test.XXXXXX"
source "$(dirname "$0")/prelude.sh" "$@"
sbatch_script="$(cd "$here/../../scripts/slurm" && pwd)/packtune.sbatch"

if [ "$(id -u)" -ne 0 ]; then echo "SKIPPED: the private Slurm runs its daemons as root"; exit 77; fi
for tool in munged slurmctld slurmd sbatch squeue scancel sinfo ss python3; do
  command -v "$tool" >/dev/null || { echo "FAILED: $tool is missing; run scripts/setup.sh"; exit 1; }
done

chmod 700 "$work"
conf="$work/slurm.conf"
daemons=()
# Everything Slurm started for this test carries our slurm.conf's path in its environment (the
# daemons were started with it, the job steps inherit it): that finds the slurmstepd and job
# processes that outlive slurmd, and nothing of any other Slurm or test. This shell's own
# children (the daemons, the tools it runs) are not counted.
ours() {
  python3 - "$conf" "$$" <<'PY'
import os, sys
conf, me = sys.argv[1], sys.argv[2]
def parent(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("PPid:"):
                return line.split()[1]
    except OSError:
        pass
    return "0"
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
    except OSError:
        continue
    if f"SLURM_CONF={conf}".encode() not in env:
        continue
    up = pid
    while up not in ("0", "1", me):
        up = parent(up)
    if up != me:
        print(pid)
PY
}
cleanup() {
  local code=$? pid
  trap - EXIT
  if [ -S "$work/munge/socket" ] && [ ${#daemons[@]} -ge 3 ]; then
    timeout 10 scancel --full --quiet --user=root 2>/dev/null || true
    for _ in $(seq 1 30); do [ -z "$(timeout 5 squeue -h 2>/dev/null)" ] && break; sleep 0.5; done
  fi
  for pid in "${daemons[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${daemons[@]}"; do
    for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  for pid in $(ours); do kill -KILL "$pid" 2>/dev/null || true; done
  if [ "$code" -ne 0 ]; then
    for f in "$work"/log/*.log "$work"/job-*.out; do
      [ -f "$f" ] && { echo "--- $f (last 30 lines)"; tail -n 30 "$f"; }
    done
  fi
  cleanup_work
  exit "$code"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

mkdir -m 700 "$work/munge" "$work/state" "$work/spool" "$work/log"
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$work/munge/munge.key"
munged --foreground --force --socket="$work/munge/socket" --key-file="$work/munge/munge.key" \
  --pid-file="$work/munge/munged.pid" --log-file="$work/log/munged.log" --seed-file="$work/munge/seed" \
  > "$work/log/munged.out" 2>&1 &
daemons+=($!)
for _ in $(seq 1 50); do [ -S "$work/munge/socket" ] && break; sleep 0.1; done
[ -S "$work/munge/socket" ] || { echo "FAILED: munged did not start"; exit 1; }

read -r ctld_port slurmd_port < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("", 0))
print(*[x.getsockname()[1] for x in s])')
node_line="$(slurmd -C | head -n 1)"   # this machine's real CPUs, sockets and memory
node="$(sed -E 's/^NodeName=([^ ]+).*/\1/' <<<"$node_line")"
cat > "$conf" <<EOF
ClusterName=packtunetest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$work/munge/socket
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
KillWait=15
$node_line NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$conf"
# The jobs' temporary folders (the driver's keys, the node's keys and work folder) go here, so
# that the test can tell that they are removed, apart from any other job's.
mkdir -m 700 "$work/tmp"
export TMPDIR="$work/tmp"
slurmctld -D -f "$conf" > "$work/log/slurmctld.out" 2>&1 &
daemons+=($!)
slurmd -D -f "$conf" > "$work/log/slurmd.out" 2>&1 &
daemons+=($!)
for _ in $(seq 1 60); do
  [ "$(sinfo -h -n "$node" -o %t 2>/dev/null)" = idle ] && break
  sleep 0.5
done
[ "$(sinfo -h -n "$node" -o %t 2>/dev/null)" = idle ] || { echo "FAILED: the node did not become idle:"; sinfo; exit 1; }

cat > "$work/config.json" <<'JSON'
{
  "seed": 11,
  "budget": {"unit": "epochs", "min": 0.25, "max": 0.5, "report_every": 0.25},
  "tuner": {"name": "hyperband", "eta": 2},
  "data": {"train_size": 1024, "validation_size": 256},
  "model": {"family": "mlp", "depth": 1, "width": 32, "batch_size": 64, "optimizer": "sgd"},
  "space": {"lr": {"type": "loguniform", "low": 0.01, "high": 0.3}}
}
JSON
cd "$work"
submit() {  # $1: name; the rest: packtune run options
  local name="$1"; shift
  sbatch --parsable --job-name="$name" --nodes=1 --gres=none --cpus-per-task=1 --time=5 \
    --output="$work/job-$name.out" "$sbatch_script" --packtune "$packtune" --node-actors 1 \
    --node-logs "$work/nodelogs-$name" "$work/config.json" --out "$work/out-$name" "$@"
}
# One CPU each, so that both run at once on this node.
full="$(submit full)"
# Hyperband sweeps over 300 trials: cancelled long before it could finish.
cancelled="$(submit cancelled --trials 300)"

# Cancel the second job once its driver has a report: scancel must keep it.
for _ in $(seq 1 240); do
  [ -s "$work/out-cancelled/results.jsonl" ] && break
  squeue -h -j "$cancelled" 2>/dev/null | grep -q . || break
  sleep 0.5
done
[ -s "$work/out-cancelled/results.jsonl" ] || { echo "FAILED: the job to cancel reported nothing"; exit 1; }
scancel "$cancelled"
for _ in $(seq 1 360); do
  [ -z "$(squeue -h 2>/dev/null)" ] && break
  sleep 0.5
done
[ -z "$(squeue -h)" ] || { echo "FAILED: jobs still queued or running after 180 s:"; squeue; exit 1; }
left="$(ours | tr '\n' ' ')"
if [ -n "$left" ]; then
  echo "FAILED: processes of the jobs are left:"; for pid in $left; do ps -o pid=,args= -p "$pid" || true; done; exit 1
fi
if [ -n "$(ls -A "$work/tmp")" ]; then echo "FAILED: the jobs left temporary folders:"; ls -lA "$work/tmp"; exit 1; fi

python3 - "$work" <<'PY'
import json, os, re, sys
work = sys.argv[1]
def rows(name):
    return [json.loads(l) for l in open(f"{work}/out-{name}/results.jsonl")]
full = rows("full")
# Hyperband, eta 2 over budgets 0.25..0.5: two rungs, the best of the lower promoted to the
# upper, resumed from its checkpoint.
at = {}
for r in full:
    assert 0.0 <= r["val_accuracy"] <= 1.0, r
    at.setdefault(r["budget"], set()).add(r["trial"])
assert sorted(at) == [0.25, 0.5], at
promoted = at[0.25] & at[0.5]
assert promoted and promoted != at[0.25], f"expected some but not all trials promoted: {at}"
assert all(r["final"] for r in full if r["budget"] == 0.5), "a trial at the top budget is final"
best = json.load(open(f"{work}/out-full/best.json"))
assert abs(best["value"] - max(r["val_accuracy"] for r in full)) < 1e-12, best
log = open(f"{work}/job-full.out").read()
assert "packtune.sbatch: job" in log and "driver exited with 0" in log, log
logged = {int(t) for t in re.findall(r"trial +(\d+) reached budget", log)}
assert logged == {r["trial"] for r in full}, f"the job output shows the driver's progress lines: {logged}"
assert "0: " in log, "the node agent's lines, labelled by srun, belong in the job output"
# The last one a job names: a driver that lost its port to the sibling names the next.
ports = [re.findall(r"driver at tcp://[^:]+:(\d+)", open(f"{work}/job-{n}.out").read())[-1]
         for n in ("full", "cancelled")]
assert ports[0] != ports[1], ports
cancelled = rows("cancelled")
assert cancelled, "the cancelled job kept no report"
assert os.path.exists(f"{work}/out-cancelled/best.json"), "the cancelled driver wrote no best.json"
assert len({r["trial"] for r in cancelled}) < 300, "cancelled too late to tell"
clog = open(f"{work}/job-cancelled.out").read()
assert "interrupted" in clog, clog
print(f"1 passed, 0 failed: {len(full)} reports from the full job (ports {ports[0]}, {ports[1]}), "
      f"{len(cancelled)} kept by the cancelled one")
PY
