#!/usr/bin/env bash
# Makes the certificates of the TLS benchmarks in DIR (P-256 keys, as
# docs/operations.md makes them): ca.pem, musterd.pem/.key (names localhost
# and 127.0.0.1, serverAuth) and agent.pem/.key (clientAuth), both signed by
# the CA. Keys are mode 0600.
# Usage: scripts/bench/tls_certs.sh DIR
set -euo pipefail
DIR=${1:?usage: tls_certs.sh DIR}
cd "$DIR"
umask 077
ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
{
  openssl req -x509 "${ec[@]}" -keyout ca.key -out ca.pem -days 3650 -subj "/CN=muster CA"
  openssl req "${ec[@]}" -keyout musterd.key -out musterd.csr -subj "/CN=head"
  openssl x509 -req -in musterd.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 825 \
    -out musterd.pem \
    -extfile <(printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n')
  openssl req "${ec[@]}" -keyout agent.key -out agent.csr -subj "/CN=muster agent"
  openssl x509 -req -in agent.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 825 \
    -out agent.pem -extfile <(printf 'extendedKeyUsage=clientAuth\n')
} >/dev/null 2>&1 || { echo "tls_certs.sh: openssl failed in $DIR" >&2; exit 1; }
