#!/usr/bin/env bash
# Brings up a single-node Slurm on this machine (root, Debian 12, no systemd), idempotently:
# installs slurm-wlm and munge when missing (and slurmrestd with its auth/jwt plugin, the peers bench's
# peer), writes /etc/slurm/slurm.conf from the node's real CPUs and memory (`slurmd -C`), starts munged,
# slurmctld and slurmd as plain daemons, and waits until `sinfo` shows the node idle. Dirigo's Slurm suite (`npm run test:slurm`) and bench/scale/slurm.ts use it.
#
# No accounting (sacct has nothing; Dirigo reads finished jobs from `squeue --states=all` while
# MinJobAge keeps them), no cgroups (proctrack/linuxproc, task/none: works in containers and on hosts
# with cgroup v1 or v2 alike).
#
# Two partitions: `debug` (the default: every CPU, no time limit) and `short` (one CPU a job, 10 minutes).
#
# Usage: scripts/slurm-dev.sh [--restart]   (--restart rewrites the config and restarts the daemons)
set -euo pipefail

log() { printf 'slurm-dev: %s\n' "$*"; }
die() { printf 'slurm-dev: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root (it installs packages and starts daemons)"

restart=false
[ "${1:-}" = "--restart" ] && restart=true

# slurmrestd and its auth/jwt plugin: the peer `npm run bench -- peers` compares submissions and listings with.
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null || ! command -v slurmrestd >/dev/null || [ ! -e /usr/lib/x86_64-linux-gnu/slurm-wlm/auth_jwt.so ]; then
  log "installing slurm-wlm, munge, slurmrestd and slurm-wlm-jwt-plugin"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge slurmrestd slurm-wlm-jwt-plugin >/dev/null
fi

node=$(hostname -s)
conf_dir=/etc/slurm
conf=$conf_dir/slurm.conf
spool=/var/spool/slurm-dirigo
logs=/var/log/slurm-dirigo
run=/run/slurm-dirigo
mkdir -p "$conf_dir" "$spool/ctld" "$spool/d" "$logs" "$run"

# --- munge ----------------------------------------------------------------------------------------
mkdir -p /etc/munge /run/munge /var/lib/munge /var/log/munge
if [ ! -s /etc/munge/munge.key ]; then
  log "creating the munge key"
  dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key status=none
fi
chown -R munge:munge /etc/munge /run/munge /var/lib/munge /var/log/munge
chmod 0700 /etc/munge /var/lib/munge /var/log/munge
chmod 0755 /run/munge
chmod 0400 /etc/munge/munge.key
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  log "starting munged"
  rm -f /run/munge/munge.socket.2 /run/munge/munge.socket.2.lock
  runuser -u munge -- /usr/sbin/munged
  for _ in $(seq 1 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
  munge -n | unmunge >/dev/null || die "munged does not answer (see /var/log/munge/munged.log)"
fi

# --- slurm.conf -----------------------------------------------------------------------------------
# `slurmd -C` prints the node line with the real hardware; keep CPUs and RealMemory (and the topology,
# which must agree with CPUs).
hw=$(slurmd -C | head -n1)
cpus=$(sed -n 's/.*CPUs=\([0-9]*\).*/\1/p' <<<"$hw")
boards=$(sed -n 's/.*Boards=\([0-9]*\).*/\1/p' <<<"$hw")
sockets=$(sed -n 's/.*SocketsPerBoard=\([0-9]*\).*/\1/p' <<<"$hw")
cores=$(sed -n 's/.*CoresPerSocket=\([0-9]*\).*/\1/p' <<<"$hw")
threads=$(sed -n 's/.*ThreadsPerCore=\([0-9]*\).*/\1/p' <<<"$hw")
memory=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$hw")
[ -n "$cpus" ] && [ -n "$memory" ] || die "cannot read the node's hardware from 'slurmd -C': $hw"

new_conf=$(cat <<EOF
# Written by Dirigo's scripts/slurm-dev.sh: a single-node development and CI cluster. Addresses are
# 127.0.0.1 so that it works whether or not the host name resolves (containers).
ClusterName=dirigo
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
StateSaveLocation=$spool/ctld
SlurmdSpoolDir=$spool/d
SlurmctldPidFile=$run/slurmctld.pid
SlurmdPidFile=$run/slurmd.pid
SlurmctldLogFile=$logs/slurmctld.log
SlurmdLogFile=$logs/slurmd.log
SlurmctldPort=6817
SlurmdPort=6818
# No cgroups: works in containers and on either cgroup version.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
# No accounting daemon: finished jobs are read from squeue/scontrol while MinJobAge keeps them.
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MinJobAge=3600
MaxJobCount=100000
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
Waittime=0
# TIMEOUT within seconds of the limit, not minutes.
OverTimeLimit=0
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus Boards=${boards:-1} SocketsPerBoard=${sockets:-1} CoresPerSocket=${cores:-$cpus} ThreadsPerCore=${threads:-1} RealMemory=$memory State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
# A second, smaller partition on the same node: one CPU a job, 10 minutes. Matching tests (test/slurm/
# partitions.slurm.ts) prove that a job goes only to a partition that fits it.
PartitionName=short Nodes=$node MaxTime=10 MaxCPUsPerNode=1 State=UP OverSubscribe=FORCE:4
EOF
)

# A pid file names the daemon only if that process is still the daemon: a pid file left behind in /run
# (a machine restored from a snapshot, say) may name a pid some other process has since been given.
running() {
  local pidfile=$1 name=$2 pid
  [ -f "$pidfile" ] || return 1
  pid=$(cat "$pidfile")
  [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ]
}

changed=false
if [ ! -f "$conf" ] || [ "$(cat "$conf")" != "$new_conf" ]; then
  log "writing $conf (node $node: $cpus CPUs, $memory MB)"
  printf '%s\n' "$new_conf" >"$conf"
  changed=true
fi
# Debian's slurm-wlm reads cgroup.conf only for cgroup plugins; none is used here.

stop_daemon() {
  local pidfile=$1 name=$2
  if running "$pidfile" "$name"; then
    log "stopping $name"
    kill "$(cat "$pidfile")"
    for _ in $(seq 1 100); do running "$pidfile" "$name" || break; sleep 0.1; done
  fi
}
if $restart || $changed; then
  stop_daemon "$run/slurmd.pid" slurmd
  stop_daemon "$run/slurmctld.pid" slurmctld
fi

if ! running "$run/slurmctld.pid" slurmctld; then
  log "starting slurmctld"
  /usr/sbin/slurmctld -f "$conf"
fi
for _ in $(seq 1 100); do scontrol ping 2>/dev/null | grep -q 'is UP' && break; sleep 0.2; done
scontrol ping | grep -q 'is UP' || die "slurmctld does not answer (see $logs/slurmctld.log)"

if ! running "$run/slurmd.pid" slurmd; then
  log "starting slurmd"
  /usr/sbin/slurmd -f "$conf"
fi

# --- wait until the node is idle ------------------------------------------------------------------
state=""
for i in $(seq 1 300); do
  state=$(sinfo -h -n "$node" -o '%T' 2>/dev/null | head -n1 || true)
  # A trailing * is "not responding": if slurmd died at start, start it again (every 5 s).
  if [[ "$state" == *'*' ]] && [ $((i % 25)) = 0 ] && ! running "$run/slurmd.pid" slurmd; then
    log "slurmd is not running; starting it again"
    /usr/sbin/slurmd -f "$conf" || true
  fi
  case "$state" in
    idle|mixed|allocated) break ;;
    down*|drain*|fail*)
      # A node left down by an earlier run (e.g. a reboot without a clean stop) comes back.
      [ $((i % 10)) = 1 ] && scontrol update nodename="$node" state=resume >/dev/null 2>&1 || true ;;
  esac
  sleep 0.2
done
case "$state" in
  idle|mixed|allocated) log "node $node is $state; Slurm is ready (sinfo):"; sinfo ;;
  *)
    # Say why where CI shows it: the daemons' own last words.
    running "$run/slurmd.pid" slurmd && log "slurmd is running" || log "slurmd is not running"
    for f in "$logs/slurmd.log" "$logs/slurmctld.log"; do
      log "last lines of $f:"; tail -n 30 "$f" 2>/dev/null || true
    done
    die "node $node is '${state:-unknown}' after 60 s" ;;
esac
