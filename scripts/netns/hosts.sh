#!/usr/bin/env bash
# Hosts in network namespaces on a bridge, for trying muster by hand: the
# tests' fixture, tests/fixtures/netns_hosts.sh (its header says how).
exec "$(dirname -- "$(realpath -- "${BASH_SOURCE[0]}")")/../../tests/fixtures/netns_hosts.sh" "$@"
