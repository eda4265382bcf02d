#!/usr/bin/env bash
# Tests the Python client against a running server (`askuser serve --config
# tests/conformance/agents.toml`): installs the package with its dependencies into a venv under
# .tools/, runs mypy --strict on it, its pytest tests (sync and asyncio clients), the quickstarts from
# a wheel installed into a fresh venv (wheel-quickstart.sh), then the conformance scenarios, whose
# `N passed, N failed` line comes last. Exits non-zero if any failed.
set -euo pipefail
ADDR="${1:?usage: clients/python/conformance.sh HOST:PORT}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
VENV="$ROOT/.tools/venv-python"

[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
# A regular (not editable) install, so the test also covers what the wheel ships.
"$VENV/bin/pip" install --quiet --disable-pip-version-check --force-reinstall --no-deps "$ROOT/clients/python"
"$VENV/bin/pip" install --quiet --disable-pip-version-check "$ROOT/clients/python[test,typecheck]"

status=0
(cd "$ROOT/clients/python" && "$VENV/bin/mypy") || status=1
# From the tests' folder, so `import askuser_client` finds the installed package, not src/.
(cd "$ROOT/clients/python/tests" && ASKUSER_ADDR="$ADDR" "$VENV/bin/python" -m pytest -q -p no:cacheprovider .) || status=1
"$ROOT/clients/python/wheel-quickstart.sh" "$ADDR" || status=1
"$VENV/bin/python" "$ROOT/clients/python/conformance.py" "$ADDR" || status=1
exit "$status"
