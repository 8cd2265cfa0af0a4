#!/usr/bin/env bash
# Create .venv and install the Python requirements (idempotent; fast when up to date).
# Usage: scripts/setup.sh [requirements-file]
set -euo pipefail
cd "$(dirname "$0")/.."
req="${1:-requirements.txt}"
python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
stamp=".venv/.installed-$(basename "$req")"
if [ ! -f "$stamp" ] || [ "$req" -nt "$stamp" ] || [ requirements.txt -nt "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip >/dev/null 2>&1 || true
  # torch is pinned to 2.13.0 (a CPU build where the machine offers one); install it first
  # so no other package pulls a different build.
  .venv/bin/python -m pip install --quiet "torch==2.13.0"
  .venv/bin/python -m pip install --quiet -r "$req"
  touch "$stamp"
fi
