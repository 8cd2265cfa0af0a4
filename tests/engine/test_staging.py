"""The one build-beside-then-rename step every prepared model folder goes through."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from core.engine.backends.staging import staged_folder


def _complete(path: Path) -> bool:
    return (path / "DONE").is_file()


def _fill(folder: Path, text: str) -> None:
    folder.mkdir()
    (folder / "weights").write_text(text)
    (folder / "DONE").write_text("")


def test_a_built_folder_is_renamed_into_place_readable_and_nothing_else_is_left(tmp_path: Path) -> None:
    dest = tmp_path / "model"
    with staged_folder(dest, _complete) as stage:
        (stage.scratch / "archive.zip").write_text("intermediate")
        _fill(stage.folder, "new")
        stage.folder.chmod(0o700)
    assert (dest / "weights").read_text() == "new"
    assert stat.S_IMODE(dest.stat().st_mode) == 0o755
    assert stat.S_IMODE((dest / "weights").stat().st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]  # work folder and scratch gone


def test_an_error_while_building_leaves_no_folder_under_the_final_name(tmp_path: Path) -> None:
    dest = tmp_path / "model"
    with pytest.raises(RuntimeError, match="conversion failed"), staged_folder(dest, _complete) as stage:
        stage.folder.mkdir()
        (stage.folder / "weights").write_text("half")
        raise RuntimeError("conversion failed")
    assert list(tmp_path.iterdir()) == []


def test_an_incomplete_copy_is_replaced_and_a_complete_one_written_meanwhile_is_kept(tmp_path: Path) -> None:
    dest = tmp_path / "model"
    dest.mkdir()
    (dest / "weights").write_text("broken")  # no DONE: a copy a crash left behind
    with staged_folder(dest, _complete) as stage:
        _fill(stage.folder, "new")
    assert (dest / "weights").read_text() == "new"

    with staged_folder(dest, _complete) as stage:
        _fill(stage.folder, "second")  # another process finished first: its copy stays
    assert (dest / "weights").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]
