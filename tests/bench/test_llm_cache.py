"""The benchmark's on-disk generation cache: each distinct request reaches the model once,
survives the process, and charges its original cost when replayed."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from core.bench.llm_cache import CachedScoringGenerator, cached_generator
from core.engine.backends.generation import Capability, Generation, GenerationRequest, TokenScorer


class CountingModel:
    name = "counting-model"
    capabilities = frozenset({Capability.FREE_TEXT})

    def __init__(self) -> None:
        self.seen: list[GenerationRequest] = []

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        self.seen.extend(requests)
        return [Generation(f"answer {len(self.seen)}: {r.question}", self.name, 10, 2) for r in requests]


class ScoringModel(CountingModel):
    capabilities = frozenset({Capability.FREE_TEXT, Capability.TOKEN_SCORES})

    def score(self, requests: Sequence[GenerationRequest], continuations: Sequence[str]) -> list[float]:
        return [-float(len(c)) for c in continuations]

    def white_box(self) -> tuple[str, str]:
        return ("tokenizer", "model")


def test_a_request_reaches_the_model_once_and_is_replayed(tmp_path: Path) -> None:
    model = CountingModel()
    cached = cached_generator(model, tmp_path)
    first = cached.generate([GenerationRequest("q1", ["p"]), GenerationRequest("q2", ["p"])])
    again = cached.generate([GenerationRequest("q2", ["p"]), GenerationRequest("q1", ["p"])])
    assert [r.question for r in model.seen] == ["q1", "q2"]
    assert [g.text for g in again] == [first[1].text, first[0].text]
    assert again[0].prompt_tokens == 10 and again[0].completion_tokens == 2
    assert (cached.fresh, cached.hits) == (2, 2)
    assert cached.replayed_seconds >= 0.0


def test_anything_that_changes_the_output_is_a_different_key(tmp_path: Path) -> None:
    model = CountingModel()
    cached = cached_generator(model, tmp_path)
    cached.generate([GenerationRequest("q", ["p"])])
    cached.generate([GenerationRequest("q", ["other"])])
    cached.generate([GenerationRequest("q", ["p"], prompt="a ready prompt")])
    cached.generate([GenerationRequest("q", ["p"], max_tokens=200)])
    assert len(model.seen) == 4


def test_the_cache_survives_the_process_and_is_per_model(tmp_path: Path) -> None:
    cached_generator(CountingModel(), tmp_path).generate([GenerationRequest("q", [])])
    model = CountingModel()
    text = cached_generator(model, tmp_path).generate([GenerationRequest("q", [])])[0].text
    assert model.seen == [] and text == "answer 1: q"
    other = ScoringModel()
    other.name = "another-model"
    cached_generator(other, tmp_path).generate([GenerationRequest("q", [])])
    assert len(other.seen) == 1


def test_white_box_access_passes_through(tmp_path: Path) -> None:
    cached = cached_generator(ScoringModel(), tmp_path)
    assert isinstance(cached, CachedScoringGenerator) and isinstance(cached, TokenScorer)
    white_box = cached.white_box  # forwarded to the model
    assert callable(white_box)
    assert white_box() == ("tokenizer", "model")
    assert cached.score([GenerationRequest("q")], ["abc"]) == [-3.0]
    assert Capability.TOKEN_SCORES in cached.capabilities
    assert not isinstance(cached_generator(CountingModel(), tmp_path / "x"), CachedScoringGenerator)


class FailingSecondBatch(CountingModel):
    batch_size = 1

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        if self.seen:
            raise RuntimeError("interrupted")
        return super().generate(requests)


def test_an_interrupted_run_keeps_the_batches_it_finished(tmp_path: Path) -> None:
    import pytest

    with pytest.raises(RuntimeError):
        cached_generator(FailingSecondBatch(), tmp_path).generate([GenerationRequest("a"), GenerationRequest("b")])
    model = CountingModel()
    cached_generator(model, tmp_path).generate([GenerationRequest("a"), GenerationRequest("b")])
    assert [r.question for r in model.seen] == ["b"]
