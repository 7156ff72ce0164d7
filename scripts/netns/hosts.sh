#!/usr/bin/env bash
# Fake hosts for multi-host tests: network namespaces on a Linux bridge.
#
#   hosts.sh up N PREFIX [SUBNET]   bridge PREFIX-br, namespaces PREFIX-h1..PREFIX-hN
#                                   and PREFIX-d (for musterd), each joined to the
#                                   bridge by a veth pair; idempotent
#   hosts.sh down PREFIX            deletes the veths, then the namespaces, then the
#                                   bridge; never fails when they are already gone
#
# SUBNET is the first three octets of a private /24 (default 10.213.7). The
# daemon's namespace gets SUBNET.1, host i gets SUBNET.(10+i). The bridge has
# no address, so the root namespace routes nothing to the subnet and parallel
# runs with different PREFIXes can use the same SUBNET without colliding.
#
# Interfaces (names must fit in 15 characters, so PREFIX is at most 10):
#   PREFIX-br                      the bridge (root namespace)
#   PREFIX-hI  / PREFIX-d          root-namespace end of host I's / the daemon's veth,
#                                  a bridge port; `ip link set PREFIX-hI down` cuts
#                                  host I off silently (no RST, open connections hang)
#   PREFIX-hIi / PREFIX-di         the end inside the namespace, holding its address
#
# Run as root. Prints one line per namespace: "NAME ADDRESS".
set -euo pipefail

usage() {
  echo "usage: $0 up N PREFIX [SUBNET] | down PREFIX" >&2
  exit 2
}

check_prefix() {
  local prefix=$1
  [[ $prefix =~ ^[A-Za-z0-9][A-Za-z0-9_]*$ ]] || { echo "$0: bad PREFIX '$prefix' (letters, digits, _)" >&2; exit 2; }
  ((${#prefix} <= 10)) || { echo "$0: PREFIX '$prefix' is longer than 10 characters (interface names are at most 15)" >&2; exit 2; }
}

link_exists() { ip link show dev "$1" >/dev/null 2>&1; }
netns_exists() { ip netns list | awk '{print $1}' | grep -qx -- "$1"; }

# attach NS ROOT_END NS_END ADDRESS BRIDGE: a veth from the bridge into NS.
attach() {
  local ns=$1 outer=$2 inner=$3 addr=$4 bridge=$5
  netns_exists "$ns" || ip netns add "$ns"
  if ! link_exists "$outer"; then
    # A leftover inner end (outer deleted by hand) would make `ip link add` fail.
    ip -n "$ns" link del "$inner" 2>/dev/null || true
    ip link add "$outer" type veth peer name "$inner"
  fi
  if link_exists "$inner"; then  # still in the root namespace
    ip link set "$inner" netns "$ns"
  fi
  ip link set "$outer" master "$bridge"
  ip link set "$outer" up
  ip -n "$ns" link set lo up
  ip -n "$ns" addr replace "$addr/24" dev "$inner"
  ip -n "$ns" link set "$inner" up
  echo "$ns $addr"
}

up() {
  (($# >= 2 && $# <= 3)) || usage
  local n=$1 prefix=$2 subnet=${3:-10.213.7}
  if ! [[ $n =~ ^[0-9]+$ ]] || ((n < 1 || n > 99)); then
    echo "$0: N '$n' must be 1..99" >&2
    exit 2
  fi
  [[ $subnet =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "$0: SUBNET '$subnet' must look like 10.213.7" >&2; exit 2; }
  check_prefix "$prefix"
  local bridge="$prefix-br"
  if ! link_exists "$bridge"; then
    ip link add "$bridge" type bridge
  fi
  # No STP and no forwarding delay: a port forwards as soon as it is up.
  ip link set "$bridge" type bridge stp_state 0 forward_delay 0
  ip link set "$bridge" up
  attach "$prefix-d" "$prefix-d" "$prefix-di" "$subnet.1" "$bridge"
  local i
  for ((i = 1; i <= n; i++)); do
    attach "$prefix-h$i" "$prefix-h$i" "$prefix-h${i}i" "$subnet.$((10 + i))" "$bridge"
  done
}

down() {
  (($# == 1)) || usage
  local prefix=$1
  check_prefix "$prefix"
  local link ns
  # veths first (deleting the root-namespace end deletes its peer too)...
  for link in $(ip -o link show type veth 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
    if [[ $link == "$prefix-d" || $link =~ ^$prefix-h[0-9]+i?$ || $link == "$prefix-di" ]]; then
      ip link del "$link" 2>/dev/null || true
    fi
  done
  # ...then the namespaces...
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}'); do
    if [[ $ns == "$prefix-d" || $ns =~ ^$prefix-h[0-9]+$ ]]; then
      ip netns del "$ns" 2>/dev/null || true
    fi
  done
  # ...then the bridge.
  if link_exists "$prefix-br"; then
    ip link del "$prefix-br" 2>/dev/null || true
  fi
  return 0
}

case "${1:-}" in
  up) shift; up "$@" ;;
  down) shift; down "$@" ;;
  *) usage ;;
esac
