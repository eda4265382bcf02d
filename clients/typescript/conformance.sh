#!/usr/bin/env bash
# Tests the TypeScript client against a running server started with tests/conformance/agents.toml:
# builds the package, runs its tests (node --test), then the conformance scenarios, then pack-test.sh
# (the package as `npm pack` makes it, installed elsewhere, running its quickstart).
#
#   clients/typescript/conformance.sh HOST:PORT
#
# Credentials and the TLS server come from the environment (ASKUSER_API_KEY, ASKUSER_OTHER_API_KEY,
# ASKUSER_TLS_*), as ./scripts/test sets them; see README.md, "Tests".
set -euo pipefail
ADDR="${1:?usage: clients/typescript/conformance.sh HOST:PORT}"
cd "$(dirname "$0")"
npm ci --no-audit --no-fund --silent
npm run --silent build
ASKUSER_ADDR="$ADDR" node --test dist/test/*.test.js
node dist/conformance/runner.js "$ADDR"
./pack-test.sh "$ADDR"
