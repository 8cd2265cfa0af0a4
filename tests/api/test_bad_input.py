"""Bad input that once gave a 500 or was silently accepted (issue 25): each is a 400 in the
API's error shape naming the field at fault, and nothing of it is stored."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from core.models import EstimationRun
from sources.models import Claim, Source
from tasks.models import Job
from tests.api.helpers import demo_query_set, three_sources
from tests.factories import SourceFactory
from tests.helpers import error_of


def start_run(client, params):
    body = {"query_set": demo_query_set().pk, "sources": three_sources(), "params": params}
    return client.generic("POST", "/api/estimation-runs/", json.dumps(body), content_type="application/json")


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e400", 1e308, -1, True, "lots"])
@pytest.mark.parametrize("name", ["alpha", "beta"])
def test_a_prior_that_is_not_a_sensible_finite_number_is_a_400_naming_it(as_curator, name, value):
    response = start_run(as_curator, {name: value})
    assert response.status_code == 400, response.content[:300]
    error = error_of(response)
    assert f"params.{name}" in error["fields"]
    assert "from 0 to 1000" in error["fields"][f"params.{name}"][0]
    assert not EstimationRun.objects.exists() and not Job.objects.exists()


@pytest.mark.parametrize("value", ["nan", "inf", "1e400"])
def test_a_non_finite_tau_is_a_400_naming_it(as_curator, value):
    response = start_run(as_curator, {"tau": value})
    assert response.status_code == 400, response.content[:300]
    assert "params.tau" in error_of(response)["fields"]
    assert not EstimationRun.objects.exists()


def test_a_prior_in_range_given_as_text_is_stored_as_a_number(as_curator):
    response = start_run(as_curator, {"alpha": "2.5", "beta": 1000})
    assert response.status_code == 202, response.content[:300]
    run = EstimationRun.objects.get()
    assert (run.params["alpha"], run.params["beta"]) == (2.5, 1000.0)


def test_an_xml_claims_upload_of_a_hundred_thousand_repeated_tags_is_a_400_naming_the_limit(as_curator):
    data = b"<countries><country code='NO'><capital>Oslo</capital>" + b"<note>x</note>" * 100_000
    data += b"</country></countries>"
    body = {
        "files": [SimpleUploadedFile("atlas.xml", data, content_type="application/xml")],
        "mapping": json.dumps({"subject": "code", "attributes": {"capital": "text"}}),
        "source": "atlas",
    }
    response = as_curator.post("/api/claims/load/", body, format="multipart")
    assert response.status_code == 400, response.content[:300]
    message = error_of(response)["fields"]["files"][0]
    assert "atlas.xml" in message and "more than 10000 elements (the limit per record)" in message
    assert not Job.objects.exists() and not Claim.objects.exists() and not Source.objects.filter(name="atlas").exists()


@pytest.mark.parametrize("value", ["float", True, "12abc", [1], {"id": 1}, 0, -3])
def test_a_question_id_that_is_not_a_whole_number_is_a_400_not_a_truncated_id(as_analyst, value):
    from core.models import AnswerFeedback
    from tests.factories import QuestionFactory

    question = QuestionFactory(answered=True, answer="Lyon")
    QuestionFactory(answered=True, answer="Paris")  # id 1 may exist too: true must not find it
    sent = question.pk + 0.9 if value == "float" else value
    response = as_analyst.post("/api/feedback/", {"question": sent, "kind": "answer_wrong"}, format="json")
    assert response.status_code == 400, response.content[:300]
    error = error_of(response)
    assert set(error["fields"]) == {"question"}
    assert "Expected an id" in error["fields"]["question"][0]
    assert not AnswerFeedback.objects.exists()


def test_a_float_source_id_in_a_run_and_in_an_upload_is_a_400_naming_the_field(as_curator):
    ids = three_sources()
    body = {"query_set": demo_query_set().pk, "sources": [ids[0] + 0.5, ids[1], ids[2]]}
    response = as_curator.post("/api/estimation-runs/", body, format="json")
    assert response.status_code == 400, response.content[:300]
    assert "Expected an id" in error_of(response)["fields"]["sources"][0]
    body = {"query_set": 1.5, "sources": ids}
    response = as_curator.post("/api/estimation-runs/", body, format="json")
    assert "Expected an id" in error_of(response)["fields"]["query_set"][0]
    upload = {"source": ids[0] + 0.25, "documents": [{"text": "A text."}]}
    response = as_curator.post("/api/documents/", upload, format="json")
    assert response.status_code == 400
    assert "Expected an id" in error_of(response)["fields"]["source"][0]
    assert not EstimationRun.objects.exists() and not Job.objects.exists()


def test_an_api_server_error_is_the_api_s_json_error_shape_not_an_html_page(analyst, monkeypatch):
    from rest_framework.test import APIClient

    from core.api.views.catalogue import SourceViewSet

    def broken(self, request, *args, **kwargs):
        raise RuntimeError("index row size 3000 exceeds btree version 4 maximum 2704")

    monkeypatch.setattr(SourceViewSet, "list", broken)
    client = APIClient(raise_request_exception=False)
    client.force_authenticate(analyst)
    response = client.get("/api/sources/")
    assert response.status_code == 500
    assert response["Content-Type"].startswith("application/json")
    error = error_of(response)
    assert error["code"] == "server_error" and "btree" not in error["message"]


def test_a_fact_query_of_long_four_byte_text_is_a_400_naming_the_byte_limit(as_curator):
    from core.models import FactQuery, QueryCollection

    body = {"name": "emoji", "queries": [{"question": "Is it true? " + "\U0001f600" * 700}]}
    response = as_curator.post("/api/query-sets/", body, format="json")
    assert response.status_code == 400, response.content[:300]
    assert "at most 2400 bytes of UTF-8" in error_of(response)["fields"]["queries.0.question"][0]
    assert not QueryCollection.objects.exists() and not FactQuery.objects.exists()
    ascii_question = {"name": "long", "queries": [{"question": "Is it true that " + "x" * 1900 + "?"}]}
    assert as_curator.post("/api/query-sets/", ascii_question, format="json").status_code == 201


def test_a_claim_subject_too_long_in_utf_8_for_its_index_is_a_400_before_any_job(as_curator):
    # 400 characters (under the 500 allowed), 1600 bytes: with the attribute, past a btree row.
    csv = "src,flight,gate\naa," + "\U0001f6eb" * 400 + ",B7\n"
    body = {
        "files": [SimpleUploadedFile("gates.csv", csv.encode(), content_type="text/csv")],
        "mapping": json.dumps({"subject": "flight", "source": "src", "attributes": {"gate": "text"}}),
    }
    response = as_curator.post("/api/claims/load/", body, format="multipart")
    assert response.status_code == 400, response.content[:300]
    message = error_of(response)["fields"]["files"][0]
    assert "gates.csv, line 2" in message and "flight" in message and "longer than 1500 bytes of UTF-8" in message
    assert not Job.objects.exists() and not Claim.objects.exists()


def test_a_mapping_attribute_name_too_long_in_utf_8_is_a_400_naming_it(as_curator):
    name = "\U0001f6eb" * 151  # 151 characters, 604 bytes
    body = {
        "files": [SimpleUploadedFile("gates.csv", b"src,flight,gate\naa,AA-1,B7\n", content_type="text/csv")],
        "mapping": json.dumps({"subject": "flight", "source": "src", "attributes": {name: {"field": "gate"}}}),
    }
    response = as_curator.post("/api/claims/load/", body, format="multipart")
    assert response.status_code == 400, response.content[:300]
    fields = error_of(response)["fields"]
    assert any("longer than 600 bytes of UTF-8" in messages[0] for messages in fields.values()), fields
    assert not Job.objects.exists()


@pytest.mark.parametrize("stem", ["n" * 247, "\u6587" * 90], ids=["251-ascii", "90-cjk"])
def test_an_upload_whose_name_is_past_the_filesystems_limit_is_accepted_under_a_shorter_name(
    as_curator, settings, tmp_path, stem
):
    """Issue 38 row 6: 251 ASCII or 90 CJK characters (over 255 bytes) used to be a 500 with an
    empty folder left behind; both kinds of upload are accepted, kept under a name cut to
    MAX_STORED_NAME_BYTES with its extension, and the job keeps the user's own name."""
    from sources.uploads import MAX_STORED_NAME_BYTES

    settings.UPLOAD_DIR = tmp_path / "uploads"
    source = SourceFactory(name="gazette")
    notes = SimpleUploadedFile(f"{stem}.jsonl", b'{"text": "Bram Stoker wrote Dracula."}\n')
    response = as_curator.post("/api/documents/", {"source": source.pk, "files": [notes]}, format="multipart")
    assert response.status_code == 202, response.content[:300]
    claims = {
        "files": [SimpleUploadedFile(f"{stem}.csv", b"src,flight,gate\naa,AA-1,B7\n", content_type="text/csv")],
        "mapping": json.dumps({"subject": "flight", "source": "src", "attributes": {"gate": "text"}}),
    }
    response = as_curator.post("/api/claims/load/", claims, format="multipart")
    assert response.status_code == 202, response.content[:300]
    stored = sorted(p for folder in settings.UPLOAD_DIR.iterdir() for p in folder.iterdir())
    assert len(stored) == 2 and {p.suffix for p in stored} == {".jsonl", ".csv"}
    assert all(len(p.name.encode()) <= MAX_STORED_NAME_BYTES for p in stored)
    names = [
        *Job.objects.get(kind="ingest", params__has_key="display_names").params["display_names"].values(),
        *(f["name"] for f in Job.objects.get(params__has_key="files").params["files"]),
    ]
    assert sorted(names) == sorted([f"{stem}.jsonl", f"{stem}.csv"])


def test_an_id_in_unicode_digits_is_not_found(as_curator):
    """Issue 38 row 13: int() reads Unicode digits, so /api/sources/%EF%BC%91/ (a fullwidth one)
    was source 1; ids are ASCII digits only."""
    source = SourceFactory(name="gazette")
    assert as_curator.get(f"/api/sources/{source.pk}/").status_code == 200
    fullwidth = "".join(chr(0xFF10 + int(d)) for d in str(source.pk))
    arabic_indic = "".join(chr(0x0660 + int(d)) for d in str(source.pk))
    for spelled in (fullwidth, arabic_indic):
        assert as_curator.get(f"/api/sources/{spelled}/").status_code == 404
    assert as_curator.get(f"/api/estimation-runs/{fullwidth}/").status_code == 404


def test_an_upload_name_with_nothing_usable_is_kept_as_upload():
    from sources.uploads import stored_name

    assert stored_name(3, "???") == "0003-upload"
    assert stored_name(0, "..") == "0000-upload"
    assert stored_name(1, "notes.jsonl") == "0001-notes.jsonl"
