"""The one registration idiom every plug-in family uses (core.engine.registry)."""

from __future__ import annotations

from typing import TypeGuard

import pytest

from core.engine.backends.generation.base import GENERATORS, GenerationRequest, GeneratorSettings
from core.engine.backends.nli import NLI_BACKENDS
from core.engine.registry import BackendNotConfigured, Registry
from tests.fakes import HashEmbedder


def _is_text(item: object) -> TypeGuard[str]:
    return isinstance(item, str)


def test_a_plug_in_registers_with_the_decorator_and_is_found_by_name() -> None:
    registry: Registry[str] = Registry("greeting", _is_text)
    registry.register("hello")("hello, world")
    assert registry.get("hello") == "hello, world"
    assert "hello" in registry and registry.names() == ["hello"]


def test_a_name_is_taken_once_and_a_wrong_kind_is_refused() -> None:
    registry: Registry[str] = Registry("greeting", _is_text)
    registry.add("hello", "hello")
    with pytest.raises(ValueError, match="greeting 'hello' is already registered"):
        registry.add("hello", "bonjour")
    with pytest.raises(TypeError, match="is not a greeting"):
        registry.add("number", 3)


def test_an_unknown_name_lists_what_is_available() -> None:
    registry: Registry[str] = Registry("greeting", _is_text)
    registry.add("hello", "hello")
    registry.add("ciao", "ciao")
    with pytest.raises(KeyError, match="unknown greeting 'howdy'; available: ciao, hello"):
        registry.get("howdy")


def test_what_a_test_registers_inside_isolated_is_gone_after_it() -> None:
    with GENERATORS.isolated():
        GENERATORS.register("echo")(lambda settings: None)
        assert "echo" in GENERATORS
    assert "echo" not in GENERATORS


def test_every_generator_backend_is_registered_where_it_is_defined() -> None:
    assert set(GENERATORS.names()) == {"ctranslate2", "extractive", "openai", "transformers"}
    reader = GENERATORS.get("extractive")(GeneratorSettings())
    [generation] = reader.generate([GenerationRequest("Who wrote Hamlet?", ["Hamlet was written by Shakespeare."])])
    assert "Shakespeare" in generation.text


@pytest.mark.parametrize("backend", ["openai", "transformers", "ctranslate2"])
def test_a_backend_without_its_model_says_which_setting_it_needs(backend: str) -> None:
    with pytest.raises(BackendNotConfigured, match="needs LLM_"):
        GENERATORS.get(backend)(GeneratorSettings())


def test_the_nli_backends_are_registered_and_the_cross_encoder_needs_a_model() -> None:
    assert set(NLI_BACKENDS.names()) == {"cross-encoder", "offline"}
    with pytest.raises(BackendNotConfigured, match="needs NLI_MODEL"):
        NLI_BACKENDS.get("cross-encoder")("", HashEmbedder())
