#!/usr/bin/env bash
# Tests the TypeScript client against a running server started with tests/conformance/agents.toml:
# builds the package (the client under test, dist/conformance/client-under-test.js, included), runs
# its tests (node --test; test/reattach.test.ts kills and restarts a server of its own, ASKUSER_BIN or
# target/debug/askuser), then pack-test.sh (the package as `npm pack` makes it, installed elsewhere,
# running its quickstart). The conformance scenarios are the one runner's (tests/conformance/README.md),
# which drives ./client-under-test.
#
#   clients/typescript/test.sh HOST:PORT
#
# Credentials and the TLS server come from the environment (ASKUSER_API_KEY, ASKUSER_OTHER_API_KEY,
# ASKUSER_TLS_*), as ./scripts/test sets them; see README.md, "Tests".
set -euo pipefail
ADDR="${1:?usage: clients/typescript/test.sh HOST:PORT}"
cd "$(dirname "$0")"
npm ci --no-audit --no-fund --silent
# A fresh build: nothing left over from files since removed (e.g. the old runner).
rm -rf dist
npm run --silent build
ASKUSER_ADDR="$ADDR" node --test dist/test/*.test.js
./pack-test.sh "$ADDR"
