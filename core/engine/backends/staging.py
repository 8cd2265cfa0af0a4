"""Model folders built beside their final place and renamed into it, written once for every
local model file the product prepares (the dequantised transformers cache, the CTranslate2
conversion, the packaged embedders).

A crash, a Ctrl-C or a second process preparing the same model never leaves a half-written
folder under the final name: the folder is filled in a private work folder in the same
parent (so the rename is atomic), made readable (a worker may run as another user; the
model is no secret), and renamed onto ``dest``. A complete ``dest`` written meanwhile by
another process is kept; an incomplete one is moved aside and removed.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Stage:
    """``folder``: create and fill it (it does not exist yet); it becomes ``dest``.
    ``scratch``: room for intermediate files (assembled parts, archives), removed with
    the work folder."""

    folder: Path
    scratch: Path


def make_readable(folder: Path) -> None:
    """Folders 0755, files 0644 (mkdtemp and some writers make them private)."""
    folder.chmod(0o755)
    for path in folder.rglob("*"):
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)


@contextmanager
def staged_folder(dest: Path, is_complete: Callable[[Path], bool]) -> Iterator[Stage]:
    """Build ``dest`` through a :class:`Stage`: when the block ends without error, the
    stage's folder is renamed onto ``dest`` (unless ``is_complete(dest)`` already holds:
    another process finished first). On any error nothing is renamed; the work folder is
    always removed."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        stage = Stage(work / "folder", work / "scratch")
        stage.scratch.mkdir()
        yield stage
        make_readable(stage.folder)
        if dest.exists() or dest.is_symlink():
            if is_complete(dest):
                return
            os.replace(dest, work / "stale")  # an incomplete or altered copy: never loaded
        try:
            os.replace(stage.folder, dest)
        except OSError:
            if not is_complete(dest):  # not a race another process won
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
