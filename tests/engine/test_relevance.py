"""Passages retrieved for another subject are neither read nor support (issue 36)."""

from __future__ import annotations

from core.engine.backends.nli import EmbeddingLexicalNLI
from core.engine.params import parse_params
from core.engine.steps.memory_retriever import InMemoryRetriever
from core.engine.steps.relevance import about_question, on_topic, subject_floor
from core.engine.strategies import EngineContext, get_strategy
from core.engine.text import is_idk
from core.engine.types import Passage, SourceInfo
from tests.fakes import HashEmbedder, ScriptedGenerator

QUESTION = "who wrote the music of the phantom of the opera"
ON_TOPIC = "The music of The Phantom of the Opera was written by answer: Webber in 1986."
# The nearest passage of a source that holds nothing on the question (the demo's case).
OTHER_SUBJECT = "The Mission Impossible theme was written by answer: Schifrin for television."


def _passage(text: str, similarity: float) -> Passage:
    return Passage(1, 1, text, distance=1.0 - similarity)


def test_a_passage_is_about_the_question_by_similarity_or_by_the_questions_words() -> None:
    assert about_question(QUESTION, _passage(OTHER_SUBJECT, 0.45))  # similar enough
    assert not about_question(QUESTION, _passage(OTHER_SUBJECT, 0.30))  # neither similar nor sharing words
    assert about_question(QUESTION, _passage(ON_TOPIC, 0.10))  # worded alike: phantom, opera, music, wrote
    assert about_question(QUESTION, _passage(OTHER_SUBJECT, 0.0), min_similarity=0.0)  # 0 reads everything
    kept = on_topic(QUESTION, [_passage(OTHER_SUBJECT, 0.2), _passage(ON_TOPIC, 0.7)])
    assert [p.text for p in kept] == [ON_TOPIC]


def test_a_passage_far_less_similar_than_the_questions_best_is_about_another_subject() -> None:
    # The demo's "how much square feet is a basketball court": two sources read a passage
    # about another question ("111 consecutive ...") that shares "basketball court" and sits
    # at 0.45, while another source's own passage sits at 0.8.
    basketball = "how much square feet is a basketball court"
    own = _passage("A regulation basketball court is 4700 square feet.", 0.80)
    other = _passage("The team played 111 consecutive games on its home basketball court.", 0.45)
    floor = subject_floor([own, other])
    assert floor == 0.65 * 0.80
    assert [p.text for p in on_topic(basketball, [other, own], floor=floor)] == [own.text]
    # Without a closer passage the absolute rules decide alone, as before.
    assert on_topic(basketball, [other], floor=subject_floor([other])) == [other]
    # Threshold 0 reads everything, floor or not.
    assert subject_floor([own, other], min_similarity=0.0) == 0.0
    assert about_question(basketball, other, min_similarity=0.0, floor=0.9)


def _context(generator: ScriptedGenerator) -> EngineContext:
    embedder = HashEmbedder()
    retriever = InMemoryRetriever()
    retriever.add_texts(1, [ON_TOPIC], embedder)
    retriever.add_texts(2, [OTHER_SUBJECT], embedder)
    sources = [SourceInfo(i, f"source {i}", weight=1.0, answers_count=20, accuracy=0.9) for i in (1, 2)]
    return EngineContext(retriever, embedder, generator, EmbeddingLexicalNLI(embedder), sources)


def test_a_source_with_no_passage_about_the_question_abstains_without_a_generator_call() -> None:
    generator = ScriptedGenerator()
    strategy = get_strategy("ra-rag")
    result = strategy.answer_checked(QUESTION, _context(generator), parse_params(strategy.Params, {"kappa": 2}))
    votes = {v.source_id: v for v in result.votes}
    assert result.answer == "Webber"
    assert is_idk(votes[2].response) and votes[2].passages == [] and votes[2].backend == ""
    assert votes[1].backend == "scripted"
    # Only the source holding the subject was asked; the other's "Schifrin" was never written.
    assert [r.passages for r in generator.requests] == [[ON_TOPIC]]
    assert result.stats.calls == 1


def test_with_every_passage_read_the_other_subjects_answer_votes() -> None:
    """What the threshold prevents: at 0 the second source answers from its other subject."""
    generator = ScriptedGenerator()
    strategy = get_strategy("ra-rag")
    params = parse_params(strategy.Params, {"kappa": 2, "min_relevance": 0.0})
    result = strategy.answer_checked(QUESTION, _context(generator), params)
    assert {v.source_id: v.raw_response for v in result.votes} == {1: "Webber", 2: "Schifrin"}


def test_estimation_counts_only_the_calls_it_made() -> None:
    from core.engine.estimation import answer_pairs
    from core.engine.types import CallStats

    generator = ScriptedGenerator()
    ctx = _context(generator)
    stats = CallStats()
    records = answer_pairs([QUESTION], [(0, 1), (0, 2)], ctx, stats)
    assert [r.response for r in records] == ["Webber", "I don't know"]
    assert records[1].chunk_ids == []  # source 2 read nothing: its passage is about another subject
    assert stats.calls == 1 and len(generator.requests) == 1
