"""Which retrieved passages are about the question.

Top-k retrieval always returns k passages per source, whether or not the source holds
anything on the question: a source with nothing on "who wrote the music of the Phantom of
the Opera" hands back its nearest passages, about the Mission: Impossible theme, and a small
model answers from them ("Lalo Schifrin"), grounded in the passage and kept by the filter.
A passage retrieved for another subject is not support, so it is neither read nor counted:
a passage is about the question when its cosine similarity to the question is at least
``min_similarity`` or it holds at least half of the question's content words. A source left
with no passage about the question abstains without a generator call.

Measured on the demo (MiniLM, 120 questions, 6 sources, top 3): passages of the question
itself have similarity 0.58 to 0.88 (5th to 95th percentile), passages of other questions
0.17 to 0.41; at 0.4 99.9% of the first are kept and 7% of the second, and the word rule
keeps the on-topic passage that is worded unlike its question (docs/benchmarks.md).

A fixed threshold still lets through a passage about a neighbouring subject that shares the
question's words ("111 consecutive games on its home basketball court" for "how much square
feet is a basketball court", at 0.45, while another source's own passage sits at 0.8). So a
passage must also reach RELATIVE_SIMILARITY (0.65) of the best similarity any searched source's
passage has to the question (``subject_floor``): where the database holds the subject, a
passage far below it is about something else. By similarity alone, other questions' passages
kept fall from 7.1% to 1.4% on the demo and from 10.1% to 0.5% on PoisonedRAG (9 sources,
seed 0), the question's own from 99.9% to 99.5% and 99.7% to 98.6%. The floor is taken over
the passages searched together (every source of a question at answer time; in estimation, the
sources of the question within one batch of pairs).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from core.engine.backends.generation.base import Generation, GenerationRequest, Generator
from core.engine.lexical import content_set
from core.engine.types import Passage

MIN_SIMILARITY = 0.4  # cosine similarity of question and passage (1 - the retriever's distance)
MIN_OVERLAP = 0.5  # or the share of the question's content words that the passage holds
# and at least this share of the best similarity any source's passage has to the question
RELATIVE_SIMILARITY = 0.65


def subject_floor(found: Iterable[Passage], min_similarity: float = MIN_SIMILARITY) -> float:
    """The similarity a passage needs to be about the question, given every passage found for
    it: ``min_similarity``, raised to RELATIVE_SIMILARITY of the best one (0: no floor)."""
    if min_similarity <= 0:
        return 0.0
    best = max((1.0 - p.distance for p in found), default=0.0)
    return RELATIVE_SIMILARITY * best


def about_question(question: str, passage: Passage, min_similarity: float = MIN_SIMILARITY, floor: float = 0.0) -> bool:
    """Whether ``passage`` is about ``question`` (a threshold of 0 keeps every passage)."""
    if min_similarity <= 0:
        return True
    if 1.0 - passage.distance < floor:
        return False
    if 1.0 - passage.distance >= min_similarity:
        return True
    wanted = content_set(question)
    return not wanted or len(wanted & content_set(passage.text)) / len(wanted) >= MIN_OVERLAP


def on_topic(
    question: str, passages: Sequence[Passage], min_similarity: float = MIN_SIMILARITY, floor: float = 0.0
) -> list[Passage]:
    """The passages about ``question``, in their order."""
    return [p for p in passages if about_question(question, p, min_similarity, floor)]


def generate_read(generator: Generator, requests: Sequence[GenerationRequest]) -> list[Generation | None]:
    """Each request's generation, in one batched call over the requests that have passages to
    read; None (no call) for a request left with none: its source abstains."""
    asked = [i for i, request in enumerate(requests) if request.passages]
    out: list[Generation | None] = [None] * len(requests)
    for i, generation in zip(asked, generator.generate([requests[i] for i in asked]), strict=True):
        out[i] = generation
    return out
