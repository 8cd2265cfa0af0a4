"""Sources found copying each other count once at answer time, and an answer a colluding group
also gives says so (issue 36: AccuCopy's discount carried to the answers)."""

from __future__ import annotations

import pytest

from core.engine.reliability.base import Dependence
from core.engine.steps.calibration import checked_examples
from core.engine.steps.dependence import copied_note, copy_groups, groups_from_dependence, once_per_group, units
from core.engine.steps.voting import answer_probability
from core.engine.strategies import StrategyResult
from core.engine.types import SourceInfo
from tests.engine.one_passage import FALSE, NOISE, TRUE, ask

# The demo's estimate after the run script's three checks (bench, reader, seed 0): the
# Reference Desk, the Wire Service and the Quiz Club, then the bloc that AccuCopy found
# (Forum Chatter, Trending Posts, SEO Content Farm: dependent at 1.0, 11 to 23 shared false answers).
DESK, WIRE, QUIZ, TRENDING, FARM = 0.981, 0.958, 0.818, 0.32, 0.268


def _ask(
    sources: list[tuple[str, float, float]], groups: tuple[frozenset[int], ...] = (), name: str = "ra-rag"
) -> StrategyResult:
    return ask(name, sources, groups=groups)


def test_copy_groups_are_the_identified_dependent_pairs_with_false_answers_in_common() -> None:
    ids = [10, 11, 12, 13, 14]
    pairs = [
        Dependence(3, 4, 1.0, 38, 15.0, 23.0, 0),  # the bloc ...
        Dependence(2, 3, 0.99, 30, 17.0, 13.0, 0),  # ... joined through a second pair
        Dependence(0, 1, 0.9, 30, 29.0, 0.0, 1),  # dependent on true answers alone: no evidence
        Dependence(0, 4, 0.3, 34, 29.0, 5.0, 0),  # unlikely dependent
    ]
    assert groups_from_dependence(pairs, ids) == (frozenset({12, 13, 14}),)
    # An estimate agreement does not identify: its "copiers" may be the honest group.
    assert groups_from_dependence(pairs, ids, identified=False) == ()
    assert copy_groups([(1, 2), (5, 6), (2, 3)]) == (frozenset({1, 2, 3}), frozenset({5, 6}))


def test_a_group_that_gives_one_answer_weighs_once() -> None:
    labels = [0, 0, 0, 1, None]
    vote_units = units([1, 2, 3, 4, 5], (frozenset({2, 3, 5}),))
    assert vote_units == [None, 0, 0, None, 0]
    # Source 3 is the heavier member: it keeps its weight, source 2 weighs nothing; an
    # abstaining member and the independent sources keep theirs.
    assert once_per_group(labels, vote_units, [1.0, 0.5, 0.8, 2.0, 0.7]) == [1.0, 0.0, 0.8, 2.0, 0.7]
    # Members that give different answers each count in their own cluster.
    assert once_per_group([0, 1], [0, 0], [0.5, 0.8]) == [0.5, 0.8]


def test_a_colluding_group_below_chance_counts_once_and_against_the_answer() -> None:
    # The demo's "who played miss wheeler in carry on teacher" (gold: Joan Sims): the Quiz Club
    # holds the planted answer "Hattie Jacques", and so do Trending Posts and the SEO Content
    # Farm; the Reference Desk and the Wire Service have nothing on it.
    clusters = [0, 0, 0]
    accuracies = [QUIZ, TRENDING, FARM]
    assert answer_probability(clusters, accuracies, 0) == pytest.approx(0.818, abs=0.01)  # was shown at 0.81
    grouped = answer_probability(clusters, accuracies, 0, units=[None, 0, 0])
    assert grouped < 0.7
    # Four agreeing copiers estimated at 0.2 are one voice at 0.2, not a coin flip.
    assert answer_probability([0] * 4, [0.2] * 4, 0, units=[0] * 4) == pytest.approx(0.2)
    assert answer_probability([0] * 4, [0.2] * 4, 0) == pytest.approx(0.5)
    # A group estimated reliable on the question is one reliable voice: less than the sum.
    together = answer_probability([0, 0], [0.9, 0.9], 0)
    once = answer_probability([0, 0], [0.9, 0.9], 0, units=[0, 0])
    assert once == pytest.approx(0.9) and once < together


