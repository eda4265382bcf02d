# Installs the project's tools into .tools/ (sourced by scripts/test and scripts/gen).
# Versions are pinned; everything comes from the npm registry and the Go module proxy.
ROOT="${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
TOOLS="$ROOT/.tools"
BUF_VERSION=1.75.0
GRPCURL_VERSION=v1.9.3
mkdir -p "$TOOLS/bin"
export PATH="$TOOLS/bin:$TOOLS/node_modules/.bin:$PATH"
export GOBIN="$TOOLS/bin"

ensure_buf() {
  if [ ! -x "$TOOLS/node_modules/.bin/buf" ] || [ "$("$TOOLS/node_modules/.bin/buf" --version)" != "$BUF_VERSION" ]; then
    echo "installing buf $BUF_VERSION"
    (cd "$TOOLS" && { [ -f package.json ] || echo '{"private":true}' > package.json; } \
      && npm install --no-audit --no-fund --silent "@bufbuild/buf@$BUF_VERSION")
  fi
}

ensure_grpcurl() {
  if [ ! -x "$TOOLS/bin/grpcurl" ]; then
    echo "installing grpcurl $GRPCURL_VERSION"
    go install "github.com/fullstorydev/grpcurl/cmd/grpcurl@$GRPCURL_VERSION"
  fi
}

# Debian's Chromium, the real browser the inbox's tests drive (through playwright-core).
ensure_chromium() {
  if ! command -v chromium >/dev/null; then
    echo "installing chromium (Debian package)"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
  fi
}

# Debian's Prometheus, the real server tests/integration/metrics.rs scrapes the metrics endpoint with and
# queries through its HTTP API.
ensure_prometheus() {
  if ! command -v prometheus >/dev/null; then
    echo "installing prometheus (Debian package)"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  fi
}

# The MCP servers tests/integration/mcp_tools.rs runs askuser against: ones written with the official
# Python SDK (tests/fixtures/mcp, in the venv .tools/venv-mcp) and a published one from the npm
# registry (@modelcontextprotocol/server-filesystem), each at a pinned version.
MCP_FILESYSTEM_VERSION=2026.8.31
# The TypeScript MCP SDK the MCP endpoint's tests play a host with (tests/fixtures/mcp/host.mjs).
MCP_TS_SDK_VERSION=1.32.2
ensure_mcp_servers() {
  local venv="$TOOLS/venv-mcp"
  local wanted="$ROOT/tests/fixtures/mcp/requirements.txt"
  if [ ! -x "$venv/bin/python" ] || ! cmp -s "$wanted" "$venv/requirements.txt"; then
    echo "installing the MCP Python SDK into $venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$wanted"
    cp "$wanted" "$venv/requirements.txt"
  fi
  if [ ! -f "$TOOLS/node_modules/@modelcontextprotocol/server-filesystem/package.json" ] \
    || [ "$(node -p "require('$TOOLS/node_modules/@modelcontextprotocol/server-filesystem/package.json').version")" != "$MCP_FILESYSTEM_VERSION" ]; then
    echo "installing @modelcontextprotocol/server-filesystem $MCP_FILESYSTEM_VERSION"
    (cd "$TOOLS" && { [ -f package.json ] || echo '{"private":true}' > package.json; } \
      && npm install --no-audit --no-fund --silent "@modelcontextprotocol/server-filesystem@$MCP_FILESYSTEM_VERSION")
  fi
  if [ ! -f "$TOOLS/node_modules/@modelcontextprotocol/sdk/package.json" ] \
    || [ "$(node -p "require('$TOOLS/node_modules/@modelcontextprotocol/sdk/package.json').version")" != "$MCP_TS_SDK_VERSION" ]; then
    echo "installing @modelcontextprotocol/sdk $MCP_TS_SDK_VERSION"
    (cd "$TOOLS" && { [ -f package.json ] || echo '{"private":true}' > package.json; } \
      && npm install --no-audit --no-fund --silent "@modelcontextprotocol/sdk@$MCP_TS_SDK_VERSION")
  fi
}
