"""Bad input on the dashboard that once gave a 500 (issue 25): a page answers with a message
instead, and the source stays usable."""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from tests.factories import DocumentFactory, SourceFactory


def test_a_source_holding_a_1_3_mb_document_stays_searchable(analyst_client: Any, db: Any) -> None:
    # 130,000 distinct words: their lexemes alone pass to_tsvector's 1 MB limit.
    huge = "Lighthouse keepers. " + " ".join(f"zq{i:07d}" for i in range(130_000))
    assert len(huge) > 1_300_000
    source = SourceFactory()
    DocumentFactory(source=source, title="Logbook", text=huge)
    DocumentFactory(source=source, title="Rivers", text="The Danube flows through Vienna.")
    url = reverse("source-documents", args=[source.pk])
    found = analyst_client.get(url, {"q": "lighthouse"})
    assert found.status_code == 200
    assert "Logbook" in found.content.decode() and "Rivers" not in found.content.decode()
    other = analyst_client.get(url, {"q": "vienna"})
    assert other.status_code == 200
    assert "Rivers" in other.content.decode() and "Logbook" not in other.content.decode()
