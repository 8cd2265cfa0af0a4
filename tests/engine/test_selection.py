from __future__ import annotations

from core.engine.steps.selection import kappa_rrss, kappa_rss
from core.engine.types import SourceInfo

SOURCES = [SourceInfo(i, f"s{i}", weight=r) for i, r in enumerate([0.2, 0.9, 0.5, 0.7, 0.8])]


def test_it_visits_by_descending_reliability_and_stops_at_kappa() -> None:
    abstains = {4}  # the second most reliable source has nothing relevant
    batches: list[list[int]] = []

    def answer(batch: list[SourceInfo]) -> list[str]:
        batches.append([s.id for s in batch])
        return ["IDK" if s.id in abstains else f"a{s.id}" for s in batch]

    selection, results = kappa_rrss(SOURCES, 2, answer, lambda r: r == "IDK")
    assert selection.order == [1, 4, 3, 2, 0]
    assert selection.visited == [1, 4, 3]
    assert selection.selected == [1, 3]
    assert selection.generator_calls == 3
    assert batches == [[1, 4], [3]]
    assert set(results) == {1, 4, 3}


def test_it_visits_everything_when_too_few_sources_answer() -> None:
    selection, _ = kappa_rrss(SOURCES, 3, lambda b: ["IDK"] * len(b), lambda r: r == "IDK")
    assert selection.visited == selection.order
    assert selection.selected == []


def test_it_takes_the_kappa_most_reliable_for_rss() -> None:
    assert [s.id for s in kappa_rss(SOURCES, 3)] == [1, 4, 3]


def test_sources_tied_with_the_kappa_th_are_all_asked_and_kept_so_list_order_never_picks_a_group() -> None:
    # An unidentified estimate gives two groups one equal weight: the list order must not
    # choose between them (ids 0-5 would otherwise be the first four asked every time).
    tied = [SourceInfo(i, f"s{i}", weight=0.6, answers_count=40) for i in range(9)]
    tied.append(SourceInfo(9, "low", weight=0.1, answers_count=40))
    batches: list[list[int]] = []

    def answer(batch: list[SourceInfo]) -> list[str]:
        batches.append([s.id for s in batch])
        return ["IDK" if s.id == 7 else f"a{s.id}" for s in batch]

    selection, _ = kappa_rrss(tied, 4, answer, lambda r: r == "IDK")
    assert selection.selected == [0, 1, 2, 3, 4, 5, 6, 8]  # every tied source that answered; not the lower one
    assert batches == [[0, 1, 2, 3], [4, 5, 6, 7, 8]]
    assert [s.id for s in kappa_rss(tied, 4)] == list(range(9))
    # No tie at the cut: exactly kappa, as before; and sources never estimated (all at the
    # prior) are cut at kappa in list order: kappa is the budget of calls.
    assert [s.id for s in kappa_rss(SOURCES, 2)] == [1, 4]
    fresh = [SourceInfo(i, f"s{i}", weight=0.6) for i in range(5)]
    assert [s.id for s in kappa_rss(fresh, 2)] == [0, 1]
    selection, _ = kappa_rrss(fresh, 2, lambda b: [f"a{s.id}" for s in b], lambda r: r == "IDK")
    assert selection.selected == [0, 1] and selection.generator_calls == 2


def test_the_tie_extension_is_bounded_and_needs_an_estimated_kappa_th_source() -> None:
    from core.engine.steps.selection import TIE_LIMIT

    many = [SourceInfo(i, f"s{i}", weight=0.6, answers_count=40) for i in range(200)]
    batches: list[int] = []

    def answer(batch: list[SourceInfo]) -> list[str]:
        batches.append(len(batch))
        return [f"a{s.id}" for s in batch]

    selection, _ = kappa_rrss(many, 4, answer, lambda r: r == "IDK")
    assert len(selection.selected) == TIE_LIMIT and sum(batches) == TIE_LIMIT
    assert len(kappa_rss(many, 4)) == TIE_LIMIT
    # The kappa-th kept source was never estimated: no extension, whatever follows it.
    mixed = [
        SourceInfo(0, "fresh", weight=0.6),
        *[SourceInfo(i, f"s{i}", weight=0.6, answers_count=9) for i in range(1, 6)],
    ]
    assert [s.id for s in kappa_rss(mixed, 1)] == [0]
