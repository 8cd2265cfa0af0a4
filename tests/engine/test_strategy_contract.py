"""The contract every registered strategy keeps, parametrised over the registry: a new
strategy gets these tests for free."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pytest

from core.engine.backends.generation import ExtractiveReader
from core.engine.backends.generation.base import Generation, GenerationRequest
from core.engine.backends.nli import EmbeddingLexicalNLI
from core.engine.claims.memory_store import MemoryClaimStore
from core.engine.claims.types import ClaimRecord
from core.engine.params import NoParams, ParamError, ParamSet, describe, parse_params
from core.engine.steps.memory_retriever import InMemoryRetriever
from core.engine.strategies import (
    AnswerStrategy,
    EngineContext,
    StrategyResult,
    available_strategies,
    get_strategy,
    isolated_registry,
    missing_requirements,
    register,
    strategy_class,
)
from core.engine.strategies.base import REQUIREMENT_HELP, Requirement
from core.engine.strategies.codec import evidence_from_json, evidence_to_json, graph_from_json, graph_to_json, jsonable
from core.engine.text import is_idk
from core.engine.types import SourceInfo
from tests.fakes import HashEmbedder, ScriptedGenerator

QUESTION = "who recorded i can't help falling in love with you"
TEXTS = [
    "Elvis Presley recorded the song I Can't Help Falling in Love with You in 1961. answer: Elvis",
    "Elvis Presley sang I Can't Help Falling in Love with You. answer: Elvis",
    "Frank Sinatra recorded the song I Can't Help Falling in Love with You in 1970. answer: Sinatra",
]


# The same facts as claims, for strategies that need a claim store (multirag).
SONG = "I Can't Help Falling in Love with You"
CLAIMS = [
    ClaimRecord(1, 0, SONG, "recorded by", "elvis presley", "Elvis Presley", "text"),
    ClaimRecord(2, 1, SONG, "recorded by", "elvis presley", "Elvis Presley", "text"),
    ClaimRecord(3, 2, SONG, "recorded by", "frank sinatra", "Frank Sinatra", "text"),
    ClaimRecord(4, 0, SONG, "year", "1961", "1961", "number"),
    ClaimRecord(5, 2, "Chicago Fire season 4", "episodes", "23", "twenty three", "number"),
]


def _context(generator: Any) -> EngineContext:
    embedder = HashEmbedder()
    retriever = InMemoryRetriever()
    for sid, text in enumerate(TEXTS):
        retriever.add_texts(sid, [text, "The Chicago Fire fourth season has twenty three episodes."], embedder)
    sources = [SourceInfo(i, f"source {i}", weight=w) for i, w in enumerate([2.0, 1.5, 0.3])]
    return EngineContext(
        retriever,
        embedder,
        generator,
        EmbeddingLexicalNLI(embedder),
        sources,
        oracle={0: 0.9, 1: 0.8, 2: 0.2},
        claims=MemoryClaimStore(CLAIMS, embedder),
    )


class CountingGenerator:
    """Passes requests to ``inner`` and counts what it returns: the calls and tokens a
    strategy's result must account for."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.capabilities = inner.capabilities
        self.calls = self.tokens = 0

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        generations: list[Generation] = self.inner.generate(requests)
        self.calls += len(generations)
        self.tokens += sum(g.prompt_tokens + g.completion_tokens for g in generations)
        return generations


def check_strategy_contract(name: str) -> None:
    """Everything a strategy promises, on a tiny corpus, with every backend kind it can run on."""
    cls = strategy_class(name)
    strategy = get_strategy(name)
    assert strategy.name == name and cls.description, "a strategy names itself and says what it does"
    assert all(isinstance(r, Requirement) and r in REQUIREMENT_HELP for r in cls.requires)
    # Parameters: a frozen dataclass; defaults parse from nothing; unknown names are refused.
    assert issubclass(cls.Params, ParamSet) and dataclasses.is_dataclass(cls.Params)
    params = parse_params(cls.Params, {})
    with pytest.raises(ParamError):
        parse_params(cls.Params, {"no-such-parameter": 1})
    for field in describe(cls.Params):
        assert field["help"], f"{name}.{field['name']} explains itself"

    ran = 0
    offered: set[Requirement] = set()
    for generator in (CountingGenerator(ExtractiveReader()), CountingGenerator(ScriptedGenerator())):
        ctx = _context(generator)
        offered |= ctx.offers()
        reasons = missing_requirements(strategy, ctx.offers())
        if reasons:
            assert all(name in reason for reason in reasons)
            continue
        ran += 1
        result = strategy.answer_checked(QUESTION, ctx, params)
        assert isinstance(result, StrategyResult)
        assert result.strategy == name and result.backend == generator.name
        assert isinstance(result.answer, str) and result.answer
        assert 0.0 <= result.confidence <= 1.0
        assert (result.stats.calls, result.stats.tokens) == (generator.calls, generator.tokens), (
            "the result counts every generator call the strategy made, and its tokens"
        )
        if is_idk(result.answer):
            assert result.confidence == 0.0, "an abstention carries no confidence"
        source_ids = {s.id for s in ctx.sources}
        assert {v.source_id for v in result.votes} <= source_ids
        assert {e.source_id for e in result.evidence} <= source_ids
        assert len(result.chunk_ids) == len(set(result.chunk_ids))
        for vote in result.votes:
            assert {p.chunk_id for p in vote.passages} <= set(result.chunk_ids), "votes' passages are evidence"
        # The typed parts survive the JSON codec used by the database and the API.
        assert evidence_from_json(evidence_to_json(result.evidence)) == result.evidence
        assert graph_from_json(graph_to_json(result.graph)) == result.graph
        assert jsonable(result.trace) == jsonable(jsonable(result.trace))
    assert ran or cls.requires, "a strategy with no requirements runs everywhere"
    assert ran or not cls.requires <= offered, "a strategy runs where its requirements are offered (claims included)"


@pytest.mark.parametrize("name", available_strategies())
def test_every_registered_strategy_keeps_the_contract(name: str) -> None:
    check_strategy_contract(name)


def test_a_new_strategy_is_one_file_plus_one_registry_line_and_the_contract_covers_it(
    isolated_strategies: list[str],
) -> None:
    isolated_strategies.append("tests.engine.do_nothing_strategy")  # the one registry line
    assert "do-nothing" in available_strategies()
    check_strategy_contract("do-nothing")


def test_the_isolated_registry_forgets_what_a_test_registered() -> None:
    before = available_strategies()
    with isolated_registry() as modules:
        modules.append("tests.engine.do_nothing_strategy")
        assert set(available_strategies()) - set(before) == {"do-nothing"}
    assert available_strategies() == before


def test_a_strategy_that_breaks_the_contract_is_caught(isolated_strategies: list[str]) -> None:
    @register("overconfident-abstainer")
    class Overconfident(AnswerStrategy[NoParams]):
        description = "says I don't know with full confidence"

        def answer(self, question: str, ctx: EngineContext, params: Any) -> StrategyResult:
            return StrategyResult("I don't know", 1.0, self.name, ctx.generator.name)

    with pytest.raises(AssertionError, match="abstention carries no confidence"):
        check_strategy_contract("overconfident-abstainer")