def test_unanimous_misinformation_with_a_colluding_group_behind_it_is_warned_and_below_08() -> None:
    sources = [(NOISE, DESK, 3.9), (NOISE, WIRE, 3.1), (FALSE, QUIZ, 1.3), (FALSE, TRENDING, 0.0), (FALSE, FARM, 0.0)]
    before = _ask(sources)
    assert "Frank Sinatra" in before.answer and before.confidence >= 0.8 and not before.notes
    after = _ask(sources, groups=(frozenset({3, 4}),))
    assert "Frank Sinatra" in after.answer and after.confidence < 0.7
    (note,) = after.notes
    assert note.startswith("Copied: source 3 and source 4 also gave this answer") and "0.29 on average" in note


def test_reliable_sources_repeating_a_colluding_groups_answer_are_warned() -> None:
    # The demo's "what is the lead singers name of staind" (gold: Aaron Lewis): the Wire Service
    # and the Quiz Club hold the planted passages too. Their agreement still wins (no signal
    # in the votes tells it from the truth), but the answer says whose answer it repeats.
    sources = [(NOISE, DESK, 3.9), (FALSE, WIRE, 3.1), (FALSE, QUIZ, 0.9), (FALSE, TRENDING, 0.0), (FALSE, FARM, 0.0)]
    result = _ask(sources, groups=(frozenset({3, 4}),))
    assert "Frank Sinatra" in result.answer
    assert [n for n in result.notes if n.startswith("Copied: source 3 and source 4")]


def test_a_bloc_no_longer_outvotes_a_reliable_source_by_its_number() -> None:
    # Two colluders, each estimated a little better than a coin, against one reliable source.
    sources = [(TRUE, 0.8, 2.0), (FALSE, 0.62, 1.2), (FALSE, 0.62, 1.2)]
    assert "Frank Sinatra" in _ask(sources).answer  # 2.4 against 2.0
    counted_once = _ask(sources, groups=(frozenset({1, 2}),))
    assert "Elvis Presley" in counted_once.answer  # 1.2 against 2.0
    bloc = [v for v in counted_once.votes if v.source_id in (1, 2)]
    assert sorted(v.weight for v in bloc) == [0.0, 1.2]
    # Majority vote does not weigh reliability or dependence: still the bloc's answer.
    assert "Frank Sinatra" in _ask(sources, groups=(frozenset({1, 2}),), name="mv").answer


def test_an_answer_from_one_reliable_group_alone_is_one_voice() -> None:
    sources = [(NOISE, 0.95, 3.0), (TRUE, 0.9, 2.2), (TRUE, 0.9, 2.2)]
    alone = _ask(sources, groups=(frozenset({1, 2}),))
    assert "Elvis Presley" in alone.answer
    assert alone.confidence < _ask(sources).confidence
    (note,) = alone.notes
    assert note.startswith("One voice: this answer rests on source 1 and source 2 alone")


def test_independent_sources_get_no_copy_note() -> None:
    by_id = [SourceInfo(i, f"s{i}", accuracy=a) for i, a in enumerate([0.9, 0.3, 0.3])]
    assert copied_note([0], (frozenset({1, 2}),), by_id) is None
    assert copied_note([0, 1], (), by_id) is None
    # One member of a group below chance agreeing with a reliable source repeats nobody: its
    # voice lowers the confidence (it counts against), but no note (measured: such notes were
    # on right answers more often than the wrong answers' base rate).
    assert copied_note([0, 1], (frozenset({1, 2}),), by_id) is None
    assert copied_note([0, 1, 2], (frozenset({1, 2}),), by_id) is not None
    # A group estimated reliable on the question, beside an independent source: no warning.
    reliable = [SourceInfo(i, f"s{i}", accuracy=a) for i, a in enumerate([0.9, 0.8, 0.7])]
    assert copied_note([0, 1, 2], (frozenset({1, 2}),), reliable) is None


def test_the_calibration_counts_a_copy_group_once_as_answering_does() -> None:
    # One checked query: a reliable source and two colluders give the planted answer (cluster 0).
    matrix = [[0, 0, 0]]
    accuracies: list[float | None] = [QUIZ, TRENDING, FARM]
    independent = checked_examples(matrix, {0: 1}, accuracies, [1.3, 0.0, 0.0], kappa=3, random_subsets=0)
    grouped = checked_examples(
        matrix, {0: 1}, accuracies, [1.3, 0.0, 0.0], kappa=3, random_subsets=0, units=[None, 0, 0]
    )
    assert [right for _, right in independent + grouped] == [False, False]
    assert independent[0][0] == pytest.approx(answer_probability([0, 0, 0], accuracies, 0))
    assert grouped[0][0] == pytest.approx(answer_probability([0, 0, 0], accuracies, 0, units=[None, 0, 0]))
    assert grouped[0][0] < independent[0][0]
