"""A bound on JSON nesting depth, checked before any parser recurses into the text.

Python's json module (and everything that walks its result: serialisers, JSONB, our
adapters) recurses once per level of nesting, so a 100,000-level ``[[[...]]]`` ends in a
RecursionError rather than a parse error. ``check_json_depth`` scans the text once for
brackets outside strings (escapes handled) and refuses it at the first level past the
limit, naming the line; ``loads_bounded`` checks, then parses, and turns a RecursionError
from the parser into the same refusal.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

DEFAULT_MAX_DEPTH = 64

# A JSON string, escapes included (an unterminated one runs to the end of the text).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
# +1 for an opening bracket, -1 for a closing one, 0 for any other byte.
_STEP = np.zeros(256, dtype=np.int8)
_STEP[[ord("["), ord("{")]] = 1
_STEP[[ord("]"), ord("}")]] = -1
_BLOCK = 1 << 22  # bytes scanned at a time, so a 20 MB body needs no 100 MB of counters


class JsonTooDeep(ValueError):
    """The text nests arrays/objects deeper than the limit (or deeper than the parser can go)."""

    def __init__(self, limit: int, *, line: int | None = None) -> None:
        self.limit = limit
        self.line = line
        self.reason = f"JSON nested deeper than {limit} levels (JSON_MAX_DEPTH)"
        super().__init__(self.reason + (f" at line {line}" if line is not None else ""))


def json_depth_error(text: str | bytes, limit: int = DEFAULT_MAX_DEPTH) -> JsonTooDeep | None:
    """The refusal for a text nested deeper than ``limit`` levels, else None.

    Only nesting is checked: malformed JSON is left for the parser to report. Strings are
    skipped whole (a bracket inside one does not count); bytes are read as UTF-8, where
    brackets, quotes and backslashes never occur inside a multi-byte character."""
    if limit < 1:
        raise ValueError("the depth limit must be positive")
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    # Deleting the strings keeps the line numbers: a raw newline cannot sit inside a JSON string.
    structure = _STRING.sub(b"", data)
    depth = 0
    for start in range(0, len(structure), _BLOCK):
        steps = _STEP[np.frombuffer(structure, dtype=np.uint8, count=min(_BLOCK, len(structure) - start), offset=start)]
        levels = np.cumsum(steps, dtype=np.int64) + depth
        over = np.flatnonzero(levels > limit)
        if over.size:
            line = structure.count(b"\n", 0, start + int(over[0])) + 1
            return JsonTooDeep(limit, line=line)
        depth = int(levels[-1])
    return None


def check_json_depth(text: str | bytes, limit: int = DEFAULT_MAX_DEPTH) -> None:
    """Raise JsonTooDeep when ``text`` nests deeper than ``limit`` levels."""
    error = json_depth_error(text, limit)
    if error is not None:
        raise error


def loads_bounded(text: str | bytes, limit: int = DEFAULT_MAX_DEPTH, **kwargs: Any) -> Any:
    """``json.loads`` that refuses nesting past ``limit`` with JsonTooDeep, never RecursionError.

    Malformed text still raises json.JSONDecodeError."""
    check_json_depth(text, limit)
    try:
        return json.loads(text, **kwargs)
    except RecursionError:
        raise JsonTooDeep(limit) from None
