"""Layering rules, checked by parsing the source (every import, module-level and in functions).

- core/services and sources are the domain: they never import the `tasks` app; they start
  jobs through core.services.jobs.dispatch_job, which the tasks app wires up.
- The first-party import graph has no cycles.
- core/engine and core/bench stay framework-free: no Django, DRF, Celery or app modules.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIRST_PARTY = ("core", "sources", "tasks", "reliability_site")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in FIRST_PARTY:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" not in path.parts:
                found[_module_name(path)] = path
    return found


def _is_package(module: str) -> bool:
    return _modules()[module].name == "__init__.py"


def _imports(module: str) -> Iterator[tuple[str, int]]:
    """(imported module, line) for every import statement anywhere in the module.

    `from x import y` counts as importing x, and also x.y when that is a module."""
    tree = ast.parse(_modules()[module].read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative import: resolve against this module's package
                base = module.split(".") if _is_package(module) else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            yield target, node.lineno
            for alias in node.names:
                if f"{target}.{alias.name}" in _modules():
                    yield f"{target}.{alias.name}", node.lineno


def _is_within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _offending(modules_under: tuple[str, ...], banned: tuple[str, ...]) -> list[str]:
    return [
        f"{module} (line {line}) imports {target}"
        for module in _modules()
        if _is_within(module, modules_under)
        for target, line in _imports(module)
        if _is_within(target, banned)
    ]


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {
        module: {target for target, _ in _imports(module) if target in modules and target != module}
        for module in modules
    }


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as [a, b, ..., a], or None (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(graph):
        if state.get(start):
            continue
        path = [start]
        stack = [iter(sorted(graph[start]))]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            elif not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(graph[nxt])))
    return None


def test_the_services_and_the_sources_app_never_import_the_tasks_app():
    assert _modules(), "no first-party module found"
    assert _offending(("core.services", "sources"), ("tasks",)) == []


def test_the_first_party_import_graph_has_no_cycles():
    cycle = _find_cycle(_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_finder_reports_a_cycle():
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_engine_and_the_benchmark_import_no_framework_and_no_app_module():
    banned = (
        "django",
        "rest_framework",
        "celery",
        "sources",
        "tasks",
        "reliability_site",
        "core.models",
        "core.services",
        "core.views",
        "core.api",
    )
    assert _offending(("core.engine", "core.bench"), banned) == []


def _dispatched_jobs() -> list[tuple[str, int, str | None, str | None]]:
    """(module, line, kind, task name) of every dispatch_job(...) call with literal arguments."""
    calls = []
    for module in _modules():
        tree = ast.parse(_modules()[module].read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", getattr(node.func, "attr", "")) == "dispatch_job"
            ):
                given = {k.arg: k.value.value for k in node.keywords if isinstance(k.value, ast.Constant)}
                calls.append((module, node.lineno, given.get("kind"), given.get("task_name")))
    return calls


def test_every_dispatched_job_names_a_known_kind_and_a_registered_task():
    from reliability_site.celery import app
    from tasks import tasks  # noqa: F401  (registers every task of the app)
    from tasks.models import Job

    calls = [call for call in _dispatched_jobs() if call[0] != "core.services.jobs"]
    assert {call[3] for call in calls} >= {
        "tasks.answer_question",
        "tasks.estimation_run",
        "tasks.ingest_files",
        "tasks.reembed_source",
    }
    for module, line, kind, task_name in calls:
        assert kind in Job.Kind.values, f"{module}:{line} dispatches an unknown kind {kind!r}"
        assert task_name in app.tasks, f"{module}:{line} dispatches {task_name!r}, which no task registers"
