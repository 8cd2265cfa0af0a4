"""The JSON nesting bound every parse path uses (core.engine.jsondepth)."""

from __future__ import annotations

import json

import pytest

from core.engine.jsondepth import JsonTooDeep, check_json_depth, json_depth_error, loads_bounded

DEEP = "[" * 100_000 + "]" * 100_000


def test_a_hundred_thousand_nested_arrays_are_refused_naming_the_limit_instead_of_recursing() -> None:
    with pytest.raises(JsonTooDeep) as caught:
        loads_bounded(DEEP, 64)
    assert caught.value.limit == 64
    assert "deeper than 64 levels" in str(caught.value) and "JSON_MAX_DEPTH" in str(caught.value)


def test_nesting_up_to_the_limit_parses_and_one_level_more_is_refused() -> None:
    assert loads_bounded('{"a": [[1]]}', 3) == {"a": [[1]]}
    assert json_depth_error('{"a": [[[1]]]}', 3) is not None


def test_brackets_inside_strings_and_after_escaped_quotes_do_not_count() -> None:
    text = json.dumps({"text": '[[[[{{{{ " [[[[ \\ {{{{', "more": ["x]]]]"]})
    assert json_depth_error(text, 2) is None
    assert loads_bounded(text, 2)["more"] == ["x]]]]"]


def test_the_refusal_names_the_line_where_the_limit_is_passed() -> None:
    error = json_depth_error('{\n "a": 1,\n "b": [[[[1]]]]\n}', 3)
    assert error is not None and error.line == 3


def test_bytes_are_scanned_like_text_and_malformed_json_is_left_to_the_parser() -> None:
    check_json_depth('["é", [1]]'.encode(), 2)
    with pytest.raises(json.JSONDecodeError):
        loads_bounded("[1, oops]", 5)


def test_a_recursion_error_from_the_parser_becomes_the_same_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    def recursing(*args: object, **kwargs: object) -> object:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(json, "loads", recursing)
    with pytest.raises(JsonTooDeep):
        loads_bounded("[1]", 5)
