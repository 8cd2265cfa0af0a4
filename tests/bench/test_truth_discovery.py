from __future__ import annotations

from pathlib import Path

from core.bench.truth import Claim, ClaimSet, load_books, load_flights
from core.bench.truth_methods import evaluate_truth_discovery, ltm_truths, majority_vote, truthfinder_truths
from core.engine.claims.normalize import normalize_isbn as isbn10
from core.engine.claims.normalize import normalize_name_list as normalize_authors
from core.engine.claims.normalize import normalize_time, set_similarity

TASK = ("t", "authors")  # a toy (subject, attribute)


def test_flight_times_in_every_format_normalise_to_a_24_hour_clock() -> None:
    assert normalize_time("7:10 a.m.") == "07:10"
    assert normalize_time("7:10 PM") == "19:10"
    assert normalize_time("7:10pDec 1") == "19:10"
    assert normalize_time("12/02 7:10 p.m.") == "19:10"
    assert normalize_time("12:30 a.m.") == "00:30"
    assert normalize_time("7:10 p.m. (Estimated runway)") == "19:10"
    assert normalize_time("Not Available") is None
    assert normalize_time("") is None


def test_author_lists_normalise_regardless_of_order_punctuation_and_initials() -> None:
    a = normalize_authors("Knuth, Donald E.")
    assert a == normalize_authors("Donald E. Knuth") == normalize_authors("knuth, donald e.;  ") == "knuth"
    two = normalize_authors("Schmidt, Cheryl; Meadors, Todd")
    assert two == normalize_authors("meadors, todd ;  schmidt, cheryl a.;") == "meadors;schmidt"
    assert normalize_authors("Not Available") is None


def test_isbn13_converts_to_isbn10() -> None:
    assert isbn10("9780201853940") == "0201853949"
    assert isbn10("0201853949") == "0201853949"


def test_author_sets_are_similar_by_their_shared_surnames() -> None:
    assert set_similarity("knuth", "knuth") == 1.0
    assert set_similarity("meadors;schmidt", "schmidt") == 0.5
    assert set_similarity("knuth", "meadors") == 0.0


def test_truthfinder_on_books_lets_overlapping_author_sets_support_each_other() -> None:
    claims = ClaimSet(
        "books",
        [Claim("s1", TASK, "a;b"), Claim("s2", TASK, "a;b"), Claim("s3", TASK, "a"), Claim("s4", TASK, "c")],
        {TASK: "a;b"},
    )
    assert truthfinder_truths(claims).truths == {TASK: "a;b"}


def test_majority_vote_picks_the_most_claimed_value() -> None:
    claims = ClaimSet("toy", [Claim("s1", TASK, "a"), Claim("s2", TASK, "a"), Claim("s3", TASK, "b")], {TASK: "a"})
    assert majority_vote(claims).truths == {TASK: "a"}


def test_flights_claims_cover_all_sources_and_labelled_tasks(data_dir: Path) -> None:
    flights = load_flights(data_dir)
    assert len(flights.sources) == 38
    assert len(flights.gold) == 400
    assert set(flights.gold) <= set(flights.tasks)


def test_iwmv_is_at_least_as_accurate_as_majority_vote_on_flights_and_books(data_dir: Path) -> None:
    for claims in (load_flights(data_dir), load_books(data_dir)):
        result = evaluate_truth_discovery(claims, methods=("majority-vote", "iwmv"))
        methods = result["methods"]
        assert methods["iwmv"]["accuracy"] >= methods["majority-vote"]["accuracy"]  # type: ignore[index]


def test_ltm_trusts_the_sources_that_agree_with_the_rest_and_is_deterministic() -> None:
    """LTM (Zhao et al., VLDB 2012): three sources agree on twenty items; a fourth gives its own
    value on all of them and, on one more item, is alone against one of the three."""
    rows: list[Claim] = []
    for k in range(20):
        task = (f"i{k}", "t")
        rows += [Claim(s, task, f"v{k}") for s in ("s1", "s2", "s3")]
        rows.append(Claim("bad", task, f"w{k}"))
    rows += [Claim("s1", ("x", "t"), "right"), Claim("bad", ("x", "t"), "wrong")]
    claims = ClaimSet("toy", rows, {})
    first = ltm_truths(claims)
    assert all(first.truths[(f"i{k}", "t")] == f"v{k}" for k in range(20))
    assert first.truths[("x", "t")] == "right"
    assert first.source_accuracy["s1"] > first.source_accuracy["bad"]
    assert ltm_truths(claims).truths == first.truths
