"""Where an accepted upload waits for its job: a fresh folder in UPLOAD_DIR, one file per
upload, under a name the filesystem takes whatever the user called the file.

A name becomes ``NNNN-<safe name>``: Django's ``get_valid_filename`` (no path, no odd
characters), then cut to MAX_STORED_NAME_BYTES of UTF-8 keeping its extension (the readers
choose a format by it). Filesystems cap a name at 255 bytes: a 251-character ASCII name, or
90 CJK characters (3 bytes each), used to fail with "File name too long" after the folder was
made, a 500 with an empty folder left behind. The user's own name is kept in the job's
parameters for messages."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Sequence
from pathlib import Path

from django.conf import settings
from django.core.exceptions import SuspiciousFileOperation
from django.utils.text import get_valid_filename

MAX_STORED_NAME_BYTES = 200  # of the 255 a name may have: room for the index and a margin
MAX_SUFFIX_BYTES = 16  # a longer "extension" is part of the name, not a format


def stored_name(index: int, name: str) -> str:
    """The name an upload is kept under (at most MAX_STORED_NAME_BYTES of UTF-8)."""
    try:
        safe = get_valid_filename(Path(name).name) or "upload"
    except SuspiciousFileOperation:  # nothing usable left of the name ("???", "..")
        safe = "upload"
    suffix = Path(safe).suffix
    if len(suffix.encode()) > MAX_SUFFIX_BYTES:
        suffix = ""
    stem = safe[: len(safe) - len(suffix)] if suffix else safe
    prefix = f"{index:04d}-"
    budget = MAX_STORED_NAME_BYTES - len(prefix) - len(suffix.encode())
    cut = stem.encode()[:budget].decode(errors="ignore") or "upload"
    return f"{prefix}{cut}{suffix}"


def keep_uploads(blobs: Sequence[tuple[str, bytes]]) -> tuple[Path, list[tuple[Path, str]]]:
    """Write the uploads into a new folder of UPLOAD_DIR: (the folder, [(stored path, the
    user's name)]). Nothing is left behind when a write fails."""
    folder = Path(settings.UPLOAD_DIR) / uuid.uuid4().hex
    folder.mkdir(parents=True, exist_ok=True)
    kept: list[tuple[Path, str]] = []
    try:
        for index, (name, data) in enumerate(blobs):
            path = folder / stored_name(index, name)
            path.write_bytes(data)
            kept.append((path.resolve(), name))
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return folder, kept
