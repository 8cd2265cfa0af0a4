"""The generator interface every answer backend implements."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class GenerationRequest:
    question: str
    passages: Sequence[str] = field(default_factory=tuple)
    prompt: str | None = None  # a ready prompt overrides the default answer prompt


@dataclass(frozen=True)
class Generation:
    text: str
    backend: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


class Generator(Protocol):
    name: str  # backend label recorded with every answer

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]: ...
