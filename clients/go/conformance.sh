#!/usr/bin/env bash
# Checks the Go client against a running askuser server that serves tests/conformance/agents.toml:
# go vet, the module's own tests (given the server in ASKUSER_ADDR), then every conformance
# scenario. All three run even when one fails, so one run shows every failure; the runner goes
# last so that its "N passed, N failed" closes the output.
#
#   clients/go/conformance.sh HOST:PORT
set -uo pipefail
if [ $# -ne 1 ]; then
  echo "usage: $0 HOST:PORT" >&2
  exit 2
fi
ADDR="$1"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT/clients/go"

BIN="$(mktemp -d)"
trap 'rm -rf "$BIN"' EXIT

failed=0
go vet ./... || failed=1
# -count=1: the server's state differs from run to run, so cached results prove nothing.
ASKUSER_ADDR="$ADDR" go test -count=1 ./... || failed=1
if go build -o "$BIN/conformance" ./cmd/conformance; then
  "$BIN/conformance" -scenarios "$ROOT/tests/conformance" "$ADDR" || failed=1
else
  failed=1
fi
exit "$failed"
