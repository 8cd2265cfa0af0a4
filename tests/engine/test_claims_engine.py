"""The engine's claim code: value normalisers, the declarative mapping, claim resolution."""

from __future__ import annotations

import pytest

from core.engine.claims.mapping import ClaimMapping, MappingError
from core.engine.claims.normalize import (
    get_normalizer,
    normalize_date,
    normalize_isbn,
    normalize_name_list,
    normalize_number,
    normalize_text,
    normalize_time,
    similarity_for,
)
from core.engine.claims.resolve import resolve_claims
from core.engine.claims.types import ExtractedClaim, dedupe_first

# --- normalisers -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("7:10 a.m.", "07:10"),
        ("7:10 PM", "19:10"),
        ("7:10pDec 1", "19:10"),
        ("12/02 7:10 p.m.", "19:10"),
        ("12:30 a.m.", "00:30"),
        ("12:05 p.m.", "12:05"),
        ("19:10", "19:10"),
        ("7:10 p.m. (Estimated runway)", "19:10"),
        ("25:10", None),
        ("Not Available", None),
        ("", None),
    ],
)
def test_times_of_day_become_24_hour_clock_readings(raw: str, expected: str | None) -> None:
    assert normalize_time(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1,234.50 USD", "1234.5"),
        ("$ 12", "12"),
        ("-0.0", "0"),
        ("approx. 3.14159", "3.14159"),
        ("\u22125", "-5"),
        ("1e3", "1000"),
        ("none", None),
        ("", None),
    ],
)
def test_numbers_drop_separators_and_trailing_zeros(raw: str, expected: str | None) -> None:
    assert normalize_number(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2011-12-01", "2011-12-01"),
        ("2011-12-01T07:10:00Z", "2011-12-01"),
        ("December 1, 2011", "2011-12-01"),
        ("Dec 1 2011", "2011-12-01"),
        ("1 December 2011", "2011-12-01"),
        ("12/1/2011", "2011-12-01"),
        ("01.12.2011", "2011-12-01"),
        ("2011/12/01", "2011-12-01"),
        ("next Tuesday", None),
        ("2011-02-30", None),
    ],
)
def test_dates_become_iso_calendar_dates(raw: str, expected: str | None) -> None:
    assert normalize_date(raw) == expected


def test_author_lists_become_sorted_surname_sets() -> None:
    assert normalize_name_list("Knuth, Donald E.") == normalize_name_list("Donald E. Knuth") == "knuth"
    two = normalize_name_list("Schmidt, Cheryl; Meadors, Todd")
    assert two == normalize_name_list("meadors, todd ;  schmidt, cheryl a.;") == "meadors;schmidt"
    assert normalize_name_list("Graham, Ronald, Knuth, Donald") == "graham;knuth"  # Last, First pairs
    assert normalize_name_list("O&#39;Leary, Timothy J.") == "oleary"
    assert normalize_name_list("Not Available") is None


def test_isbns_and_text() -> None:
    assert normalize_isbn("978-0-201-85394-0") == "0201853949"
    assert normalize_isbn("0-201-85394-9") == "0201853949"
    assert normalize_isbn("n/a") is None
    assert normalize_text("  The   Art of  Computer\tProgramming ") == "the art of computer programming"
    assert normalize_text("N/A") is None


def test_unknown_normaliser_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="known: raw, text, time"):
        get_normalizer("colour")


def test_name_lists_agree_partially_other_values_exactly() -> None:
    assert similarity_for("name-list")("graham;knuth", "knuth") == 0.5
    assert similarity_for("time")("07:10", "07:10") == 1.0
    assert similarity_for("time")("07:10", "07:11") == 0.0


# --- the mapping --------------------------------------------------------------------------------------

FLIGHTS = {
    "subject": "flight",
    "source": "src",
    "attributes": {"actual departure": {"field": "dep", "normalizer": "time"}, "gate": "text"},
}


def test_a_record_becomes_one_claim_per_attribute_with_a_value() -> None:
    mapping = ClaimMapping.from_json(FLIGHTS)
    claims = mapping.extract({"src": " aa ", "flight": "AA-1", "dep": "7:10 p.m.", "gate": ""}, {"line": 2})
    assert claims == [
        ExtractedClaim(
            subject="AA-1",
            attribute="actual departure",
            value="19:10",
            raw_value="7:10 p.m.",
            source="aa",
            provenance={"line": 2, "field": "dep"},
        )
    ]  # the empty gate is no claim: the source says nothing about it


