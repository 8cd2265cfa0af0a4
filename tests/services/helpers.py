"""Helpers shared by the service tests: a scripted model for claim extraction, a small flights
file with its claim mapping, and readers of what the claim tests stored."""

from __future__ import annotations

from typing import Any

from core.engine.backends.generation import Capability, Generation, GenerationRequest
from core.engine.claims.mapping import ClaimMapping
from sources.models import Claim, Source
from tests.factories import ClaimFactory, SourceFactory


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


# Claims: a small flights file and its mapping, and how the claim tests read what was stored.
FLIGHT_MAPPING = ClaimMapping.from_json(
    {
        "subject": "flight",
        "source": "src",
        "attributes": {
            "actual departure time": {"field": "act_dep", "normalizer": "time"},
            "gate": "text",
        },
    }
)
FLIGHT_CSV = (
    "flight,src,act_dep,gate\n"
    "AA-1-IAH-ORD,aa,7:16 a.m.,B 12\n"
    "AA-1-IAH-ORD,orbitz,7:20 AM,\n"
    "UA-9-SFO-JFK,aa,19:05,C3\n"
    "AA-1-IAH-ORD,aa,8:00 a.m.,B9\n"  # aa repeats the flight: its first value counts
)


def triples(claims: list[Any]) -> list[tuple[Any, ...]]:
    return [(c.source, c.subject, c.attribute, c.value, c.raw_value, c.provenance) for c in claims]


def stored() -> set[tuple[str, str, str, str]]:
    return set(Claim.objects.values_list("source__name", "subject", "attribute", "value"))


def flight_claims() -> tuple[Source, Source]:
    aa, orbitz = SourceFactory(name="aa"), SourceFactory(name="orbitz")
    for source, actual in ((aa, "07:16"), (orbitz, "07:20")):
        for attribute, value in (
            ("scheduled departure time", "07:10"),
            ("actual departure time", actual),
            ("scheduled arrival time", "09:40"),
            ("actual arrival time", "09:32"),
        ):
            ClaimFactory(source=source, subject="AA-3859-IAH-ORD", attribute=attribute, value=value, normalizer="time")
    ClaimFactory(source=aa, subject="UA-1-SFO-JFK", attribute="actual departure time", value="19:05")
    ClaimFactory(source=aa, subject="0201853949", attribute="authors", value="knuth", normalizer="name-list")
    return aa, orbitz
