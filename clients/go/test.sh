#!/usr/bin/env bash
# Checks the Go client against a running askuser server that serves tests/conformance/agents.toml
# (scripts/conformance-servers.sh): go vet, the module's own tests (given the server in
# ASKUSER_ADDR), the quickstart built as users build it (a module of their own that requires this
# one), and builds the client under test (.bin/client-under-test) that the conformance runner
# drives. Every step runs even when one fails, so one run shows every failure.
#
#   clients/go/test.sh HOST:PORT
set -uo pipefail
if [ $# -ne 1 ]; then
  echo "usage: $0 HOST:PORT" >&2
  exit 2
fi
ADDR="$1"
GO_CLIENT="$(cd "$(dirname "$0")" && pwd)"
cd "$GO_CLIENT"

failed=0
go vet ./... || failed=1
# -count=1: the server's state differs from run to run, so cached results prove nothing.
ASKUSER_ADDR="$ADDR" go test -count=1 ./... || failed=1
go build -o .bin/client-under-test ./cmd/client-under-test || failed=1

# The quickstart as a user builds it: copied into a module of its own, outside the tree, that
# requires the client by its version, with a replace directive standing in for the module proxy.
# It builds offline (GOPROXY=off): go takes the client's own requirements, with the client's
# go.sum, from the module cache that the steps above filled.
USER_MODULE="$(mktemp -d)"
trap 'rm -rf "$USER_MODULE"' EXIT
VERSION="$(sed -n 's/^const Version = "\(.*\)"$/\1/p' askuser/version.go)"
cp examples/quickstart/main.go go.sum "$USER_MODULE/"
(
  cd "$USER_MODULE" &&
    go mod init example.com/quickstart 2>/dev/null &&
    go mod edit -require "github.com/askuser-dev/askuser/clients/go@v$VERSION" \
      -replace "github.com/askuser-dev/askuser/clients/go=$GO_CLIENT" &&
    GOPROXY=off GOFLAGS=-mod=mod go build -o quickstart . &&
    # The parallel agent of tests/conformance/agents.toml asks what the demo agent deploy asks;
    # status_check then calls the client tool service_status, which the quickstart runs itself.
    out="$(printf '1\nlint, unit\nfirst release\n' | ./quickstart -addr "$ADDR" -agent parallel)" &&
    echo "$out" &&
    grep -q 'Result: staging / lint, unit / first release$' <<<"$out" &&
    grep -q '^Result: api is healthy$' <<<"$out"
) || { echo "the quickstart, built as a user builds it, failed" >&2; failed=1; }
exit "$failed"
