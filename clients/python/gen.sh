#!/usr/bin/env bash
# Regenerates clients/python/src/askuser/v1 from proto/ with grpcio-tools at a pinned version.
# Deterministic: a second run leaves no diff, so CI can check the committed modules with
# `git diff --exit-code`.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/tools.sh"

# The generated modules name the versions they need at run time (protobuf >= 7.35.1 for the protoc
# inside grpcio-tools 1.85.1, grpcio >= 1.85.1): pyproject.toml's ranges follow these pins.
GRPCIO_TOOLS_VERSION=1.85.1
PROTOBUF_VERSION=7.36.2
VENV="$TOOLS/venv-python-gen"

installed() { "$VENV/bin/python" -c "import importlib.metadata as m; print(m.version('$1'))" 2>/dev/null; }
if [ "$(installed grpcio-tools)" != "$GRPCIO_TOOLS_VERSION" ] || [ "$(installed protobuf)" != "$PROTOBUF_VERSION" ]; then
  echo "installing grpcio-tools $GRPCIO_TOOLS_VERSION into $VENV"
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check \
    "grpcio-tools==$GRPCIO_TOOLS_VERSION" "protobuf==$PROTOBUF_VERSION"
fi
ensure_buf

cd "$ROOT"
# Only the generated package is removed: src/ also holds the hand-written askuser_client.
rm -rf clients/python/src/askuser
buf generate --template clients/python/buf.gen.yaml
