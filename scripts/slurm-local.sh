#!/usr/bin/env bash
# A throw-away single-node SLURM cluster on this machine, for lrtool's SLURM tests (run as root).
#
#   scripts/slurm-local.sh start DIR   # munged + slurmctld + slurmd, everything under DIR; prints
#                                      #   SLURM_CONF=DIR/slurm.conf and the partition name on stdout
#   scripts/slurm-local.sh stop DIR    # stops the daemons started with DIR (by their pid files)
#
# Needs the Debian packages slurm-wlm and munge (scripts/install.sh installs them). munged runs as the
# munge user with a fresh key; slurm.conf names this host as controller and only node
# (ProctrackType=proctrack/linuxproc, TaskPlugin=task/none: no cgroups, no systemd), SlurmUser=root,
# free TCP ports, state and spool folders under DIR. Clients (sbatch, squeue, srun) find the cluster
# through SLURM_CONF=DIR/slurm.conf; nothing is written outside DIR. Exit status 0 when the node is idle
# and accepting jobs within 60 s; otherwise 1 with the reason on stderr (the daemons are stopped again).
set -euo pipefail

cmd=${1:-}
dir=${2:-}
if [ -z "$cmd" ] || [ -z "$dir" ]; then
  echo "usage: $0 start|stop DIR" >&2
  exit 2
fi

stop() {
  local d=$1 pidfile pid
  for pidfile in "$d/run/slurmd.pid" "$d/run/slurmctld.pid" "$d/munge/munged.pid"; do
    [ -f "$pidfile" ] || continue
    pid=$(cat "$pidfile" 2>/dev/null || true)
    [ -n "$pid" ] || continue
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$pidfile"
  done
}

if [ "$cmd" = stop ]; then
  stop "$dir"
  exit 0
fi
if [ "$cmd" != start ]; then
  echo "usage: $0 start|stop DIR" >&2
  exit 2
fi

die() {
  echo "slurm-local: $*" >&2
  [ -f "$dir/log/slurmctld.log" ] && tail -n 5 "$dir/log/slurmctld.log" >&2
  [ -f "$dir/log/slurmd.log" ] && tail -n 5 "$dir/log/slurmd.log" >&2
  stop "$dir"
  exit 1
}

[ "$(id -u)" = 0 ] || die "must run as root (SlurmUser=root, munged as the munge user)"
for b in munged mungekey slurmctld slurmd sbatch sinfo scontrol; do
  command -v "$b" >/dev/null 2>&1 || die "$b not found: apt-get install slurm-wlm munge"
done
id munge >/dev/null 2>&1 || die "no munge user: apt-get install munge"

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
mkdir -p "$dir/munge" "$dir/state" "$dir/spool" "$dir/log" "$dir/run"
chmod 755 "$dir"
chown munge:munge "$dir/munge"
chmod 755 "$dir/munge"

# munge: a fresh key, socket and pid under DIR, daemon as the munge user
rm -f "$dir/munge/munge.key"
mungekey --create --keyfile="$dir/munge/munge.key" >/dev/null 2>&1 \
  || dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
chown munge:munge "$dir/munge/munge.key"
chmod 400 "$dir/munge/munge.key"
sock="$dir/munge/munge.socket.2"
runuser -u munge -- munged --key-file="$dir/munge/munge.key" --socket="$sock" \
  --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed" \
  || die "munged did not start (see $dir/munge/munged.log)"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
host=$(hostname -s)
cpus=$(nproc)
mem_mb=$(awk '/MemTotal/ {print int($2 / 1024 * 0.66)}' /proc/meminfo)
cat > "$dir/slurm.conf" <<EOF
ClusterName=lrtool-local
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
AuthType=auth/munge
AuthInfo=socket=$sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
MinJobAge=300
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$dir/slurm.conf"

slurmctld -f "$SLURM_CONF" -c || die "slurmctld did not start"
slurmd -f "$SLURM_CONF" -N "$host" || die "slurmd did not start"

for _ in $(seq 1 120); do
  state=$(sinfo -h -n "$host" -o %T 2>/dev/null | head -n 1 || true)
  case "$state" in
    idle*) echo "SLURM_CONF=$SLURM_CONF"; echo "PARTITION=debug"; exit 0 ;;
    down*|drain*) scontrol update nodename="$host" state=resume >/dev/null 2>&1 || true ;;
  esac
  sleep 0.5
done
die "the node did not become idle within 60 s (state: ${state:-unknown})"
