"""Where the benchmark reads its data and keeps its caches (overridable by environment)."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def default_data_dir() -> Path:
    """``BENCH_DATA_DIR``, else the shared reference data next to the repository."""
    return Path(os.environ.get("BENCH_DATA_DIR", REPO_ROOT.parent / "shared" / "data"))


def default_cache_dir() -> Path:
    """``BENCH_CACHE_DIR``, else ``$DATA_DIR/cache/bench`` when DATA_DIR is set, else var/cache/bench."""
    if "BENCH_CACHE_DIR" in os.environ:
        return Path(os.environ["BENCH_CACHE_DIR"])
    if "DATA_DIR" in os.environ:
        return Path(os.environ["DATA_DIR"]) / "cache" / "bench"
    return REPO_ROOT / "var" / "cache" / "bench"
