"""What users see of a job: the names they gave their files, never a path on the server.

An ingestion job's params hold server paths (`paths`, `upload_dir`, and `display_names`
keyed by path) for the worker; an error or log line may quote one (an OS error, a folder
that vanished). Pages and the API show `public_job(job)`: params without those keys (an
ingestion lists its `files` by name instead), and every text with each server path turned
into the file's name.
"""

from __future__ import annotations

import copy
import re
import tempfile
from functools import lru_cache
from pathlib import PurePath
from typing import NoReturn

from django.conf import settings

from core.engine.types import JSONObject, JSONValue
from tasks.models import Job

INTERNAL_PARAMS = frozenset({"paths", "upload_dir", "display_names"})
_UPLOAD_PREFIX = re.compile(r"^\d{4}-")  # sources.services names stored uploads "0000-name"


def _roots() -> tuple[str, ...]:
    """Folders of this server that a message must never show."""
    candidates = {settings.BASE_DIR, settings.DATA_DIR, settings.UPLOAD_DIR, tempfile.gettempdir()}
    return tuple(sorted({str(PurePath(str(c))) for c in candidates if str(c) not in ("", "/")}, key=len, reverse=True))


@lru_cache(maxsize=8)
def _root_pattern(roots: tuple[str, ...]) -> re.Pattern[str]:
    # A root (a whole path segment: /tmp, not /tmpfoo), then the rest of the path up to a
    # quote, whitespace or the end.
    return re.compile("(?:" + "|".join(re.escape(r) for r in roots) + r")(?:/[^\s'\"]*|(?![\w.-]))")


def _shown_name(path: str) -> str:
    name = PurePath(path.rstrip("/")).name
    return _UPLOAD_PREFIX.sub("", name) or "file"


def _path_names(params: JSONObject) -> dict[str, str]:
    """Each server path the job knows of -> the name to show for it."""
    given = params.get("display_names")
    names: dict[str, str] = {str(k): str(v) for k, v in given.items()} if isinstance(given, dict) else {}
    paths = params.get("paths")
    for raw in paths if isinstance(paths, list) else []:
        names.setdefault(str(raw), _shown_name(str(raw)))
    if params.get("upload_dir"):
        names.setdefault(str(params["upload_dir"]), "the upload")
    return names


def scrub(text: str, params: JSONObject) -> str:
    """`text` with every server path replaced by the name of its file."""
    if not text:
        return text
    for path, name in sorted(_path_names(params).items(), key=lambda item: len(item[0]), reverse=True):
        text = text.replace(path, name)
    roots = _roots()
    return _root_pattern(roots).sub(lambda m: _shown_name(m.group(0)), text) if roots else text


def _scrub_value(value: JSONValue, params: JSONObject) -> JSONValue:
    if isinstance(value, str):
        return scrub(value, params)
    if isinstance(value, list):
        return [_scrub_value(v, params) for v in value]
    if isinstance(value, dict):
        return {k: _scrub_value(v, params) for k, v in value.items()}
    return value


def public_params(job: Job) -> JSONObject:
    """The job's params without the worker's internal keys; an ingestion names its files."""
    params = job.params if isinstance(job.params, dict) else {}
    shown = {k: _scrub_value(v, params) for k, v in params.items() if k not in INTERNAL_PARAMS}
    if isinstance(params.get("paths"), list):
        names = _path_names(params)
        shown["files"] = [names.get(str(p), _shown_name(str(p))) for p in params["paths"]]
    return shown


def _not_saved(*args: object, **kwargs: object) -> NoReturn:
    raise RuntimeError("a job prepared for display is never saved")


def public_job(job: Job) -> Job:
    """A copy of `job` for display only (saving it raises): public params, and message,
    error, log and result with server paths turned into file names. Fields the query
    deferred are blank on the copy (never loaded unscrubbed behind the caller's back);
    the params are needed, so never defer them."""
    params = job.params if isinstance(job.params, dict) else {}
    deferred = job.get_deferred_fields()
    shown = copy.copy(job)
    shown.params = public_params(job)
    blank: JSONObject = {"message": "", "error": "", "log": [], "result": {}}
    for field, empty in blank.items():
        setattr(shown, field, empty if field in deferred else _scrub_value(getattr(job, field), params))
    shown.save = _not_saved  # type: ignore[method-assign]  # a shown copy that must never be saved
    return shown
