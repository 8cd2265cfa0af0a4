"""Helpers shared by the service tests: a scripted model for claim extraction."""

from __future__ import annotations

from core.engine.backends.generation import Capability, Generation, GenerationRequest


class ScriptedModel:
    """A generator that writes free text: the answer scripted for the document in the prompt."""

    name = "scripted"
    capabilities = frozenset({Capability.FREE_TEXT})

    def __init__(self, answers: dict[str, str]) -> None:
        self.answers = answers
        self.prompts: list[str] = []

    def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        out = []
        for request in requests:
            assert request.prompt is not None
            self.prompts.append(request.prompt)
            answer = next(a for key, a in self.answers.items() if key in request.prompt)
            out.append(Generation(answer, self.name))
        return out
