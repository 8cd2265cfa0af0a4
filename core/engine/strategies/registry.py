"""The strategy registry: names to strategy classes.

Built-in strategies live one module each (or one family per module) and register
themselves with ``@register("name")`` when imported (the registry idiom of every plug-in
family, core.engine.registry); the registry imports the modules in ``BUILTIN_MODULES`` on
first use. Adding a strategy is one new module plus one line here.
Tests use :func:`isolated_registry` so a strategy they register never leaks into others.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TypeGuard, TypeVar

from core.engine.registry import Registry
from core.engine.strategies.base import Requirement, Strategy, missing_requirements

S = TypeVar("S", bound=type[Strategy])


def _is_strategy_class(item: object) -> TypeGuard[type[Strategy]]:
    return isinstance(item, type) and issubclass(item, Strategy)


STRATEGIES: Registry[type[Strategy]] = Registry(
    "strategy",
    _is_strategy_class,
    builtin_modules=(
        "core.engine.strategies.ra_rag",
        "core.engine.strategies.baselines",
        "core.engine.strategies.multirag",
        "core.engine.strategies.astute_rag",
        "core.engine.strategies.crest",
    ),
)
BUILTIN_MODULES = STRATEGIES.builtin_modules


def register(name: str) -> Callable[[S], S]:
    """Class decorator: make a strategy available under ``name`` (which it takes as its
    ``name``): the registry decorator of every plug-in family, core.engine.registry."""

    def decorate(cls: S) -> S:
        cls.name = name
        return STRATEGIES.register(name)(cls)

    return decorate


def get_strategy(name: str) -> Strategy:
    return STRATEGIES.get(name)()


def strategy_class(name: str) -> type[Strategy]:
    return STRATEGIES.get(name)


def available_strategies() -> list[str]:
    """Every registered strategy, runnable here or not."""
    return STRATEGIES.names()


def runnable_strategies(offers: frozenset[Requirement]) -> list[str]:
    """The strategies whose requirements ``offers`` meets."""
    return sorted(name for name, cls in STRATEGIES.items() if not missing_requirements(cls, offers))


def isolated_registry() -> AbstractContextManager[list[str]]:
    """A scratch copy of the registry (and of BUILTIN_MODULES, yielded for appending);
    everything registered inside is forgotten on exit."""
    return STRATEGIES.isolated()
