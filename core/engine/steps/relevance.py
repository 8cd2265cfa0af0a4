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
"""

from __future__ import annotations

from collections.abc import Sequence

from core.engine.backends.generation.base import Generation, GenerationRequest, Generator
from core.engine.lexical import content_set
from core.engine.types import Passage

MIN_SIMILARITY = 0.4  # cosine similarity of question and passage (1 - the retriever's distance)
MIN_OVERLAP = 0.5  # or the share of the question's content words that the passage holds


def about_question(question: str, passage: Passage, min_similarity: float = MIN_SIMILARITY) -> bool:
    """Whether ``passage`` is about ``question`` (a threshold of 0 keeps every passage)."""
    if min_similarity <= 0 or 1.0 - passage.distance >= min_similarity:
        return True
    wanted = content_set(question)
    return not wanted or len(wanted & content_set(passage.text)) / len(wanted) >= MIN_OVERLAP


def on_topic(question: str, passages: Sequence[Passage], min_similarity: float = MIN_SIMILARITY) -> list[Passage]:
    """The passages about ``question``, in their order."""
    return [p for p in passages if about_question(question, p, min_similarity)]


def generate_read(generator: Generator, requests: Sequence[GenerationRequest]) -> list[Generation | None]:
    """Each request's generation, in one batched call over the requests that have passages to
    read; None (no call) for a request left with none: its source abstains."""
    asked = [i for i, request in enumerate(requests) if request.passages]
    out: list[Generation | None] = [None] * len(requests)
    for i, generation in zip(asked, generator.generate([requests[i] for i in asked]), strict=True):
        out[i] = generation
    return out
