"""The multirag strategy through the product: claims loaded from a file (their sources hold
no documents), reliabilities from the sources, the answer persisted with its claims."""

from __future__ import annotations

from typing import Any

from core.engine.strategies import Requirement
from core.services.asking import ask_now
from core.services.engine_context import build_context, configured_offers
from sources.claim_loading import load_claims
from sources.models import Claim, Source
from tests.corpus import DEPARTURES_CSV, DEPARTURES_MAPPING


def _load(reliability: dict[str, float]) -> None:
    load_claims([("flights.csv", DEPARTURES_CSV)], DEPARTURES_MAPPING)
    for name, value in reliability.items():
        Source.objects.filter(name=name).update(reliability=value, reliability_answers=40)


def test_claims_make_multirag_available_and_its_answer_cites_the_claims(db: Any, embedder: Any) -> None:
    assert Requirement.CLAIMS not in configured_offers()
    _load({"airline": 0.95, "airport": 0.9, "tracker": 0.85, "rumours": 0.1})
    assert Requirement.CLAIMS in configured_offers()
    ctx = build_context()
    assert ctx.sources == []  # claim-only sources hold no chunks: RA-RAG would not ask them
    assert {s.name for s in ctx.claim_sources} == {"airline", "airport", "tracker", "rumours"}

    question = ask_now("When did flight UA-10-SFO-JFK actually depart?", strategy="multirag")
    question.refresh_from_db()
    assert question.answer in {"7:10 a.m.", "07:10", "7:10 AM"}
    assert question.trace["answer_value"] == "07:10"
    assert question.trace["answer_item"]["attribute"] == "actual departure time"
    rumour = Claim.objects.get(source__name="rumours", attribute="actual departure time")
    evidence = {e["claim_id"]: e for e in question.evidence}
    assert set(evidence) == set(Claim.objects.filter(attribute="actual departure time").values_list("id", flat=True))
    assert evidence[rumour.pk]["used"] is False
    assert all(e["used"] for cid, e in evidence.items() if cid != rumour.pk)
    assert question.confidence is not None and 0.5 < question.confidence <= 1


def test_an_inactive_source_s_claims_do_not_vote(db: Any, embedder: Any) -> None:
    _load({"airline": 0.6, "airport": 0.6, "tracker": 0.6, "rumours": 0.99})
    Source.objects.filter(name__in=["airline", "airport", "tracker"]).update(active=False)
    question = ask_now("When did flight UA-10-SFO-JFK actually depart?", strategy="multirag")
    assert question.trace["answer_value"] == "21:45"  # only the rumour is left to say anything
    assert {e["source_id"] for e in question.evidence} == {Source.objects.get(name="rumours").pk}
