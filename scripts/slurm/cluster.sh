#!/usr/bin/env bash
# A private SLURM 22.05 cluster on this one machine, for tests and demos.
#
#   cluster.sh up DIR         start it; prints the environment to use
#   cluster.sh up DIR --netns the same, but every node is a host of its own:
#                             own network namespace, address and hostname
#   cluster.sh down DIR       stop everything `up` started; idempotent, and safe
#                             after an `up` that failed halfway
#   cluster.sh exec DIR CMD.. run CMD inside the cluster's mount namespace with
#                             SLURM_CONF set (srun, sbatch, salloc, squeue, ...)
#   cluster.sh env DIR        print the environment lines again
#
# SLURM_CLUSTER_OWNER=PID cluster.sh up DIR: also start a watchdog that runs
# `down` as soon as process PID is gone (tests pass their own pid, so even a
# SIGKILLed test run leaves no daemons behind).
#
# Everything lives under DIR (made if missing; an absolute path without spaces
# works best): slurm.conf, gres.conf, the munge key and socket, state, spool,
# logs (DIR/log), pid files (DIR/run) and the fake GPU device nodes (DIR/dev).
#
# What runs: a munged of its own (own key, socket DIR/munge/munge.socket;
# slurm.conf says AuthInfo=socket=... so the system munged is never used),
# slurmctld, and three slurmd "virtual nodes" n1 n2 n3 (MULTIPLE_SLURMD: one
# slurmd per node, each on its own port, all on 127.0.0.1). Every node has
# Gres=gpu:4, backed by character devices DIR/dev/nX/nvidia0..3 (mknod c 1 3,
# i.e. /dev/null twins) so SLURM sets SLURM_STEP_GPUS, SLURM_JOB_GPUS and
# CUDA_VISIBLE_DEVICES as on a real GPU cluster. Ports are picked free at `up`
# (from 12000-19999, outside the ephemeral range and below 20000, where
# muster-train derives job ports); FirstJobId is random so concurrent clusters
# get different job ids, hence different derived ports.
#
# Host names: programs in job steps must resolve n1..n3 (muster connects to the
# first host of SLURM_JOB_NODELIST), but the global /etc/hosts is never edited.
# `up` starts a small holder process (`sleep infinity`, pid in DIR/run/ns.pid)
# in a private mount namespace (unshare --mount --propagation private) in which
# DIR/hosts ("127.0.0.1 n1 n2 n3" plus the original /etc/hosts) is
# bind-mounted over /etc/hosts. munged, slurmctld and the slurmds are started
# inside that namespace with `nsenter --mount --target HOLDER`, so slurmstepd
# and every task inherit it. `exec` enters the same namespace. Clients run
# outside it (plain `SLURM_CONF=DIR/slurm.conf srun ...`) also work: only the
# tasks need the names, and they always run inside.
#
# Multi-host mode (`up DIR --netns`): so that a wrong MASTER_ADDR, a listener
# bound to loopback only or an unreachable store shows up, each slurmd (hence
# its slurmstepd and tasks) runs in a network namespace of its own and a UTS
# namespace whose hostname is the node name. `up` draws a random 6-hex-digit
# id (recorded in DIR/run/netns.conf before anything is created) and a free
# private /24, 10.A.B.0/24 with A in 64-127 (one that no route or address of
# this machine overlaps). scripts/netns/hosts.sh makes the bridge ms<id>-br
# and per node I a namespace ms<id>-hI joined to it by a veth pair (address
# 10.A.B.(10+I)/24; lo up; its unused ms<id>-d namespace holds 10.A.B.1);
# the bridge gets 10.A.B.254/24 in the root namespace. munged and slurmctld
# stay in the root network namespace: SlurmctldHost=localhost(10.A.B.254), so
# the nodes reach the controller on the bridge address, and clients in the root namespace (exec,
# or outside with SLURM_CONF) reach the nodes through the bridge. slurm.conf
# has NodeAddr=10.A.B.(10+I) and NodeHostname=nI, and DIR/hosts maps each nI
# to its address. Two clusters coexist: names and subnet differ.
#
# `down` SIGKILLs, by PID, every process in that mount namespace (daemons,
# slurmstepd, job tasks, whatever `exec` started), checking each candidate's
# /proc/PID/ns/mnt against the recorded namespace and its /proc/PID/mountinfo
# for this DIR's hosts bind mount, then the holder. In multi-host mode it then
# kills whatever is still in the recorded network namespaces and has hosts.sh
# delete the veths, the namespaces and the bridge named by DIR/run/netns.conf
# (each only if present, so a half-failed `up` is cleaned up too). It leaves DIR (logs)
# in place. Needs root (mount namespace, mknod, daemons as root).
#
# Example:
#   scripts/slurm/cluster.sh up /tmp/slurm
#   scripts/slurm/cluster.sh exec /tmp/slurm srun -N3 --ntasks-per-node=1 getent hosts n1
#   scripts/slurm/cluster.sh down /tmp/slurm
#
# Settings worth knowing when reading results: ProctrackType=proctrack/linuxproc,
# TaskPlugin=task/none (no cgroups: CUDA_VISIBLE_DEVICES holds the node-global
# GPU indices), KillWait=3, SlurmdParameters=config_overrides (CPUs=8 per
# node whatever the machine has).
set -euo pipefail
export PATH=$PATH:/usr/sbin:/sbin   # slurmctld, slurmd, munged live there

