#!/usr/bin/env bash
# Regenerates clients/go/askuserv1 from proto/ with pinned local plugins. Deterministic: a second run
# leaves no diff, so CI can check the committed stubs with `git diff --exit-code`.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/tools.sh"

PROTOC_GEN_GO_VERSION=v1.36.12
PROTOC_GEN_GO_GRPC_VERSION=v1.6.2

# go install would rebuild on every run; the version line each plugin prints tells whether it is current.
if [ "$(protoc-gen-go --version 2>/dev/null)" != "protoc-gen-go $PROTOC_GEN_GO_VERSION" ]; then
  echo "installing protoc-gen-go $PROTOC_GEN_GO_VERSION"
  go install "google.golang.org/protobuf/cmd/protoc-gen-go@$PROTOC_GEN_GO_VERSION"
fi
if [ "$(protoc-gen-go-grpc --version 2>/dev/null)" != "protoc-gen-go-grpc ${PROTOC_GEN_GO_GRPC_VERSION#v}" ]; then
  echo "installing protoc-gen-go-grpc $PROTOC_GEN_GO_GRPC_VERSION"
  go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@$PROTOC_GEN_GO_GRPC_VERSION"
fi
ensure_buf

cd "$ROOT"
rm -rf clients/go/askuserv1
buf generate --template clients/go/buf.gen.yaml
