"""Where a wrong answer was lost: each test question a method answers wrong is put down to
one stage of the pipeline, and the ceilings the sources allow are computed beside it.

The corpus says what every source holds for every question (core.bench.corpus.Holding:
factual passages, misinformation passages or nothing), so each stage can be checked against
what a perfect one would have done. A wrong answer is put down to the first of these that
explains it, in this order:

- ``corpus``: even a perfect reader voting every source with the true reliabilities gets
  it wrong (no source holds the answer, or the sources that hold it are outweighed);
- ``filter-kept``: the winning answer is in none of its backers' passages (an invention the
  alignment filter let through);
- ``estimate``: the right answer was among the votes, and the same votes weighed with the
  true reliabilities would have won;
- ``vote``: the right answer was among the votes and loses even with the true reliabilities
  (a colluding bloc outweighs it);
- ``filter-dropped``: a source wrote the right answer and the filter turned it into IDK;
- ``reading``: a source read a factual passage of this question and wrote a wrong answer or
  none;
- ``retrieval``: a source that was asked holds factual passages but none was retrieved;
- ``selection``: a source that holds factual passages was never asked.

The ceilings: ``oracle`` (a perfect reader, every source, WMV with the true reliabilities as
weights, as in the paper; ``oracle_log_odds`` with log-odds weights), ``oracle_mv`` (a
perfect reader, plain majority) and ``any_factual`` (the share of questions some source holds
factual passages for).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from core.bench.corpus import Corpus, CorpusDoc
from core.bench.datasets import BenchQuestion
from core.engine.reliability.weights import log_odds_weight
from core.engine.steps.voting import weighted_vote
from core.engine.strategies.base import StrategyResult
from core.engine.text import answer_contains_gold, is_idk, normalize_answer

STAGES = (
    "corpus",
    "filter-kept",
    "estimate",
    "vote",
    "filter-dropped",
    "reading",
    "retrieval",
    "selection",
)


@dataclass(frozen=True)
class Ceiling:
    oracle: bool
    oracle_log_odds: bool
    oracle_mv: bool
    any_factual: bool


def _wmv(answers: Mapping[int, str], weights: Mapping[int, float]) -> str | None:
    """The product's weighted vote (steps.voting.weighted_vote: ties go to the answer with more
    votes, then the one seen first) over the sources' answers; None: every source abstained."""
    distinct = list(dict.fromkeys(answers.values()))
    labels = [distinct.index(answer) for answer in answers.values()]
    outcome = weighted_vote(labels, [weights.get(sid, 0.0) for sid in answers])
    return None if outcome.winner is None else distinct[outcome.winner]


def ceiling(corpus: Corpus, q: BenchQuestion) -> Ceiling:
    """What a perfect reader allows on ``q``: every source answers what its passages say."""
    answers = {}
    for s in corpus.sources:
        holding = corpus.holdings.get((s.id, q.qid))
        if holding is not None and holding.kind in ("factual", "misinfo"):
            answers[s.id] = holding.answer
    true = corpus.reliability_for(q.qid)

    def right(winner: str | None) -> bool:
        return winner is not None and answer_contains_gold(winner, q.gold)

    return Ceiling(
        oracle=right(_wmv(answers, true)),
        oracle_log_odds=right(_wmv(answers, {sid: log_odds_weight(p, tie_break=False) for sid, p in true.items()})),
        oracle_mv=right(_wmv(answers, dict.fromkeys(true, 1.0))),
        any_factual=bool(_holders(corpus, q)),
    )


def _holders(corpus: Corpus, q: BenchQuestion) -> set[int]:
    """The sources that hold factual passages for ``q``."""
    return {s.id for s in corpus.sources if getattr(corpus.holdings.get((s.id, q.qid)), "kind", "") == "factual"}


def _grounded(answer: str, passages: Sequence[str]) -> bool:
    """The answer's words occur together in one of the passages."""
    wanted = f" {normalize_answer(answer)} "
    return bool(wanted.strip()) and any(wanted in f" {normalize_answer(text)} " for text in passages)


def attribute(
    corpus: Corpus,
    q: BenchQuestion,
    result: StrategyResult,
    documents: Mapping[int, CorpusDoc],
    limit: Ceiling | None = None,
) -> str | None:
    """The stage that lost ``q`` for this result (None when the answer is right)."""
    if answer_contains_gold(result.answer, q.gold):
        return None
    limit = limit or ceiling(corpus, q)
    if not limit.oracle:
        return "corpus"
    votes = result.votes
    if not votes:
        return "reading"  # a strategy without per-source votes: nothing finer to say
    winner = next((c for c in result.clusters if not is_idk(result.answer) and c.label == result.answer), None)
    if winner is not None:
        backers = [v for v in votes if v.cluster == winner.id]
        if not any(_grounded(result.answer, [p.text for p in v.passages]) for v in backers):
            return "filter-kept"
    if any(answer_contains_gold(v.response, q.gold) for v in votes):
        true = corpus.reliability_for(q.qid)
        answers = {v.source_id: f"cluster-{v.cluster}" for v in votes if v.cluster is not None}
        revote = _wmv(answers, {v.source_id: true.get(v.source_id, 0.0) for v in votes})
        right_clusters = {f"cluster-{v.cluster}" for v in votes if answer_contains_gold(v.response, q.gold)}
        return "estimate" if revote in right_clusters else "vote"
    if any(v.filtered and answer_contains_gold(v.raw_response, q.gold) for v in votes):
        return "filter-dropped"

    def read_factual(passage_ids: Sequence[int]) -> bool:
        return any(documents[i].qid == q.qid and documents[i].kind == "factual" for i in passage_ids if i in documents)

    if any(read_factual([p.chunk_id for p in v.passages]) for v in votes):
        return "reading"
    asked = {v.source_id for v in votes}
    if _holders(corpus, q) & asked:
        return "retrieval"
    return "selection"


def summarise_stages(stages: Sequence[str | None]) -> dict[str, int]:
    """How many wrong answers each stage lost (every stage listed, zero included)."""
    counts = Counter(s for s in stages if s is not None)
    return {stage: counts.get(stage, 0) for stage in STAGES}


def ceilings(corpus: Corpus, questions: Sequence[BenchQuestion]) -> dict[str, float]:
    """The share of ``questions`` each ceiling gets right."""
    limits = [ceiling(corpus, q) for q in questions]
    n = max(len(limits), 1)
    return {
        "oracle": sum(c.oracle for c in limits) / n,
        "oracle_log_odds": sum(c.oracle_log_odds for c in limits) / n,
        "oracle_mv": sum(c.oracle_mv for c in limits) / n,
        "any_factual": sum(c.any_factual for c in limits) / n,
    }