NODES=(n1 n2 n3)
GPUS_PER_NODE=4
CPUS_PER_NODE=8
UP_TIMEOUT=${SLURM_CLUSTER_UP_TIMEOUT:-30}   # seconds for the nodes to become idle
NETNS=0          # 1: `up DIR --netns` (else read from DIR/run/netns.conf by load_netns)
NETNS_HOSTS=$(dirname -- "$(realpath -- "${BASH_SOURCE[0]}")")/../netns/hosts.sh
NET_PREFIX=""    # multi-host mode: ms<6 hex digits>, the prefix of every name we create
NET_SUBNET=""    # multi-host mode: the first three octets of our /24

usage() {
  sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

die() {
  echo "cluster.sh: $*" >&2
  exit 1
}

canonical_dir() {  # DIR, absolute with symlinks resolved (it may not exist yet)
  local dir
  dir=$(realpath -m -- "$1")
  [[ $dir != *[[:space:]]* ]] || die "DIR '$dir' must not contain spaces"
  echo "$dir"
}

start_time() {  # the start time of a process (field 22 of /proc/PID/stat), to detect pid reuse
  awk '{ sub(/.*\) /, ""); print $20 }' "/proc/$1/stat" 2>/dev/null | grep .
}

pid_alive() {  # pid exists and is not a zombie
  local state
  state=$(awk '{sub(/.*\) /, ""); print $1}' "/proc/$1/stat" 2>/dev/null) || return 1
  [[ -n $state && $state != Z && $state != X ]]
}

read_pid() { [[ -s $1 ]] && head -c 32 "$1" | tr -dc 0-9; }

holder_pid() {  # the namespace holder's pid when it is alive, else fails
  local pid
  pid=$(read_pid "$DIR/run/ns.pid") || return 1
  if [[ -n $pid ]] && pid_alive "$pid" && in_namespace "$pid"; then
    echo "$pid"
  else
    return 1
  fi
}

# True when PID is in this cluster's mount namespace: the recorded namespace
# id matches and its /etc/hosts is the bind mount of this DIR's hosts file
# (so a namespace id reused after ours is gone never matches).
in_namespace() {
  local pid=$1 ns_id root
  ns_id=$(cat "$DIR/run/ns.id" 2>/dev/null) || return 1
  [[ -n $ns_id && $(readlink "/proc/$pid/ns/mnt" 2>/dev/null) == "$ns_id" ]] || return 1
  root=$(awk '$5 == "/etc/hosts" { r = $4 } END { print r }' "/proc/$pid/mountinfo" 2>/dev/null)
  [[ -n $root && $root == */hosts && $DIR/hosts == *"$root" ]]
}

namespace_members() {
  local ns_id pid
  ns_id=$(cat "$DIR/run/ns.id" 2>/dev/null) || return 0
  [[ -n $ns_id ]] || return 0
  # One pass over /proc for the candidates, then the full check on each.
  for pid in $(find /proc -mindepth 3 -maxdepth 3 -path '/proc/[0-9]*/ns/mnt' -printf '%p %l\n' 2>/dev/null |
    awk -v id="$ns_id" '$2 == id { split($1, part, "/"); print part[3] }'); do
    in_namespace "$pid" && echo "$pid"
  done
  return 0
}

nsexec() {  # run "$@" inside the cluster's namespace
  local pid
  pid=$(holder_pid) || die "no cluster running in $DIR (run: $0 up $DIR)"
  if [[ -n ${SLURM_CLUSTER_NODE:-} ]]; then
    # Multi-host mode: on node SLURM_CLUSTER_NODE (its slurmd's network and UTS
    # namespaces, i.e. its address and hostname).
    local node=$SLURM_CLUSTER_NODE
    load_netns || die "SLURM_CLUSTER_NODE=$node needs a cluster started with: $0 up $DIR --netns"
    pid=$(read_pid "$DIR/run/slurmd-$node.pid" || true)
    if [[ -z $pid ]] || ! pid_alive "$pid" || ! in_namespace "$pid"; then
      die "no slurmd of node '$node' running in $DIR"
    fi
    SLURM_CONF=$DIR/slurm.conf nsenter --mount --net --uts --target "$pid" --wd="$PWD" -- "$@"
    return
  fi
  SLURM_CONF=$DIR/slurm.conf nsenter --mount --target "$pid" --wd="$PWD" -- "$@"
}

# Multi-host mode -------------------------------------------------------------

# Sets NET_PREFIX and NET_SUBNET from DIR/run/netns.conf; fails when there is
# none (a cluster without --netns, or none at all). The values are checked so
# that `down` can only ever delete names of the form ms<6 hex digits>-...
load_netns() {
  local conf=$DIR/run/netns.conf prefix subnet
  [[ -s $conf ]] || return 1
  prefix=$(awk -F= '$1 == "prefix" { print $2; exit }' "$conf")
  subnet=$(awk -F= '$1 == "subnet" { print $2; exit }' "$conf")
  [[ $prefix =~ ^ms[0-9a-f]{6}$ && $subnet =~ ^10\.[0-9]{1,3}\.[0-9]{1,3}$ ]] || {
    echo "cluster.sh: ignoring malformed $conf" >&2
    return 1
  }
  NET_PREFIX=$prefix
  NET_SUBNET=$subnet
}

node_netns() { echo "$NET_PREFIX-h${1#n}"; }   # the namespace of node nI (hosts.sh's host I)
bridge_name() { echo "$NET_PREFIX-br"; }

node_addr() {  # the address of node $1
  local i
  if ((NETNS)); then
    for i in "${!NODES[@]}"; do
      [[ ${NODES[$i]} == "$1" ]] && { echo "$NET_SUBNET.$((11 + i))"; return 0; }
    done
    return 1
  fi
  echo 127.0.0.1
}

controller_addr() { if ((NETNS)); then echo "$NET_SUBNET.254"; else echo 127.0.0.1; fi; }

link_exists() { ip link show dev "$1" >/dev/null 2>&1; }

# A private /24 "10.A.B" (A in 64-127) that no IPv4 route or address of this
# machine overlaps, so the bridge's connected route cannot shadow anything.
free_subnet() {
  python3 - <<'EOF'
import ipaddress, random, subprocess, sys
used = []
for cmd in (["ip", "-4", "-o", "route", "show", "table", "all"], ["ip", "-4", "-o", "addr", "show"]):
    out = subprocess.run(cmd, capture_output=True, text=True).stdout
    for token in out.split():
        try:
            net = ipaddress.ip_network(token, strict=False)
        except ValueError:
            continue
        if net.version == 4 and net.prefixlen > 0:
            used.append(net)
for _ in range(500):
    a, b = random.randint(64, 127), random.randint(0, 255)
    net = ipaddress.ip_network(f"10.{a}.{b}.0/24")
    if not any(net.overlaps(u) for u in used):
        print(f"10.{a}.{b}")
        sys.exit(0)
sys.exit("no free 10.A.B.0/24 (A in 64-127)")
EOF
}

# Draws the id and the subnet and records them in DIR/run/netns.conf, before
# anything is created (so `down` finds whatever a failing `up` left).
pick_netns_names() {
  local id="" i subnet
  for ((i = 0; i < 20; i++)); do
    id=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
    [[ $id =~ ^[0-9a-f]{6}$ ]] || continue
    # Taken already (vanishingly unlikely): another id, never someone else's names.
    if ip -o link show 2>/dev/null | grep -q "ms$id-" || compgen -G "/run/netns/ms$id-*" >/dev/null; then
      id=""
      continue
    fi
    break
  done
  [[ -n $id ]] || fail_up "could not draw an unused id for the network names"
  subnet=$(free_subnet) || fail_up "no free private /24 for --netns"
  printf 'prefix=ms%s\nsubnet=%s\n' "$id" "$subnet" >"$DIR/run/netns.conf.tmp"
  mv "$DIR/run/netns.conf.tmp" "$DIR/run/netns.conf"
  load_netns || fail_up "could not record the network names"
}

# hosts.sh's bridge and one namespace per node, and the controller's address
# on the bridge.
netns_create() {
  {
    "$NETNS_HOSTS" up "${#NODES[@]}" "$NET_PREFIX" "$NET_SUBNET" &&
      ip addr add "$(controller_addr)/24" dev "$(bridge_name)"
  } >>"$DIR/log/netns.log" 2>&1 || fail_up "could not create the network namespaces (see $DIR/log/netns.log)"
}

# Undoes pick_netns_names and netns_create, as far as they got: kills what is
# still in our network namespaces (normally nothing: the mount-namespace sweep
# got it all), then has hosts.sh delete the veths, the namespaces and the
# bridge. Idempotent; without DIR/run/netns.conf it does nothing.
netns_down() {
  load_netns || return 0
  mkdir -p "$DIR/log"
  local node ns pids i left=""
  for node in "${NODES[@]}"; do
    ns=$(node_netns "$node")
    for ((i = 0; i < 20; i++)); do
      pids=$(ip netns pids "$ns" 2>/dev/null) || break
      [[ -z $pids ]] && break
      # shellcheck disable=SC2086
      kill -KILL $pids 2>/dev/null || true
      sleep 0.1
    done
  done
  "$NETNS_HOSTS" down "$NET_PREFIX" >>"$DIR/log/netns.log" 2>&1 || true
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}'); do
    [[ $ns == "$NET_PREFIX"-* ]] && left+=" netns $ns"
  done
  link_exists "$(bridge_name)" && left+=" bridge $(bridge_name)"
  if [[ -n $left ]]; then
    echo "cluster.sh down: could not delete:$left (kept $DIR/run/netns.conf; run down again)" >&2
    return 1
  fi
  rm -f "$DIR/run/netns.conf"
  return 0
}

