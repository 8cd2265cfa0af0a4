"""One way to plug in: every family of plug-ins (answer strategies, reliability estimators,
generator backends, NLI backends, document and claim formats) is a :class:`Registry` of
names, and a plug-in joins its family with the family's decorator where it is defined::

    @ESTIMATORS.register("iwmv")
    class IWMV: ...

A family whose members live in modules nobody else imports names them in
``builtin_modules``: they are imported (running their decorators) on the first lookup.
What a family holds is checked when it is registered (``accepts``), so a lookup returns
what its type says. Tests add plug-ins inside :meth:`Registry.isolated`, so nothing they
register leaks into another test.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Generic, TypeGuard, TypeVar

T = TypeVar("T")
V = TypeVar("V")


class BackendNotConfigured(RuntimeError):
    """A backend was selected in settings without what it needs (URL, model name)."""


class Registry(Generic[T]):
    """Names to the plug-ins of one family (``kind`` names the family in messages)."""

    def __init__(
        self, kind: str, accepts: Callable[[object], TypeGuard[T]], builtin_modules: Sequence[str] = ()
    ) -> None:
        self.kind = kind
        self._accepts = accepts
        self.builtin_modules = list(builtin_modules)
        self._items: dict[str, T] = {}
        self._loaded: set[str] = set()

    def register(self, name: str) -> Callable[[V], V]:
        """Decorator: make the decorated plug-in available under ``name``. A name is taken
        once (the same definition again, as on a module reload, is allowed)."""

        def decorate(item: V) -> V:
            self.add(name, item)
            return item

        return decorate

    def add(self, name: str, item: object) -> None:
        if not self._accepts(item):
            raise TypeError(f"{item!r} is not a {self.kind}")
        known = self._items.get(name)
        if known is not None and _qualname(known) != _qualname(item):
            raise ValueError(f"{self.kind} {name!r} is already registered")
        self._items[name] = item

    def _load(self) -> None:
        for module in self.builtin_modules:
            if module not in self._loaded:
                self._loaded.add(module)
                importlib.import_module(module)  # runs its registrations

    def get(self, name: str) -> T:
        self._load()
        try:
            return self._items[name]
        except KeyError:
            raise KeyError(f"unknown {self.kind} {name!r}; available: {', '.join(self.names())}") from None

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._items

    def names(self) -> list[str]:
        self._load()
        return sorted(self._items)

    def items(self) -> list[tuple[str, T]]:
        """In registration order (a format lookup tries them in that order)."""
        self._load()
        return list(self._items.items())

    @contextmanager
    def isolated(self) -> Iterator[list[str]]:
        """Whatever is registered inside the block is gone after it. Yields the list of
        built-in modules: a module appended to it is imported on the next lookup, and
        forgotten on exit (so a later import registers it afresh)."""
        self._load()
        saved, saved_loaded, saved_modules = dict(self._items), set(self._loaded), list(self.builtin_modules)
        try:
            yield self.builtin_modules
        finally:
            for module in set(self.builtin_modules) - set(saved_modules):
                sys.modules.pop(module, None)
            self._items.clear()
            self._items.update(saved)
            self._loaded.clear()
            self._loaded.update(saved_loaded)
            self.builtin_modules[:] = saved_modules


def _qualname(item: object) -> str:
    return f"{getattr(item, '__module__', '')}.{getattr(item, '__qualname__', repr(item))}"
