"""The generator interface every answer backend implements, and what a backend can do.

A strategy declares what it needs (see core.engine.strategies.base.Requirement); a
generator declares what it offers in ``capabilities``:

- ``FREE_TEXT``: it writes free text, so it can answer from its own (parametric) knowledge,
  follow instruction prompts (hints, consolidation, query writing) and extract claims.
  The offline extractive reader cannot: it only returns a span of the given passages.
- ``TOKEN_SCORES``: white-box access to token log-probabilities (a local model), for
  strategies that score or reweight evidence inside the model. Such a generator also
  implements :class:`TokenScorer`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, TypeAlias, TypeGuard, runtime_checkable

from core.engine.registry import BackendNotConfigured, Registry

__all__ = [
    "GENERATORS",
    "BackendNotConfigured",
    "Capability",
    "Generation",
    "GenerationRequest",
    "Generator",
    "GeneratorSettings",
    "TokenScorer",
    "Tokenizer",
    "CausalLM",
    "token_budget",
]


# A loaded transformers tokenizer and causal language model: third-party objects without type
# stubs (transformers ships none that mypy can use), the one boundary every local runtime and
# the white-box strategy share.
Tokenizer: TypeAlias = Any
CausalLM: TypeAlias = Any


class Capability(StrEnum):
    FREE_TEXT = "free-text"
    TOKEN_SCORES = "token-scores"


@dataclass(frozen=True)
class GenerationRequest:
    question: str
    passages: Sequence[str] = field(default_factory=tuple)
    prompt: str | None = None  # a ready prompt overrides the default answer prompt
    # The most tokens this request may write (None: the backend's setting, LLM_MAX_NEW_TOKENS).
    # Prompts that ask for passages or a consolidation need more than a short answer does.
    max_tokens: int | None = None
    # The passages are one source's (RA-RAG's per-source reading), not a pool of several
    # sources' (vanilla RAG): what most of them say is that source's answer.
    one_source: bool = False


MAX_REQUEST_TOKENS = 1024  # no request may ask for more, whatever it says


def token_budget(request: GenerationRequest, default: int) -> int:
    """The number of new tokens ``request`` may write: its own budget (bounded by
    MAX_REQUEST_TOKENS) or the backend's default."""
    if request.max_tokens is None:
        return default
    return max(1, min(int(request.max_tokens), MAX_REQUEST_TOKENS))


@dataclass(frozen=True)
class Generation:
    text: str
    backend: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


class Generator(Protocol):
    name: str  # backend label recorded with every answer
    capabilities: frozenset[Capability]

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]: ...


@runtime_checkable
class TokenScorer(Protocol):
    """White-box access: the log-probability of each continuation given its request."""

    def score(self, requests: Sequence[GenerationRequest], continuations: Sequence[str]) -> list[float]: ...


@dataclass(frozen=True)
class GeneratorSettings:
    """What a generator backend may be built from (the product fills it from its settings,
    GENERATOR_BACKEND and the LLM_* switches; each backend reads the fields it needs)."""

    model: str = ""
    base_url: str = ""
    api_key: str = ""
    timeout: float = 60.0
    retries: int = 3
    concurrency: int = 8
    max_new_tokens: int = 32
    models_dir: str = ""
    dtype: str = "auto"
    compute_type: str = "auto"
    batch_size: int = 0
    grounded: bool = False  # a small local model's non-answers replaced by the reader's span


GeneratorFactory = Callable[[GeneratorSettings], Generator]


def _is_generator_factory(item: object) -> TypeGuard[GeneratorFactory]:
    return callable(item)


# Generator backends by name (GENERATOR_BACKEND): each backend module registers the factory
# that builds it from GeneratorSettings, ``@GENERATORS.register("openai")``.
GENERATORS: Registry[GeneratorFactory] = Registry(
    "generator backend",
    _is_generator_factory,
    builtin_modules=(
        "core.engine.backends.generation.extractive",
        "core.engine.backends.generation.openai_chat",
        "core.engine.backends.generation.local_transformers",
        "core.engine.backends.generation.local_ctranslate2",
    ),
)
