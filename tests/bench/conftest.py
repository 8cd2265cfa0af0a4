from __future__ import annotations

from pathlib import Path

import pytest

from core.bench.datasets import BenchQuestion, load_poisonedrag, load_ramdocs
from core.bench.paths import default_data_dir


@pytest.fixture(scope="session")
def data_dir() -> Path:
    path = default_data_dir()
    if not (path / "poisonedrag").is_dir():
        pytest.skip(f"reference data not found at {path}")
    return path


@pytest.fixture(scope="session")
def poisonedrag(data_dir: Path) -> list[BenchQuestion]:
    return load_poisonedrag(data_dir)


@pytest.fixture(scope="session")
def ramdocs(data_dir: Path) -> list[BenchQuestion]:
    return load_ramdocs(data_dir)