log_tails() {
  local f
  for f in "$DIR"/log/*.log; do
    [[ -f $f ]] || continue
    echo "----- last lines of $f" >&2
    tail -n 15 "$f" >&2
  done
}

fail_up() {
  echo "cluster.sh up: $*" >&2
  log_tails
  echo "cluster.sh up: failed; clean up with: $0 down $DIR" >&2
  exit 1
}

# N free TCP ports from 12000-19999 (bindable on all addresses right now).
free_ports() {
  python3 - "$1" <<'EOF'
import random, socket, sys
n = int(sys.argv[1])
chosen = []
candidates = random.sample(range(12000, 20000), 400)
for port in candidates:
    try:
        with socket.socket() as s:
            s.bind(("0.0.0.0", port))
    except OSError:
        continue
    chosen.append(port)
    if len(chosen) == n:
        break
if len(chosen) < n:
    sys.exit("no free ports in 12000-19999")
print(" ".join(map(str, chosen)))
EOF
}

write_configs() {
  local ports first_job_id=$2 i node hostname
  read -r -a ports <<<"$1"
  {
    if ((NETNS)); then
      for node in "${NODES[@]}"; do echo "$(node_addr "$node") $node"; done
    else
      echo "127.0.0.1 ${NODES[*]}"
    fi
    cat /etc/hosts
  } >"$DIR/hosts"
  : >"$DIR/plugstack.conf"
  {
    cat <<EOF
# Written by scripts/slurm/cluster.sh for the private cluster in $DIR.
ClusterName=muster
SlurmctldHost=localhost($(controller_addr))
SlurmctldPort=${ports[0]}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$DIR/munge/munge.socket
CredType=cred/munge
MpiDefault=none
SwitchType=switch/none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
SlurmdParameters=config_overrides
ReturnToService=2
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd-%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$DIR/plugstack.conf
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MailProg=/bin/true
FirstJobId=$first_job_id
KillWait=3
MinJobAge=30
InactiveLimit=0
MessageTimeout=10
SlurmdTimeout=60
GresTypes=gpu
EOF
    i=1
    for node in "${NODES[@]}"; do
      if ((NETNS)); then hostname=$node; else hostname=localhost; fi
      echo "NodeName=$node NodeHostname=$hostname NodeAddr=$(node_addr "$node") Port=${ports[$i]}" \
        "CPUs=$CPUS_PER_NODE Gres=gpu:$GPUS_PER_NODE State=UNKNOWN"
      i=$((i + 1))
    done
    echo "PartitionName=debug Nodes=$(IFS=,; echo "${NODES[*]}") Default=YES MaxTime=INFINITE State=UP"
  } >"$DIR/slurm.conf"
  : >"$DIR/gres.conf"
  for node in "${NODES[@]}"; do
    mkdir -p "$DIR/dev/$node" "$DIR/spool/$node"
    for ((i = 0; i < GPUS_PER_NODE; i++)); do
      [[ -c $DIR/dev/$node/nvidia$i ]] || mknod "$DIR/dev/$node/nvidia$i" c 1 3
    done
    echo "NodeName=$node Name=gpu File=$DIR/dev/$node/nvidia[0-$((GPUS_PER_NODE - 1))]" >>"$DIR/gres.conf"
  done
}

print_env() {
  cat <<EOF
export SLURM_CONF=$DIR/slurm.conf
# Run clients inside the cluster's namespace (n1..n3 resolve there):
#   $0 exec $DIR srun -N3 hostname
# or outside it with SLURM_CONF set. Stop with: $0 down $DIR
EOF
  if load_netns; then
    NETNS=1
    local node nodes=""
    for node in "${NODES[@]}"; do nodes+=" $node=$(node_addr "$node")"; done
    cat <<EOF
# Multi-host mode: nodes$nodes (network namespaces $(node_netns "${NODES[0]}")..),
# controller $(controller_addr) on bridge $(bridge_name). On a node (its address and hostname):
#   SLURM_CLUSTER_NODE=${NODES[1]} $0 exec $DIR CMD
EOF
  fi
}

up() {
  ((EUID == 0)) || die "up needs root (mount namespace, mknod, daemons)"
  local cmd
  for cmd in munged slurmctld slurmd sinfo unshare nsenter mknod python3; do
    command -v "$cmd" >/dev/null || die "'$cmd' not found (apt-get install slurm-wlm munge)"
  done
  if ((NETNS)); then
    for cmd in ip hostname; do
      command -v "$cmd" >/dev/null || die "'$cmd' not found (apt-get install iproute2 hostname)"
    done
  fi
  if holder_pid >/dev/null 2>&1; then
    die "a cluster is already running in $DIR (run: $0 down $DIR)"
  fi
  # Leftovers of an earlier --netns `up` in this DIR that nobody took down.
  if [[ -d $DIR/run ]]; then
    netns_down || die "could not delete the network namespaces left in $DIR (see above)"
  fi
  local started=$EPOCHREALTIME
  mkdir -p "$DIR"/{run,log,state,spool,dev,munge}
  # munged wants its socket directory (and the path to it) searchable by all.
  chmod 755 "$DIR" "$DIR/munge"
  rm -f "$DIR"/run/*.pid "$DIR/run/ns.id" "$DIR/munge/munge.socket" "$DIR/munge/munge.socket.lock"

  local ports
  ports=$(free_ports $((1 + ${#NODES[@]}))) || die "could not find free ports"
  # Multi-host mode: the id and subnet first (slurm.conf and hosts need them);
  # the interfaces and namespaces are created further down, once the watchdog runs.
  if ((NETNS)); then
    pick_netns_names
  fi
  write_configs "$ports" $((1000 + RANDOM * 30 + RANDOM % 30))

  # The munge key: 1 KiB of random bytes, readable by its owner (root) only.
  if [[ ! -s $DIR/munge/munge.key ]]; then
    (umask 077 && head -c 1024 /dev/urandom >"$DIR/munge/munge.key")
  fi
  chmod 400 "$DIR/munge/munge.key"

  # The namespace holder: private mount namespace, hosts bind-mounted, then
  # it records its pid and sleeps until `down` kills it.
  # shellcheck disable=SC2016 # expanded by the inner shell
  setsid unshare --mount --propagation private -- /bin/sh -c '
    mount --bind "$1/hosts" /etc/hosts || exit 1
    echo $$ >"$1/run/ns.pid.tmp" && mv "$1/run/ns.pid.tmp" "$1/run/ns.pid"
    exec sleep infinity' sh "$DIR" </dev/null >>"$DIR/log/namespace.log" 2>&1 &
  local holder="" i
  for ((i = 0; i < 100; i++)); do
    holder=$(read_pid "$DIR/run/ns.pid" || true)
    [[ -n $holder ]] && break
    sleep 0.05
  done
  [[ -n $holder ]] || fail_up "the namespace holder did not start"
  readlink "/proc/$holder/ns/mnt" >"$DIR/run/ns.id"
  in_namespace "$holder" || fail_up "the namespace holder has no /etc/hosts bind mount"

  # With SLURM_CLUSTER_OWNER=PID, a watchdog (outside the namespace, pid in
  # DIR/run/watchdog.pid) runs `down` once that process is gone, so a killed
  # test run cannot leave the daemons behind.
  if [[ -n ${SLURM_CLUSTER_OWNER:-} ]]; then
    local owner_start
    owner_start=$(start_time "$SLURM_CLUSTER_OWNER") || fail_up "owner pid $SLURM_CLUSTER_OWNER is not running"
    # shellcheck disable=SC2016 # expanded by the inner shell
    setsid bash -c '
      while [[ $(awk "{ sub(/.*\\) /, \"\"); print \$20 }" "/proc/$1/stat" 2>/dev/null) == "$2" ]]; do
        sleep 1
      done
      exec "$3" down "$4"' watchdog "$SLURM_CLUSTER_OWNER" "$owner_start" "$SELF" "$DIR" \
      </dev/null >>"$DIR/log/watchdog.log" 2>&1 &
    echo $! >"$DIR/run/watchdog.pid"
  fi

  if ((NETNS)); then
    netns_create
  fi

  nsexec munged --socket="$DIR/munge/munge.socket" --key-file="$DIR/munge/munge.key" \
    --pid-file="$DIR/run/munged.pid" --log-file="$DIR/log/munged.log" \
    --seed-file="$DIR/munge/munged.seed" --num-threads=4 \
    >>"$DIR/log/munged.log" 2>&1 || fail_up "munged did not start"
  for ((i = 0; i < 100; i++)); do
    [[ -S $DIR/munge/munge.socket ]] && break
    sleep 0.05
  done
  munge -S "$DIR/munge/munge.socket" -n </dev/null | unmunge -S "$DIR/munge/munge.socket" >/dev/null 2>&1 ||
    fail_up "munge credential round trip through $DIR/munge/munge.socket failed"

  nsexec slurmctld -i -f "$DIR/slurm.conf" >>"$DIR/log/slurmctld.log" 2>&1 ||
    fail_up "slurmctld did not start"
  local node
  for node in "${NODES[@]}"; do
    if ((NETNS)); then
      # In the node's network namespace (nsenter --net, not `ip netns exec`,
      # which remounts /sys) and a UTS namespace of its own named after it.
      # shellcheck disable=SC2016 # expanded by the inner shell
      SLURM_CONF=$DIR/slurm.conf nsenter --mount --target "$holder" --net="/run/netns/$(node_netns "$node")" \
        -- unshare --uts -- /bin/sh -c 'hostname "$0" && exec "$@"' "$node" \
        slurmd -N "$node" -f "$DIR/slurm.conf" >>"$DIR/log/slurmd-$node.log" 2>&1 ||
        fail_up "slurmd $node did not start"
    else
      nsexec slurmd -N "$node" -f "$DIR/slurm.conf" >>"$DIR/log/slurmd-$node.log" 2>&1 ||
        fail_up "slurmd $node did not start"
    fi
  done

  local deadline=$((SECONDS + UP_TIMEOUT)) states=""
  while ((SECONDS < deadline)); do
    states=$(SLURM_CONF=$DIR/slurm.conf timeout 10 sinfo -h -N -o '%N %t' 2>&1 || true)
    if [[ $(grep -cE '^n[0-9]+ idle$' <<<"$states") -eq ${#NODES[@]} ]]; then
      local elapsed
      elapsed=$(awk -v a="$started" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
      echo "# cluster up in ${elapsed}s: nodes ${NODES[*]} idle, $GPUS_PER_NODE fake GPUs each$( ((NETNS)) && echo ", one network namespace each")"
      print_env
      return 0
    fi
    sleep 0.1
  done
  fail_up "nodes not idle after ${UP_TIMEOUT}s; sinfo says:
$states"
}

down() {
  if [[ ! -d $DIR/run ]]; then
    echo "cluster.sh down: nothing to stop in $DIR"
    return 0
  fi
  local holder members pid i killed=() watchdog
  # The watchdog first (unless it is this very process: it execs `down`).
  watchdog=$(read_pid "$DIR/run/watchdog.pid" || true)
  if [[ -n $watchdog && $watchdog != "$$" ]] && pid_alive "$watchdog" &&
    tr '\0' ' ' <"/proc/$watchdog/cmdline" 2>/dev/null | grep -qF -- " $DIR"; then
    # Its process group (setsid made it the leader): its `sleep 1` too.
    kill -KILL -- "-$watchdog" 2>/dev/null || kill -KILL "$watchdog" 2>/dev/null || true
  fi
  holder=$(read_pid "$DIR/run/ns.pid" || true)
  # Everything in the namespace but the holder first (the holder keeps the
  # namespace, hence the check, valid), retrying while slurmd still forks.
  for ((i = 0; i < 50; i++)); do
    members=$(namespace_members | grep -vx -- "${holder:-none}" || true)
    [[ -z $members ]] && break
    for pid in $members; do
      kill -KILL "$pid" 2>/dev/null || true
      killed+=("$pid")
    done
    sleep 0.1
  done
  [[ -z $members ]] || echo "cluster.sh down: still alive after SIGKILL: $members" >&2
  # A killed process leaves the namespace before it is gone: wait for that.
  for pid in "${killed[@]}"; do
    for ((i = 0; i < 50; i++)); do
      pid_alive "$pid" || break
      sleep 0.05
    done
  done
  if [[ -n $holder ]] && pid_alive "$holder" && in_namespace "$holder"; then
    kill -KILL "$holder" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
      pid_alive "$holder" || break
      sleep 0.05
    done
  fi
  rm -f "$DIR"/run/*.pid "$DIR/run/ns.id" "$DIR/run/ns.pid.tmp" "$DIR/munge/munge.socket" \
    "$DIR/munge/munge.socket.lock"
  # Multi-host mode: the veths, network namespaces and bridge (no-op otherwise).
  local status=0
  netns_down || status=1
  echo "cluster.sh down: stopped the cluster in $DIR"
  return $status
}

SELF=$(realpath -- "$0")
(($# >= 2)) || usage
action=$1
DIR=$(canonical_dir "$2")
shift 2
case $action in
  up)
    if (($# == 1)) && [[ $1 == --netns ]]; then
      NETNS=1
    else
      (($# == 0)) || usage
    fi
    up
    ;;
  down) (($# == 0)) || usage; down ;;
  exec) (($# >= 1)) || usage; nsexec "$@" ;;
  env) print_env ;;
  *) usage ;;
esac
