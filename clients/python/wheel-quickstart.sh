#!/usr/bin/env bash
# Builds the wheel as users get it, installs it into a fresh venv and runs the quickstarts from that
# install (in a scratch folder, away from src/) against a running server with the conformance agents:
# examples/quickstart.py (sync) and examples/quickstart_async.py (asyncio). Also type-checks the
# async quickstart with mypy --strict against the installed package, which must ship py.typed.
set -euo pipefail
ADDR="${1:?usage: clients/python/wheel-quickstart.sh HOST:PORT}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
TOOLS="$ROOT/.tools/venv-python"   # test.sh makes it; it has pip and mypy
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

"$TOOLS/bin/pip" wheel --quiet --disable-pip-version-check --no-deps -w "$WORK/dist" "$ROOT/clients/python"
wheel=("$WORK"/dist/askuser_client-*.whl)
echo "built $(basename "${wheel[0]}")"
python3 -m venv "$WORK/venv"
"$WORK/venv/bin/pip" install --quiet --disable-pip-version-check "${wheel[0]}"

cp "$ROOT/clients/python/examples/quickstart.py" "$ROOT/clients/python/examples/quickstart_async.py" "$WORK/"
cd "$WORK"
"$WORK/venv/bin/python" - <<'PY'
import pathlib, askuser_client
from askuser.v1 import agent_pb2
package = pathlib.Path(askuser_client.__file__).parent
assert "site-packages" in str(package), package
assert (package / "LICENSE").is_file(), "the wheel ships no LICENSE"
for typed in (package / "py.typed", pathlib.Path(agent_pb2.__file__).parent / "py.typed"):
    assert typed.is_file(), f"missing {typed}"
# __version__ comes from the installed metadata, i.e. pyproject.toml's version.
assert askuser_client.__version__ and askuser_client.__version__[0].isdigit(), askuser_client.__version__
print(f"installed askuser-client {askuser_client.__version__} at {package}")
PY
"$TOOLS/bin/mypy" --strict --no-incremental --python-executable "$WORK/venv/bin/python" quickstart_async.py
"$WORK/venv/bin/python" quickstart.py "$ADDR" </dev/null
"$WORK/venv/bin/python" quickstart_async.py "$ADDR"
echo "wheel quickstart: ok"
