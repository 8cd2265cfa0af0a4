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

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol, runtime_checkable


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
