"""Layering rules, checked by parsing the source (every import, module-level and in functions).

- core/services and sources are the domain: they never import the `tasks` app; they start
  jobs through runtime.jobs.dispatch_job, which the tasks app wires up.
- runtime (configured backends, the job hook, advisory locks) is neutral: it imports no app,
  and the sources app takes what it needs from it, never from core.services.
- No cycle between the apps (core, runtime, sources, tasks, reliability_site), below the
  entry points; the framework-free engine and benchmark count as a library of their own.
- Nothing below the entry points (views, API, admin, URL confs, management commands,
  template tags) imports one, and an app's entry points never import another app's.
- The settings import no app and no engine module.
- The first-party import graph has no cycles.
- core/engine and core/bench stay framework-free: no Django, DRF, Celery or app modules.
- The tests: an area's tests (tests/api, tests/engine, ...) import helpers of their own area or
  the shared ones at the top of tests/ (factories, corpus, fakes, scripted, helpers), never
  another area's, and nothing imports a conftest (pytest hands out its fixtures).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIRST_PARTY = ("core", "runtime", "sources", "tasks", "reliability_site")
# The framework-free library every app may use (it imports none: see the last rules).
LIBRARIES = ("core.engine", "core.bench")
# The top layer: what a request, a URL conf, the admin or a command calls into. These may call
# any app's services, and nothing below them imports them.
ENTRY_POINT = re.compile(r"(^|\.)(views|api|admin|urls|management|templatetags)(\.|$)")
# Imports of core.services from the sources app, each with its reason.
SOURCES_TO_CORE_SERVICES = {
    # The sources admin's "Start an estimation run on the selected sources" action: an entry
    # point calling core's service, as the page and the API do.
    ("sources.admin", "core.services.estimation"): "admin action",
}


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


def _is_entry_point(module: str) -> bool:
    return bool(ENTRY_POINT.search(module))


def _app(module: str) -> str:
    """The app a module belongs to: its top-level package, or the engine / benchmark library."""
    return next((lib for lib in LIBRARIES if _is_within(module, (lib,))), module.split(".")[0])


def _app_graph() -> dict[str, set[str]]:
    """App -> the apps its modules below the entry points import."""
    graph: dict[str, set[str]] = {}
    for module, targets in _graph().items():
        if _is_entry_point(module):
            continue
        graph.setdefault(_app(module), set()).update(_app(t) for t in targets if _app(t) != _app(module))
    for targets in list(graph.values()):
        for target in targets:
            graph.setdefault(target, set())
    return graph


def test_the_sources_app_takes_backends_jobs_and_locks_from_runtime_never_from_core_services():
    found = [
        (module, target)
        for module in _modules()
        if _is_within(module, ("sources",))
        for target, _ in _imports(module)
        if _is_within(target, ("core.services",))
    ]
    assert found, "the allowed import below is gone: empty SOURCES_TO_CORE_SERVICES"
    assert sorted(set(found)) == sorted(SOURCES_TO_CORE_SERVICES)


def test_runtime_imports_no_app():
    banned = ("core.models", "core.services", "core.views", "core.api", "sources", "tasks", "reliability_site")
    assert _offending(("runtime",), banned) == []


def test_the_apps_import_each_other_without_a_cycle():
    graph = _app_graph()
    assert {"core", "runtime", "sources", "tasks", "reliability_site", "core.engine"} <= set(graph)
    cycle = _find_cycle(graph)
    assert cycle is None, "app cycle: " + " -> ".join(cycle or [])
    assert "core" in graph["tasks"] and "sources" in graph["core"] and "runtime" in graph["sources"]


def test_nothing_below_the_entry_points_imports_one():
    found = [
        f"{module} (line {line}) imports {target}"
        for module in _modules()
        if not _is_entry_point(module)
        for target, line in _imports(module)
        if target in _modules() and _is_entry_point(target)
    ]
    assert found == []


def test_the_services_models_and_apps_below_them_import_no_form():
    """Forms sit with the entry points, above the services: a rule a form and a service share
    (a fact query's byte limit) lives with the model, the ask form's shape with its page data."""
    below = ("core.services", "core.models", "sources", "runtime", "tasks")
    found = [line for line in _offending(below, ("core.forms",)) if not _is_entry_point(line.split(" ")[0])]
    assert found == []


def test_an_app_s_entry_points_import_no_other_app_s_entry_points():
    """URL confs excepted: the root URL conf routes to every app's views."""
    found = [
        f"{module} (line {line}) imports {target}"
        for module in _modules()
        if _is_entry_point(module) and not module.endswith(".urls")
        for target, line in _imports(module)
        if target in _modules() and _is_entry_point(target) and _app(target) != _app(module)
    ]
    assert found == []


def test_the_settings_import_no_app_and_no_engine_module():
    assert _offending(("reliability_site.settings",), ("core", "runtime", "sources", "tasks")) == []


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


def _dispatched_jobs() -> list[tuple[str, int, object, object]]:
    """(module, line, kind, task name) of every dispatch_job(...) call with literal arguments
    (kind and task name: whatever literal the call gives, None where it gives none)."""
    calls: list[tuple[str, int, object, object]] = []
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

    calls = [call for call in _dispatched_jobs() if call[0] != "runtime.jobs"]
    assert {call[3] for call in calls} >= {
        "tasks.answer_question",
        "tasks.estimation_run",
        "tasks.ingest_files",
        "tasks.reembed_source",
    }
    for module, line, kind, task_name in calls:
        assert kind in Job.Kind.values, f"{module}:{line} dispatches an unknown kind {kind!r}"
        assert task_name in app.tasks, f"{module}:{line} dispatches {task_name!r}, which no task registers"


def _test_module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _test_imports() -> Iterator[tuple[Path, str, int]]:
    """(file, imported tests module, line) for every import of a tests module, relative
    imports resolved and `from tests.x import y` read as tests.x.y where that is a module."""
    modules = {_test_module(path) for path in (ROOT / "tests").rglob("*.py")}
    for path in sorted((ROOT / "tests").rglob("*.py")):
        package = _test_module(path) if path.name == "__init__.py" else _test_module(path).rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(anchor + ([node.module] if node.module else []))
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            else:
                continue
            for name in names:
                if name == "tests" or name.startswith("tests."):
                    yield path, name, node.lineno


def test_a_test_area_imports_its_own_helpers_or_the_shared_ones_and_no_conftest():
    shared = {f"tests.{path.stem}" for path in (ROOT / "tests").glob("*.py")} - {"tests.conftest", "tests.__init__"}
    offending, seen = [], 0
    for path, target, line in _test_imports():
        seen += 1
        area = path.relative_to(ROOT / "tests").parts
        own_area = len(area) > 1 and target.startswith(f"tests.{area[0]}.")
        if target.rpartition(".")[2] == "conftest" or not (own_area or target in shared):
            offending.append(f"{path.relative_to(ROOT)} (line {line}) imports {target}")
    assert seen > 100  # the walk reads the imports at all
    assert offending == []
