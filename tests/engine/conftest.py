"""Engine fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from core.engine.strategies import isolated_registry


@pytest.fixture
def isolated_strategies() -> Iterator[list[str]]:
    """A scratch strategy registry: strategies (and BUILTIN_MODULES lines) added in the test
    are forgotten afterwards, so no test strategy leaks into the rest of the session."""
    with isolated_registry() as modules:
        yield modules
