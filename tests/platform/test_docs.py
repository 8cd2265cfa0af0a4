"""The README and the docs say what is true today: the two commands exist and CI runs the
test one, every link and every repository path they name exists, and every setting the
configuration table lists is read by the settings or the run script."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TOP = ("core/", "sources/", "tasks/", "runtime/", "scripts/", "docs/", "tests/", "reliability_site/", "templates/")


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def test_the_readme_gives_the_run_and_test_commands_and_ci_runs_the_test_one() -> None:
    readme = _text(ROOT / "README.md")
    assert "```bash\nbash scripts/run.sh\n```" in readme
    assert "```bash\nbash scripts/test.sh\n```" in readme
    assert (ROOT / "scripts/run.sh").is_file() and (ROOT / "scripts/test.sh").is_file()
    assert "bash scripts/test.sh" in _text(ROOT / ".ci/run")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_relative_link_points_to_a_file_that_exists(doc: Path) -> None:
    missing = []
    for target in re.findall(r"\]\(([^)\s]+)\)", _text(doc)):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = target.split("#", 1)[0]
        if not (doc.parent / path).exists():
            missing.append(target)
    assert missing == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_repository_path_named_in_code_style_exists(doc: Path) -> None:
    missing = []
    for token in re.findall(r"`([^`\s]+)`", _text(doc)):
        path = token.split(":", 1)[0].rstrip(".,")
        if not path.startswith(TOP) or any(c in path for c in "<>*{}$") or re.match(r"[a-z_]+/\d{4}$", path):
            continue
        if not (ROOT / path).exists():
            missing.append(token)
    assert missing == []


def test_every_setting_in_the_configuration_table_is_read_by_the_settings_or_the_run_script() -> None:
    readme = _text(ROOT / "README.md")
    table = readme.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    names = {
        name
        for row in table.splitlines()
        if row.startswith("| `")
        for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", row.split("|")[1])
    }
    assert len(names) > 40
    readers = _text(ROOT / "reliability_site/settings.py") + _text(ROOT / "scripts/run.sh")
    readers += "".join(_text(p) for p in (ROOT / "reliability_site").glob("*.py"))
    readers += "".join(_text(p) for p in (ROOT / "core/management/commands").glob("*.py"))
    unread = sorted(name for name in names if name not in readers)
    assert unread == []