def test_nested_fields_lists_and_a_composite_subject() -> None:
    mapping = ClaimMapping.from_json(
        {
            "subject": ["book.title", "book.year"],
            "attributes": {"authors": {"field": "book.authors", "normalizer": "name-list"}},
        }
    )
    (claim,) = mapping.extract({"book": {"title": "TAOCP", "year": 1968, "authors": ["Knuth, Donald"]}}, {})
    assert (claim.subject, claim.attribute, claim.value, claim.raw_value) == (
        "TAOCP 1968",
        "authors",
        "knuth",
        "Knuth, Donald",
    )
    assert claim.source is None
    assert ClaimMapping.from_json(mapping.to_json()) == mapping


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ("not an object", "mapping"),
        ({"subject": "id", "attributes": {"a": "text"}, "colour": 1}, "mapping"),
        ({"attributes": {"a": "text"}}, "subject"),
        ({"subject": "id", "attributes": {}}, "attributes"),
        ({"subject": "id", "attributes": {"a": "colour"}}, "attributes.a"),
        ({"subject": "id", "attributes": {"a": {"field": "x", "normaliser": "time"}}}, "attributes.a"),
        ({"subject": "id", "attributes": {"a": {"field": "", "normalizer": "time"}}}, "attributes.a.field"),
        ({"subject": "id", "subject_normalizer": "nope", "attributes": {"a": "text"}}, "subject_normalizer"),
        ({"subject": "id", "columns": ["id", "id"], "attributes": {"a": "text"}}, "columns"),
    ],
)
def test_a_bad_mapping_names_the_key_at_fault(raw: object, field: str) -> None:
    with pytest.raises(MappingError) as caught:
        ClaimMapping.from_json(raw)
    assert caught.value.field == field


def test_a_record_the_mapping_cannot_read_names_the_field() -> None:
    mapping = ClaimMapping.from_json(FLIGHTS)
    with pytest.raises(MappingError) as caught:
        mapping.extract({"src": "aa", "flight": " ", "dep": "7:10"}, {})
    assert caught.value.field == "flight" and "missing subject" in str(caught.value)
    with pytest.raises(MappingError) as caught:
        mapping.extract({"flight": "AA-1", "dep": "7:10"}, {})
    assert caught.value.field == "src"
    with pytest.raises(MappingError) as caught:
        mapping.extract({"src": "aa", "flight": "AA-1", "dep": {"time": "7:10"}}, {})
    assert caught.value.field == "dep" and "got dict" in str(caught.value)
    with pytest.raises(MappingError) as caught:
        mapping.extract({"src": "aa", "flight": "AA-1", "dep": "7" * 2001}, {})
    assert caught.value.field == "dep" and "longer than 2000" in str(caught.value)
    with pytest.raises(MappingError):
        mapping.check_header(["src", "flight", "gate"])  # no "dep" column


def test_a_source_repeating_an_item_counts_once_first_claim_wins() -> None:
    first = ExtractedClaim("AA-1", "dep", "07:10", "7:10", source="aa")
    again = ExtractedClaim("AA-1", "dep", "07:15", "7:15", source="aa")
    other = ExtractedClaim("AA-1", "dep", "07:15", "7:15", source="ua")
    assert dedupe_first([first, again, other]) == [first, other]


# --- resolution ------------------------------------------------------------------------------------------


def _claims() -> list[tuple[str, tuple[str, str], str]]:
    """Three sources that agree on ten items; "rumours" contradicts them on every one; "echo"
    is right only where it is alone with the majority."""
    rows = []
    for i in range(10):
        item = (f"F{i}", "dep")
        rows += [("airline", item, "07:10"), ("airport", item, "07:10"), ("tracker", item, "07:10")]
        rows.append(("rumours", item, f"2{i}:45"))
    rows.append(("airline", ("F0", "arr"), "09:00"))
    return rows


@pytest.mark.parametrize("estimator", ["iwmv", "onecoin", "accucopy", "truthfinder"])
def test_every_item_resolves_to_the_reliable_value_and_the_rumour_source_scores_low(estimator: str) -> None:
    result = resolve_claims(_claims(), estimator)
    truths = result.truths()
    assert truths[("F3", "dep")] == "07:10" and truths[("F0", "arr")] == "09:00"
    assert len(result.items) == 11
    assert result.sources["rumours"].accuracy < 0.5 < result.sources["airline"].accuracy
    f3 = next(r for r in result.items if r.subject == "F3")
    assert f3.conflicting and f3.values[0].value == "07:10"
    assert set(f3.values[0].sources) == {"airline", "airport", "tracker"}
    assert f3.values[1].sources == ("rumours",)
    assert 0.5 < f3.confidence <= 1.0
    assert sum(v.share for v in f3.values) == pytest.approx(1.0)


def test_gold_fixes_an_item_and_lowers_the_sources_that_contradict_it() -> None:
    plain = resolve_claims(_claims(), "onecoin")
    anchored = resolve_claims(_claims(), "onecoin", gold={("F1", "dep"): "21:45"})
    assert anchored.truths()[("F1", "dep")] == "21:45"
    assert anchored.sources["rumours"].gold_agreements == 1
    assert anchored.sources["airline"].accuracy < plain.sources["airline"].accuracy


def test_the_benchmark_and_the_product_build_the_same_matrix() -> None:
    # The same claims in any order resolve the same way (items and sources are sorted).
    forward = resolve_claims(_claims(), "accucopy")
    backward = resolve_claims(list(reversed(_claims())), "accucopy")
    assert forward.truths() == backward.truths()
    assert {s: r.accuracy for s, r in forward.sources.items()} == pytest.approx(
        {s: r.accuracy for s, r in backward.sources.items()}
    )
