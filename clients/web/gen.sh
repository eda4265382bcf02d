#!/usr/bin/env bash
# Regenerates src/gen/ from the askuser.v1 contract (proto/ at the repository root) and the vendored
# google.rpc error types (clients/typescript/proto/), with protoc-gen-es pinned by package-lock.json.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/tools.sh"
ensure_buf
(cd "$ROOT/clients/web" && npm ci --no-audit --no-fund --silent)
cd "$ROOT"
buf generate --template clients/web/buf.gen.yaml
