#!/usr/bin/env bash
# Regenerates src/gen/ (the Node entry's, by ts-proto) and src/web/gen/ (the browser entry's, by
# protoc-gen-es) from the askuser.v1 contract (proto/ at the repository root) and the vendored
# google.rpc error types (clients/typescript/proto/), with both plugins pinned by package-lock.json.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/tools.sh"
ensure_buf
(cd "$ROOT/clients/typescript" && npm ci --no-audit --no-fund --silent)
cd "$ROOT"
buf generate --template clients/typescript/buf.gen.yaml
