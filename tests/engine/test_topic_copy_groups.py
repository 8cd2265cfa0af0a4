"""A bloc that colludes on one topic is counted once there only (issue 39): on the other topics
its members answer independently, and rightly, and their votes count one by one."""

from __future__ import annotations

from types import SimpleNamespace
from typing import cast

from core.engine.backends.generation import ExtractiveReader
from core.engine.backends.nli import EmbeddingLexicalNLI
from core.engine.params import parse_params
from core.engine.steps.dependence import groups_from_dependence, topic_copy_groups
from core.engine.steps.memory_retriever import InMemoryRetriever
from core.engine.steps.topic_weights import copy_groups_on
from core.engine.strategies import EngineContext, StrategyResult, get_strategy
from core.engine.topics import find_topics
from core.engine.types import SourceInfo
from tests.engine.test_topics import MUSIC, SPORT
from tests.fakes import HashEmbedder
from tests.topic_colluding import colluding_topical


def test_a_bloc_is_found_copying_on_the_topic_it_colludes_on_and_not_on_the_other() -> None:
    result, topical = colluding_topical()
    ids = [100 + j for j in range(8)]
    on_a, on_b = (groups_from_dependence(pairs, ids) for pairs in topical.dependence)
    assert on_a == (frozenset({100, 101, 102}),)
    # On B the bloc's members share true answers only, as the honest sources do: no group.
    assert on_b == ()
    on_b_pairs = {(d.a, d.b): d for d in topical.dependence[1]}
    assert all(d.probability < 0.5 for d in on_b_pairs.values())
    # Over both topics together the bloc's shared false answers make it one group.
    assert groups_from_dependence(result.dependence, ids) == (frozenset({100, 101, 102}),)


def test_an_unsettled_topic_counts_the_overall_groups_and_none_count_without_them() -> None:
    result, topical = colluding_topical()
    ids = list(range(8))
    overall = (frozenset({0, 1, 2}),)
    assert topic_copy_groups(topical.dependence, [True, True], ids, overall) == (overall, ())
    # Topic B unsettled: what its own answers show is not trusted, the overall groups count there.
    assert topic_copy_groups(topical.dependence, [True, False], ids, overall) == (overall, overall)
    # An estimate that found no group overall gets none per topic either.
    assert topic_copy_groups(topical.dependence, [True, True], ids, ()) == ()
    # Every topic unsettled: nothing per topic, and a question on either counts the overall groups.
    assert topic_copy_groups(topical.dependence, [False, False], ids, overall) == ()
    ctx = cast(EngineContext, SimpleNamespace(copy_groups=overall, topic_copy_groups=()))
    assert copy_groups_on(ctx, [0.9, 0.1]) == overall and copy_groups_on(ctx, [0.2, 0.8]) == overall


def _ask(question: str, per_topic: bool) -> StrategyResult:
    """Source 0 says Alpha; sources 1 and 2, a bloc the run found copying, say Beta. Every
    source has one accuracy on both topics; the bloc colludes on music only."""
    embedder = HashEmbedder()
    retriever = InMemoryRetriever()
    retriever.add_texts(0, [f"{question} answer: Alpha. Alpha won it."], embedder)
    for sid in (1, 2):
        retriever.add_texts(sid, [f"{question} answer: Beta. Beta won it."], embedder)
    fit = find_topics(SPORT + MUSIC, embedder.encode(SPORT + MUSIC))
    sport = fit.labels[0]
    sources = [
        SourceInfo(0, "desk", weight=1.5, answers_count=40, accuracy=0.8, topic_accuracy=(0.8, 0.8)),
        SourceInfo(1, "blog", weight=1.0, answers_count=40, accuracy=0.7, topic_accuracy=(0.7, 0.7)),
        SourceInfo(2, "feed", weight=1.0, answers_count=40, accuracy=0.7, topic_accuracy=(0.7, 0.7)),
    ]
    bloc = (frozenset({1, 2}),)
    groups: list[tuple[frozenset[int], ...]] = [bloc, bloc]
    groups[sport] = ()
    ctx = EngineContext(
        retriever,
        embedder,
        ExtractiveReader(),
        EmbeddingLexicalNLI(embedder),
        sources,
        topics=fit.model,
        copy_groups=bloc,
        topic_copy_groups=tuple(groups) if per_topic else (),
    )
    chosen = get_strategy("ra-rag")
    return chosen.answer_checked(question, ctx, parse_params(chosen.Params, {"kappa": 3, "min_relevance": 0.0}))


def test_the_vote_counts_a_bloc_once_on_its_topic_only() -> None:
    sport_q = "which team won the 2015 football cup final match"
    music_q = "which singer recorded the 2015 album song of the year"
    # On music the bloc colludes: one voice (1.0) against the desk's 1.5.
    assert "Alpha" in _ask(music_q, per_topic=True).answer
    # On sport its two members answer independently: 2.0 against 1.5.
    on_sport = _ask(sport_q, per_topic=True)
    assert "Beta" in on_sport.answer
    assert sorted(v.weight for v in on_sport.votes if v.source_id in (1, 2)) == [1.0, 1.0]
    # With one set of groups for every topic, the bloc is one voice on sport too.
    assert "Alpha" in _ask(sport_q, per_topic=False).answer
