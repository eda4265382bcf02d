#!/usr/bin/env bash
# Runs askuser's ask-user round trip on Mastra (bench.mjs beside this file) with the versions pinned
# in package-lock.json, installing them first when needed: `npm ci` into bench/mastra/node_modules,
# Node 22 included (the npm package `node`, whose install fetches the node-<os>-<arch> binary
# package), so that nothing is installed system-wide and the system's Node may be older.
#
#   bench/mastra/run.sh --out FILE [--quick] [other bench.mjs flags; --help lists them]
#
# Needs npm on the PATH for the install only. Bounded: the install by MASTRA_INSTALL_SECONDS
# (default 900), the bench by MASTRA_BENCH_SECONDS (default 3600).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE"

node_bin="$HERE/node_modules/.bin/node"
stamp="$HERE/node_modules/.askuser-lock.sha256"
lock_sum="$(sha256sum package-lock.json package.json | sha256sum | cut -d' ' -f1)"

installed() {
  [ -x "$node_bin" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$lock_sum" ] &&
    "$node_bin" -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 22 ? 0 : 1)'
}

if ! installed; then
  echo "bench/mastra: installing the pinned packages (npm ci)" >&2
  timeout "${MASTRA_INSTALL_SECONDS:-900}" npm ci --no-audit --no-fund >&2
  if ! "$node_bin" -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 22 ? 0 : 1)'; then
    echo "bench/mastra: $node_bin is not Node >= 22 after npm ci" >&2
    exit 1
  fi
  echo "$lock_sum" >"$stamp"
fi

exec timeout "${MASTRA_BENCH_SECONDS:-3600}" "$node_bin" bench.mjs "$@"
