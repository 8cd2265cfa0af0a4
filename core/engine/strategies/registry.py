"""The strategy registry: names to strategy classes.

Built-in strategies live one module each (or one family per module) and register
themselves with ``@register("name")`` when imported; the registry imports the modules in
``BUILTIN_MODULES`` on first use. Adding a strategy is one new module plus one line here.
Tests use :func:`isolated_registry` so a strategy they register never leaks into others.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from core.engine.strategies.base import Requirement, Strategy, missing_requirements

S = TypeVar("S", bound=type[Strategy])

BUILTIN_MODULES: list[str] = [
    "core.engine.strategies.ra_rag",
    "core.engine.strategies.baselines",
    "core.engine.strategies.multirag",
    "core.engine.strategies.astute_rag",
    "core.engine.strategies.crest",
]

_registry: dict[str, type[Strategy]] = {}
_loaded: set[str] = set()


def register(name: str) -> Callable[[S], S]:
    """Class decorator: make a strategy available under ``name``."""

    def decorate(cls: S) -> S:
        known = _registry.get(name)
        if known is not None and known.__qualname__ != cls.__qualname__:
            raise ValueError(f"strategy {name!r} is already registered")
        cls.name = name
        _registry[name] = cls
        return cls

    return decorate


def _load_builtins() -> None:
    for module in BUILTIN_MODULES:
        if module not in _loaded:
            importlib.import_module(module)  # runs its @register decorators
            _loaded.add(module)


def get_strategy(name: str) -> Strategy:
    _load_builtins()
    try:
        return _registry[name]()
    except KeyError:
        raise KeyError(f"unknown strategy {name!r}; available: {available_strategies()}") from None


def strategy_class(name: str) -> type[Strategy]:
    _load_builtins()
    try:
        return _registry[name]
    except KeyError:
        raise KeyError(f"unknown strategy {name!r}; available: {available_strategies()}") from None


def available_strategies() -> list[str]:
    """Every registered strategy, runnable here or not."""
    _load_builtins()
    return sorted(_registry)


def runnable_strategies(offers: frozenset[Requirement]) -> list[str]:
    """The strategies whose requirements ``offers`` meets."""
    _load_builtins()
    return sorted(name for name, cls in _registry.items() if not missing_requirements(cls, offers))


@contextmanager
def isolated_registry() -> Iterator[list[str]]:
    """A scratch copy of the registry (and of BUILTIN_MODULES, yielded for appending);
    everything registered inside is forgotten on exit."""
    _load_builtins()
    saved_registry, saved_loaded, saved_modules = dict(_registry), set(_loaded), list(BUILTIN_MODULES)
    try:
        yield BUILTIN_MODULES
    finally:
        for module in set(BUILTIN_MODULES) - set(saved_modules):
            sys.modules.pop(module, None)  # so a later import registers it afresh
        _registry.clear()
        _registry.update(saved_registry)
        _loaded.clear()
        _loaded.update(saved_loaded)
        BUILTIN_MODULES[:] = saved_modules
