"""Weighing the sources by the question's topic (reliability per topic, core.engine.reliability.topical).

A question belongs to the run's topics softly (core.engine.topics.TopicModel.membership, from
its text); a source's accuracy on it is the mix of its topics' accuracies, and its voting
weight follows from that accuracy under the estimator's scheme. kappa-RRSS then asks the
sources in that order and the weighted vote weighs them so. What was done is returned for the
answer's trace: the topic, its share, and each source whose weight moved.
"""

from __future__ import annotations

from dataclasses import replace

from core.engine.reliability.weights import MIN_WEIGHT, voting_weight
from core.engine.strategies.base import EngineContext
from core.engine.types import SourceInfo

# A source is listed as weighed differently when its accuracy on the question moves this much
# from its overall number.
NOTABLE_SHIFT = 0.1


def weigh_by_topic(question: str, ctx: EngineContext) -> tuple[list[SourceInfo], dict[str, object] | None]:
    """The context's sources with accuracies and weights for ``question``'s topics, and a
    record of it (None when the run has no topics, or no source has per-topic numbers)."""
    model = ctx.topics
    sources = list(ctx.sources)
    if model is None or len(model.topics) < 2 or not any(len(s.topic_accuracy) == len(model.topics) for s in sources):
        return sources, None
    share = [float(x) for x in model.membership(ctx.embedder.encode([question]))[0]]
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
