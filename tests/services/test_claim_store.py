"""The PostgreSQL claim store: the keys a question names, key embeddings on demand, claim
records of active sources, and the engine context offering it only when claims exist."""

from __future__ import annotations

from core.engine.claims.types import ClaimRecord
from core.engine.strategies.base import Requirement
from core.services import engine_context
from sources.claim_store import PgClaimStore, question_spans
from sources.models import ClaimKey
from tests.factories import ClaimFactory
from tests.services.helpers import flight_claims

# --- the claim store --------------------------------------------------------------------


def test_question_spans_cover_ngrams_casefolded_names_and_isbns():
    spans = question_spans("Who wrote ISBN 978-0-201-85394-5, the Art of Computer Programming?")
    assert {"0201853949", "9780201853945", "Art of Computer Programming", "art of computer programming"} <= spans
    assert "AA-3859-IAH-ORD" in question_spans("When did flight AA-3859-IAH-ORD's plane actually depart?")


def test_match_keys_finds_the_subject_named_in_the_question_and_ranks_its_attributes(db, embedder):
    flight_claims()
    store = PgClaimStore(embedder)
    question = "When did flight AA-3859-IAH-ORD actually depart?"
    matches = store.match_keys(question, embedder.encode([question])[0], 4)
    assert [m.subject for m in matches] == ["AA-3859-IAH-ORD"] * 4
    assert matches[0].attribute == "actual departure time"
    assert all(m.score >= 1.0 for m in matches)
    question = "Who wrote ISBN 978-0-201-85394-5?"
    top = store.match_keys(question, embedder.encode([question])[0], 1)[0]
    assert (top.subject, top.attribute) == ("0201853949", "authors")


def test_match_keys_falls_back_to_key_embeddings_computed_on_demand(db, embedder):
    flight_claims()
    store = PgClaimStore(embedder, embed_on_demand=100)
    question = "the actual departure time of UA 1 from SFO to JFK"
    matches = store.match_keys(question, embedder.encode([question])[0], 3)
    assert ClaimKey.objects.count() == 6  # every key embedded once, on demand
    assert (matches[0].subject, matches[0].attribute) == ("UA-1-SFO-JFK", "actual departure time")
    assert matches[0].score < 1.0  # by embedding: no subject is named exactly


def test_group_and_about_read_claim_records_of_active_sources(db):
    aa, orbitz = flight_claims()
    store = PgClaimStore()
    group = store.group("AA-3859-IAH-ORD", "actual departure time")
    assert [(r.source_id, r.value, r.normalizer) for r in group] == [
        (aa.pk, "07:16", "time"),
        (orbitz.pk, "07:20", "time"),
    ]
    assert all(isinstance(r, ClaimRecord) for r in group)
    assert [r.source_id for r in store.group("AA-3859-IAH-ORD", "actual departure time", [orbitz.pk])] == [orbitz.pk]
    assert len(store.about("AA-3859-IAH-ORD")) == 8
    orbitz.active = False
    orbitz.save()
    assert [r.source_id for r in store.about("AA-3859-IAH-ORD")] == [aa.pk] * 4


def test_the_engine_context_offers_the_claim_store_only_when_claims_exist(db):
    assert Requirement.CLAIMS not in engine_context.configured_offers()
    assert engine_context.build_context().claims is None
    ClaimFactory()
    assert Requirement.CLAIMS in engine_context.configured_offers()
    assert isinstance(engine_context.build_context().claims, PgClaimStore)
