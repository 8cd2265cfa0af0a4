"""Loading claims: all or nothing and idempotent, the sources the records name, the Flights
file as the benchmark reads it, the load job, the admin load view and the ingest_claims command."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client
from pytest_django import Settings

from core.bench import truth
from core.bench.paths import default_data_dir
from core.engine.claims.mapping import ClaimMapping, MappingError
from core.engine.types import Embedder
from sources.claim_loading import (
    load_claims,
    start_claim_load,
)
from sources.ingest import IngestError
from sources.models import Claim, ClaimKey, Source
from tasks.models import Job
from tests.factories import SourceFactory
from tests.services.helpers import FLIGHT_CSV, FLIGHT_MAPPING, flight_claims, stored

# --- storing: all or nothing, idempotent, sources --------------------------------------


def test_loading_creates_the_sources_the_records_name_and_stores_each_claim_once(db):
    SourceFactory(name="aa", kind=Source.Kind.NEWS)
    result = load_claims([("flights.csv", FLIGHT_CSV.encode())], FLIGHT_MAPPING)
    assert result.as_dict() == {
        "files": 1,
        "claims": 5,
        "created": 5,
        "updated": 0,
        "unchanged": 0,
        "sources_created": 1,
    }
    assert Source.objects.get(name="orbitz").kind == Source.Kind.DATASET
    assert Source.objects.get(name="aa").kind == Source.Kind.NEWS  # an existing source is kept as it is
    claim = Claim.objects.get(source__name="orbitz")
    assert (claim.value, claim.raw_value, claim.normalizer, claim.method) == ("07:20", "7:20 AM", "time", "mapping")
    assert claim.provenance == {"file": "flights.csv", "line": 3, "field": "act_dep"}
    assert Claim.objects.get(source__name="aa", subject="UA-9-SFO-JFK", attribute="gate").normalizer == "text"


def test_reloading_the_same_file_changes_nothing_and_a_corrected_file_updates_only_what_changed(db):
    load_claims([("flights.csv", FLIGHT_CSV.encode())], FLIGHT_MAPPING)
    before = set(Claim.objects.values_list("id", "source_id", "subject", "attribute", "value", "updated_at"))
    again = load_claims([("flights.csv", FLIGHT_CSV.encode())], FLIGHT_MAPPING)
    assert (again.created, again.updated, again.unchanged, again.sources_created) == (0, 0, 5, 0)
    assert set(Claim.objects.values_list("id", "source_id", "subject", "attribute", "value", "updated_at")) == before
    corrected = FLIGHT_CSV.replace("7:20 AM", "7:21 AM")
    third = load_claims([("flights.csv", corrected.encode())], FLIGHT_MAPPING)
    assert (third.created, third.updated, third.unchanged) == (0, 1, 4)
    assert Claim.objects.get(source__name="orbitz").value == "07:21"
    assert Claim.objects.count() == 5


def test_a_missing_subject_rejects_the_file_naming_line_and_field_and_stores_nothing(db):
    bad = FLIGHT_CSV + ",kayak,7:30 a.m.,A1\n"
    with pytest.raises(IngestError) as caught:
        load_claims([("good.csv", FLIGHT_CSV.encode()), ("bad.csv", bad.encode())], FLIGHT_MAPPING)
    assert str(caught.value) == "bad.csv, line 6, field 'flight': missing subject"
    assert (caught.value.line, caught.value.field) == (6, "flight")
    assert Claim.objects.count() == 0
    assert Source.objects.count() == 0  # not even the sources the good file names


def test_a_column_the_mapping_reads_but_the_header_lacks_is_named(db):
    mapping = ClaimMapping.from_json({"subject": "flight", "source": "src", "attributes": {"arrival": "time"}})
    with pytest.raises(IngestError, match=r"flights\.csv, line 1, field 'arrival': no column 'arrival' in the header"):
        load_claims([("flights.csv", FLIGHT_CSV.encode())], mapping)
    assert Claim.objects.count() == 0


def test_a_bad_normaliser_is_refused_with_the_key_at_fault():
    with pytest.raises(MappingError) as caught:
        ClaimMapping.from_json({"subject": "flight", "attributes": {"departure": {"normalizer": "clock"}}})
    assert caught.value.field == "attributes.departure.normalizer"
    assert "unknown normaliser 'clock'" in str(caught.value)


def test_malformed_and_unsafe_xml_are_rejected_with_nothing_stored(db):
    mapping = ClaimMapping.from_json({"subject": "code", "attributes": {"capital": "text"}})
    with pytest.raises(IngestError, match=r"c\.xml, line 2: malformed XML"):
        load_claims(
            [("c.xml", b"<countries>\n<country code='NO'><capital>Oslo</country></countries>")], mapping, source="atlas"
        )
    bomb = b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><x><c code="NO">&a;</c></x>'
    with pytest.raises(IngestError, match="refused unsafe XML"):
        load_claims([("c.xml", bomb)], mapping, source="atlas")
    assert Claim.objects.count() == 0
    assert not Source.objects.filter(name="atlas").exists()


def test_files_over_the_size_bound_or_with_too_many_claims_are_refused(db, settings):
    settings.INGEST_MAX_FILE_BYTES = 60
    with pytest.raises(IngestError, match=r"flights\.csv: file is \d+ bytes, over the limit of 60"):
        load_claims([("flights.csv", FLIGHT_CSV.encode())], FLIGHT_MAPPING)
    settings.INGEST_MAX_FILE_BYTES = 10_000
    settings.CLAIMS_MAX_PER_FILE = 3
    with pytest.raises(IngestError, match=r"flights\.csv, line 4: more than 3 claims in one file"):
        load_claims([("flights.csv", FLIGHT_CSV.encode())], FLIGHT_MAPPING)
    assert Claim.objects.count() == 0


def test_a_mapping_without_a_source_field_needs_the_source_and_refuses_both(db):
    mapping = ClaimMapping.from_json({"subject": "flight", "attributes": {"act_dep": "time"}})
    with pytest.raises(IngestError, match="give the source the claims belong to"):
        load_claims([("f.csv", FLIGHT_CSV.encode())], mapping)
    with pytest.raises(IngestError, match="do not also give a source"):
        load_claims([("f.csv", FLIGHT_CSV.encode())], FLIGHT_MAPPING, source="wire")
    result = load_claims([("f.csv", FLIGHT_CSV.encode())], mapping, source="wire")
    assert (result.claims, result.sources_created) == (2, 1)
    assert stored() == {("wire", "AA-1-IAH-ORD", "act_dep", "07:16"), ("wire", "UA-9-SFO-JFK", "act_dep", "19:05")}


@pytest.fixture(scope="module")
def shared_data() -> Path:
    path = default_data_dir()
    if not (path / "flights" / "dirty.csv").is_file():
        pytest.skip(f"Flights data not found at {path}")
    return path


def test_the_flights_file_loads_exactly_the_claims_the_benchmark_reads(db, shared_data):
    data = (shared_data / "flights" / "dirty.csv").read_bytes()
    result = load_claims([("dirty.csv", data)], truth.FLIGHTS_MAPPING)
    expected = truth.load_claims("flights", shared_data)
    got = {(name, (subject, attribute), value) for name, subject, attribute, value in stored()}
    assert got == {(c.source, c.task, c.value) for c in expected.claims}
    assert result.claims == len(expected.claims) == Claim.objects.count()
    assert result.sources_created == len(expected.sources) == Source.objects.count()


# --- the job ----------------------------------------------------------------------------


def test_the_load_job_stores_the_claims_removes_the_upload_and_embeds_the_new_keys(
    db: None, settings: Settings, tmp_path: Path, embedder: Embedder
) -> None:
    from tasks import tasks

    settings.UPLOAD_DIR = tmp_path / "uploads"
    job = Job.objects.get(pk=start_claim_load([("flights.csv", FLIGHT_CSV.encode())], FLIGHT_MAPPING).pk)
    assert (job.kind, job.state) == (Job.Kind.INGEST, Job.State.PENDING)
    upload_dir = Path(job.params["upload_dir"])
    assert upload_dir.is_dir() and job.params["mapping"] == FLIGHT_MAPPING.to_json()
    tasks.load_claims(job_id=job.pk)
    job.refresh_from_db()
    assert job.state == Job.State.SUCCEEDED, job.error
    assert (job.result["created"], job.result["sources_created"]) == (5, 2)
    assert Claim.objects.filter(job=job).count() == 5
    assert not upload_dir.exists()
    tasks.embed_claim_keys(job_id=job.result["embed_job"])
    embed = Job.objects.get(pk=job.result["embed_job"])
    assert embed.state == Job.State.SUCCEEDED and embed.result["keys"] == 4
    assert set(ClaimKey.objects.values_list("subject", "attribute")) == set(
        Claim.objects.values_list("subject", "attribute")
    )


def test_a_load_job_is_refused_before_it_exists_when_a_file_is_bad(db, settings, tmp_path):
    settings.UPLOAD_DIR = tmp_path / "uploads"
    with pytest.raises(IngestError, match="line 2, field 'flight': missing subject"):
        start_claim_load([("f.csv", b"flight,src,act_dep,gate\n,aa,7:00,A\n")], FLIGHT_MAPPING)
    assert Job.objects.count() == 0


# --- admin ------------------------------------------------------------------------------


def staff_with_source_permissions(user: Any) -> Any:
    user.is_staff = True
    user.save()
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="sources"))
    return user


def mapping_post(mapping: Any, content: bytes = FLIGHT_CSV.encode(), **extra: Any) -> dict[str, Any]:
    return {
        "files": SimpleUploadedFile("flights.csv", content, content_type="text/csv"),
        "mapping": mapping if isinstance(mapping, str) else json.dumps(mapping),
        **extra,
    }


def test_a_curator_loads_claims_from_the_admin_and_is_sent_to_the_job(db, curator, curator_client, settings, tmp_path):
    settings.UPLOAD_DIR = tmp_path / "uploads"
    staff_with_source_permissions(curator)
    changelist = curator_client.get("/admin/sources/claim/").content.decode()
    assert "/admin/sources/claim/load/" in changelist
    assert curator_client.get("/admin/sources/claim/load/").status_code == 200
    response = curator_client.post("/admin/sources/claim/load/", mapping_post(FLIGHT_MAPPING.to_json()))
    job = Job.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/jobs/{job.pk}/"
    assert job.params["mapping"] == FLIGHT_MAPPING.to_json() and job.created_by == curator
    assert Claim.objects.count() == 0  # stored by the worker


def test_the_admin_load_form_shows_mapping_and_line_errors_and_starts_nothing(db, curator, curator_client, settings):
    staff_with_source_permissions(curator)
    response = curator_client.post(
        "/admin/sources/claim/load/",
        mapping_post({"subject": "flight", "source": "src", "attributes": {"act_dep": "clock"}}),
    )
    assert response.status_code == 200
    assert "attributes.act_dep: unknown normaliser" in response.content.decode()
    response = curator_client.post(
        "/admin/sources/claim/load/", mapping_post(FLIGHT_MAPPING.to_json(), FLIGHT_CSV.encode() + b",x,7:00,A\n")
    )
    assert "Rejected, nothing stored: flights.csv, line 6, field &#x27;flight&#x27;: missing subject" in (
        response.content.decode()
    )
    response = curator_client.post(
        "/admin/sources/claim/load/", mapping_post({"subject": "flight", "attributes": {"act_dep": "time"}})
    )
    assert "choose the source the claims belong to" in response.content.decode()
    assert Job.objects.count() == 0 and Claim.objects.count() == 0


def test_an_analyst_cannot_load_claims_even_with_admin_access(db, analyst, analyst_client):
    staff_with_source_permissions(analyst)
    assert analyst_client.get("/admin/sources/claim/load/").status_code == 403
    assert analyst_client.post("/admin/sources/claim/load/", mapping_post(FLIGHT_MAPPING.to_json())).status_code == 403
    assert "/admin/sources/claim/load/" not in analyst_client.get("/admin/sources/claim/").content.decode()
    assert Job.objects.count() == 0


def test_the_claim_changelist_lists_filters_and_searches_claims(db: None, admin_client: Client) -> None:
    flight_claims()
    page = admin_client.get("/admin/sources/claim/?q=0201853949").content.decode()
    assert "0201853949" in page and "AA-3859-IAH-ORD" not in page
    assert admin_client.get("/admin/sources/claim/?method__exact=mapping&source__kind__exact=other").status_code == 200
    claim = Claim.objects.first()
    assert claim is not None
    assert admin_client.get(f"/admin/sources/claim/{claim.pk}/change/").status_code == 200


# --- the command ------------------------------------------------------------------------


def test_ingest_claims_sync_prints_the_counts_and_a_mapping_file_works(db, tmp_path):
    data = tmp_path / "flights.csv"
    data.write_text(FLIGHT_CSV)
    mapping = tmp_path / "mapping.json"
    mapping.write_text(json.dumps(FLIGHT_MAPPING.to_json()))
    out = StringIO()
    call_command("ingest_claims", str(data), "--mapping", str(mapping), "--sync", "--no-embed", stdout=out)
    assert json.loads(out.getvalue()) == {
        "files": 1,
        "claims": 5,
        "created": 5,
        "updated": 0,
        "unchanged": 0,
        "sources_created": 2,
    }
    out = StringIO()
    call_command("ingest_claims", str(data), "--mapping", json.dumps(FLIGHT_MAPPING.to_json()), "--sync", stdout=out)
    assert json.loads(out.getvalue())["unchanged"] == 5


def test_ingest_claims_queues_a_job_by_default(db, tmp_path, settings):
    settings.UPLOAD_DIR = tmp_path / "uploads"
    data = tmp_path / "cities.jsonl"
    data.write_text('{"city": "Oslo", "population": "709,037"}\n')
    out = StringIO()
    mapping = json.dumps({"subject": "city", "attributes": {"population": "number"}})
    call_command("ingest_claims", str(data), "--mapping", mapping, "--source", "atlas", stdout=out)
    job = Job.objects.get()
    assert out.getvalue().strip() == f"Claim load job {job.pk} queued for 1 file(s)."
    assert (job.params["source"], job.params["files"][0]["name"]) == ("atlas", "cities.jsonl")
    assert not Source.objects.filter(name="atlas").exists()  # created by the job, with its claims


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--mapping", '{"subject": "flight", "attributes": {"x": "clock"}}'], "attributes.x: unknown normaliser"),
        (["--mapping", "{not json"], "--mapping is not valid JSON"),
        (["--mapping", "/no/such/mapping.json"], "neither a JSON object nor a readable file"),
        (["--mapping", '{"subject": "flight", "attributes": {"act_dep": "time"}}'], "give the source"),
    ],
)
def test_ingest_claims_refuses_bad_mappings_clearly(db, tmp_path, args, message):
    data = tmp_path / "flights.csv"
    data.write_text(FLIGHT_CSV)
    with pytest.raises(CommandError, match=message):
        call_command("ingest_claims", str(data), *args, "--sync")
    assert Claim.objects.count() == 0


def test_ingest_claims_refuses_a_bad_file_whole_and_queues_nothing(db, tmp_path):
    good, bad = tmp_path / "a.csv", tmp_path / "b.csv"
    good.write_text(FLIGHT_CSV)
    bad.write_text("flight,src,act_dep,gate\nAA-1,aa,7:00\n")
    mapping = json.dumps(FLIGHT_MAPPING.to_json())
    with pytest.raises(CommandError, match=r"rejected, nothing stored: b\.csv, line 2: expected 4 columns, found 3"):
        call_command("ingest_claims", str(good), str(bad), "--mapping", mapping)
    with pytest.raises(CommandError, match="no such file or folder"):
        call_command("ingest_claims", str(tmp_path / "missing.csv"), "--mapping", mapping)
    assert Job.objects.count() == 0 and Claim.objects.count() == 0 and Source.objects.count() == 0
