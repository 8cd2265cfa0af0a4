"""Curators set reference answers in the admin (one per line), and the demo query set loads
with its reference answers, also into a set loaded before they were used."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management import call_command

from core.models import FactQuery
from tests.factories import FactQueryFactory, QueryCollectionFactory

DEMO_QUERIES = Path(__file__).resolve().parents[2] / "sources" / "demo_data" / "queries.json"


def test_a_curator_sets_reference_answers_one_per_line_in_the_admin(db, admin_client):
    query = FactQueryFactory(question="What is the capital of France?", tags=["geo"])
    url = f"/admin/core/factquery/{query.pk}/change/"
    assert 'name="reference_answers"' in admin_client.get(url).content.decode()
    response = admin_client.post(
        url,
        {
            "query_set": query.query_set_id,
            "question": query.question,
            "reference_answers": "Paris\n\n  Paris, France  \nParis\n",
            "tags": '["geo"]',
            "origin": "curated",
            "document": "",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    query.refresh_from_db()
    assert query.reference_answers == ["Paris", "Paris, France"]
    assert "Paris\nParis, France" in admin_client.get(url).content.decode()
    gold_only = admin_client.get("/admin/core/factquery/?gold=yes").content.decode()
    assert "What is the capital of France?" in gold_only


def test_the_demo_query_set_loads_with_its_reference_answers_and_fills_in_a_set_loaded_without_them(db):
    items = json.loads(DEMO_QUERIES.read_text(encoding="utf-8"))["estimation"]
    demo = QueryCollectionFactory(name="demo")
    bare = FactQueryFactory(query_set=demo, question=items[0]["question"], reference_answers=[])
    curated = FactQueryFactory(query_set=demo, question=items[1]["question"], reference_answers=["a curator's"])
    call_command("load_demo")
    queries = FactQuery.objects.filter(query_set__name="demo")
    assert queries.count() == len(items)
    assert not queries.filter(reference_answers=[]).exists()
    bare.refresh_from_db()
    curated.refresh_from_db()
    assert bare.reference_answers == items[0]["reference_answers"]
    assert curated.reference_answers == ["a curator's"]  # never overwritten
