#!/usr/bin/env bash
# Create tests/peers/.venv (if absent) and install the pinned peer requirements.
# Idempotent: re-running only installs what changed. Prints the venv's python path last.
# Usage: tests/peers/setup.sh        (PYTHON=python3.11 to choose the interpreter)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
py="${PYTHON:-python3}"
if [ ! -x "$venv/bin/python" ]; then
  "$py" -m venv "$venv"
fi
stamp="$venv/.requirements.sha256"
want="$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip >/dev/null
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt"
  echo "$want" > "$stamp"
fi
"$venv/bin/python" -c "import a2a, ag_ui, uvicorn" >/dev/null
echo "$venv/bin/python"
