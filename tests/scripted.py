"""Scripted model outputs shared by the engine and page tests: Astute RAG's and CrEst's scripted
generators and their data, and the questions the local model is tried on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.engine.backends.generation.base import Capability, Generation, GenerationRequest
from core.engine.backends.nli import EmbeddingLexicalNLI
from core.engine.params import parse_params
from core.engine.strategies import (
    EngineContext,
    StrategyResult,
    get_strategy,
)
from core.engine.text import IDK
from core.engine.types import Passage, SourceInfo
from tests.fakes import HashEmbedder

QUESTION = "who recorded i can't help falling in love with you"


TRUE = "Elvis Presley recorded the song I Can't Help Falling in Love with You in 1961."


TRUE_TOO = "The 1961 Elvis Presley single I Can't Help Falling in Love with You was a hit."


FALSE = "Frank Sinatra recorded the song I Can't Help Falling in Love with You in 1970."


MEMORY = "Elvis Presley first recorded I Can't Help Falling in Love with You for the film Blue Hawaii (1961)."


# Documents 1-3 are the retrieved passages (in this order), document 4 the internal passage.
HAPPY_ANSWER = """Step 1: Consolidate information
Group 1 (source: memory, external; documents: 1, 2, 4): Elvis Presley recorded the song in 1961 for Blue Hawaii.
Group 2 (source: external; documents: 3): Frank Sinatra recorded the song in 1970.
Step 2: Propose Answers and Assign Confidence
Answer for group 1: Elvis Presley (confidence: 0.9)
Answer for group 2: Frank Sinatra (confidence: 0.2)
Step 3: Select the Final Answer
Group 1 is confirmed by memory and two external documents.
<<<ANSWER>>> Elvis Presley <<</ANSWER>>>"""


class RecordedGenerator:
    """Replays recorded outputs by prompt kind (p_gen, p_con in order, p_ans) and keeps every prompt."""

    name = "recorded-llm"
    capabilities: frozenset[Capability] = frozenset({Capability.FREE_TEXT})

    def __init__(
        self, generate: str = IDK, consolidate: Sequence[str] = (), answer: str = IDK, plain: str = IDK
    ) -> None:
        self.outputs = {"generate": [generate], "consolidate": list(consolidate), "answer": [answer], "plain": [plain]}
        self.prompts: dict[str, list[str]] = {"generate": [], "consolidate": [], "answer": [], "plain": []}
        self.plain_passages: list[list[str]] = []

    @staticmethod
    def kind(prompt: str) -> str:
        if prompt.startswith("Task: Consolidate"):
            return "consolidate"
        if prompt.startswith("Task: Answer"):
            return "answer"
        assert prompt.startswith("Generate"), prompt[:80]
        return "generate"

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        out = []
        for request in requests:
            if request.prompt is None:  # the plain answer prompt (the format fallback)
                self.plain_passages.append(list(request.passages))
                kind = "plain"
                self.prompts[kind].append(request.question)
                out.append(Generation(self.outputs[kind][len(self.prompts[kind]) - 1], self.name, 100, 5))
                continue
            assert not request.passages, "astute-rag's own prompts carry the documents"
            kind = self.kind(request.prompt)
            index = len(self.prompts[kind])
            self.prompts[kind].append(request.prompt)
            out.append(Generation(self.outputs[kind][index], self.name, 100, 20))
        return out


class FixedRetriever:
    """Returns the same passages, in order, for every pooled query."""

    def __init__(self, passages: list[Passage]) -> None:
        self.passages = passages

    def top_k_per_source(self, query_vector: Any, sources: Sequence[int], k: int) -> dict[int, list[Passage]]:
        return {s: [p for p in self.passages if p.source_id == s][:k] for s in sources}

    def top_k_pooled(self, query_vector: Any, k: int) -> list[Passage]:
        return self.passages[:k]


def astute_context(
    generator: Any,
    texts: Sequence[str] = (TRUE, TRUE_TOO, FALSE),
    checked: bool = True,
    source_ids: Sequence[int] | None = None,
) -> EngineContext:
    """One retrieved passage per source, in order (source ids 0, 1, ... unless given)."""
    embedder = HashEmbedder()
    ids = list(source_ids) if source_ids is not None else list(range(len(texts)))
    passages = [
        Passage(chunk_id=100 + i, source_id=ids[i], text=text, distance=0.1 * (i + 1), document_id=10 + i)
        for i, text in enumerate(texts)
    ]
    sources = [
        SourceInfo(
            ids[i], f"source {i}", weight=1.0, answers_count=20 if checked else 0, accuracy=0.8 if checked else None
        )
        for i in range(len(texts))
    ]
    return EngineContext(FixedRetriever(passages), embedder, generator, EmbeddingLexicalNLI(embedder), sources)


def answer_with(ctx: EngineContext, **raw: Any) -> StrategyResult:
    """astute-rag's answer over ``ctx`` with the given parameters (also used by the page test)."""
    strategy = get_strategy("astute-rag")
    return strategy.answer_checked(QUESTION, ctx, parse_params(strategy.Params, raw))


CREST_QUESTION = "who recorded i can't help falling in love with you"


ELVIS = [
    "Elvis Presley recorded I Can't Help Falling in Love with You in 1961.",
    "I Can't Help Falling in Love with You was recorded by Elvis Presley in 1961 for Blue Hawaii.",
    "Elvis Presley first recorded I Can't Help Falling in Love with You in 1961.",
]


class ScriptedOutputs:
    """A FREE_TEXT generator that answers each request with the next scripted output."""

    name = "scripted-outputs"
    capabilities: frozenset[Capability] = frozenset({Capability.FREE_TEXT})

    def __init__(self, outputs: Sequence[str]) -> None:
        self.outputs = list(outputs)
        self.requests: list[GenerationRequest] = []

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        out = []
        for request in requests:
            out.append(Generation(self.outputs[len(self.requests) % len(self.outputs)], self.name, 50, 2))
            self.requests.append(request)
        return out


# Natural Questions-style questions, each with a passage that holds the answer.
ANSWERABLE = [
    (
        "who sang i can't help falling in love with you",
        '"Can\'t Help Falling in Love" is a song recorded by American singer Elvis Presley for the '
        "album Blue Hawaii (1961).",
        ["Elvis Presley"],
    ),
    (
        "when did the first world war end",
        "World War I ended with the armistice of 11 November 1918, after four years of fighting on the Western Front.",
        ["1918"],
    ),
    (
        "what is the largest moon of saturn",
        "Titan is the largest moon of Saturn and the second-largest natural satellite in the Solar System.",
        ["Titan"],
    ),
]


UNANSWERABLE = (
    "who is the author of the hobbit",
    "The Amazon rainforest covers much of the Amazon basin of South America.",
)
