"""Weighing the sources by the question's topic (reliability per topic, core.engine.reliability.topical).

A question belongs to the run's topics softly (core.engine.topics.TopicModel.membership, from
its text); a source's accuracy on it is the mix of its topics' accuracies, and its voting
weight follows from that accuracy under the estimator's scheme. kappa-RRSS then asks the
sources in that order (`weigh_by_topic`). Once they have answered, the sources' answers are
read as evidence of the topic too (`answer_share`): a question whose text sits between
two topics, and on which the sources that are wrong on one of them disagree with the rest,
belongs mostly to that one (topical.answer_posterior, tempered; one answer or sources whose
topics do not differ leave the text's membership). The weighted vote weighs them so. What was
done is returned for the answer's trace: the topic, its share, and each source whose weight
moved.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from core.engine.reliability.base import MISSING
from core.engine.reliability.topical import answer_posterior
from core.engine.reliability.weights import MIN_WEIGHT, voting_weight
from core.engine.strategies.base import EngineContext
from core.engine.types import SourceInfo, Vector

# A source is listed as weighed differently when its accuracy on the question moves this much
# from its overall number.
NOTABLE_SHIFT = 0.1


def topics_apply(ctx: EngineContext) -> bool:
    """Whether the run's topics weigh this context's sources (two topics or more, and some
    source with a number per topic)."""
    model = ctx.topics
    return (
        model is not None
        and len(model.topics) >= 2
        and any(len(s.topic_accuracy) == len(model.topics) for s in ctx.sources)
    )


def weigh_by_topic(
    question: str, ctx: EngineContext, vector: Vector | None = None
) -> tuple[list[SourceInfo], dict[str, object] | None]:
    """The context's sources with accuracies and weights for ``question``'s topics (from its
    text), and a record of it (None when the run has no topics, or no source has per-topic
    numbers). ``vector``: the question's embedding where the caller has it (else it is
    encoded here)."""
    if not topics_apply(ctx):
        return list(ctx.sources), None
    return weigh_by_share(
        ctx, topic_share(ctx, ctx.embedder.encode([question])[0] if vector is None else vector, question)
    )


def topic_share(ctx: EngineContext, vector: Vector, question: str | None = None) -> list[float]:
    """The question's membership in the run's topics, from its text: its embedding, or its
    words' letters where the topics were found in that view (TopicModel.membership)."""
    assert ctx.topics is not None
    return [float(x) for x in ctx.topics.membership([vector], None if question is None else [question])[0]]


def answer_share(
    ctx: EngineContext, text_share: Sequence[float], answers: Sequence[tuple[int, int | None]]
) -> list[float]:
    """The question's membership in the run's topics after its sources answered:
    ``text_share`` is its membership from its text (topic_share), ``answers`` (source id,
    answer cluster or None) each answer given; read against each source's per-topic
    accuracies (topical.answer_posterior)."""
    assert ctx.topics is not None
    n_topics = len(ctx.topics.topics)
    columns = [s for s in ctx.sources if len(s.topic_accuracy) == n_topics]
    given = {sid: label for sid, label in answers if label is not None}
    row = np.array([[given.get(s.id, MISSING) for s in columns]], dtype=np.int64)
    accuracy = np.array([s.topic_accuracy for s in columns], dtype=np.float64).T.reshape(n_topics, len(columns))
    prior = np.array([list(text_share)], dtype=np.float64)
    return [float(x) for x in answer_posterior(prior, row, accuracy)[0]]


def weigh_by_share(ctx: EngineContext, share: Sequence[float]) -> tuple[list[SourceInfo], dict[str, object]]:
    """The context's sources weighed by a question's membership ``share`` in the run's topics."""
    assert ctx.topics is not None
    model = ctx.topics
    sources = list(ctx.sources)
    main = max(range(len(share)), key=lambda t: share[t])
    weighed: list[SourceInfo] = []
    moved: list[dict[str, object]] = []
    for source in sources:
        if len(source.topic_accuracy) != len(share) or source.accuracy is None:
            weighed.append(source)
            continue
        accuracy = sum(p * a for p, a in zip(share, source.topic_accuracy, strict=True))
        # The estimator's own weight moved by what the topic changes (a source weighed as the
        # estimator weighed it when its topics agree with its overall number).
        shift = voting_weight(accuracy, len(sources), scheme=ctx.weight_scheme) - voting_weight(
            source.accuracy, len(sources), scheme=ctx.weight_scheme
        )
        weight = max(source.weight + shift, 0.0 if ctx.weight_scheme == "log-odds" else MIN_WEIGHT)
        weighed.append(replace(source, accuracy=accuracy, weight=weight))
        if abs(accuracy - source.accuracy) >= NOTABLE_SHIFT:
            moved.append(
                {
                    "source_id": source.id,
                    "source": source.name,
                    "overall": round(source.accuracy, 4),
                    "on_topic": round(accuracy, 4),
                }
            )
    record: dict[str, object] = {
        "key": model.topics[main].key,
        "name": model.topics[main].name,
        "share": round(share[main], 4),
        "membership": {t.key: round(p, 4) for t, p in zip(model.topics, share, strict=True)},
        "moved": moved,
    }
    return weighed, record


def copy_groups_on(ctx: EngineContext, share: Sequence[float]) -> tuple[frozenset[int], ...]:
    """The copy groups counted once on a question with topic membership ``share``: those
    found on its main topic's queries where the run found them per topic, else the run's
    overall groups."""
    if len(ctx.topic_copy_groups) != len(share) or not share:
        return ctx.copy_groups
    return ctx.topic_copy_groups[max(range(len(share)), key=lambda t: share[t])]
