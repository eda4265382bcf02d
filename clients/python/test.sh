#!/usr/bin/env bash
# Tests the Python client against a running server (`askuser serve --config
# tests/conformance/agents.toml`) and builds its client under test: installs the package with its
# dependencies into the venv .tools/venv-python (the one `client-under-test` runs with), runs mypy
# --strict on the package, on client_under_test.py and on examples/langgraph_node.py, the pytest
# tests (sync and asyncio clients, and that example), then the quickstarts from a wheel installed
# into a fresh venv (wheel-quickstart.sh).
# Exits non-zero if any failed. The conformance scenarios are the runner's
# (tests/conformance_runner), which drives `client-under-test`.
set -euo pipefail
ADDR="${1:?usage: clients/python/test.sh HOST:PORT}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
VENV="$ROOT/.tools/venv-python"

[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
# A regular (not editable) install, so the tests and the client under test use what the wheel ships.
"$VENV/bin/pip" install --quiet --disable-pip-version-check --force-reinstall --no-deps "$ROOT/clients/python"
"$VENV/bin/pip" install --quiet --disable-pip-version-check "$ROOT/clients/python[test,typecheck]"

status=0
(cd "$ROOT/clients/python" && "$VENV/bin/mypy" && "$VENV/bin/mypy" --strict client_under_test.py examples/langgraph_node.py) || status=1
# From the tests' folder, so `import askuser_client` finds the installed package, not src/.
(cd "$ROOT/clients/python/tests" && ASKUSER_ADDR="$ADDR" "$VENV/bin/python" -m pytest -q -p no:cacheprovider .) || status=1
"$ROOT/clients/python/wheel-quickstart.sh" "$ADDR" || status=1
exit "$status"
