"""The ingest command creates a source only for files it accepts; estimation runs name their
sources (the estimate command says "all" for its documented default) and a user has at most
ESTIMATION_MAX_CONCURRENT_PER_USER runs in progress."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from core.models import EstimationRun
from core.services.estimation import TooManyRuns, start_estimation_run
from sources.models import Source
from tasks.models import Job
from tests.factories import EstimationRunFactory, FactQueryFactory, QueryCollectionFactory, SourceFactory


def test_ingesting_only_rejected_files_creates_no_source_and_no_job(db: Any, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n{"text": broken}\n')
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(CommandError) as caught:
        call_command("ingest", str(bad), str(deep), source="never-made")
    assert "bad.jsonl, line 2: invalid JSON" in str(caught.value)
    assert "deep.json, line 1: JSON nested deeper than 64 levels" in str(caught.value)
    assert not Source.objects.filter(name="never-made").exists()
    assert not Job.objects.exists()


def test_a_deeply_nested_mapping_option_is_refused_by_name(db: Any, tmp_path: Path) -> None:
    good = tmp_path / "notes.csv"
    good.write_text("body\nThe sky is blue.\n")
    with pytest.raises(CommandError, match="--mapping is not accepted: JSON nested deeper than 64 levels"):
        call_command("ingest", str(good), source="wire", mapping="[" * 100_000 + "]" * 100_000)
    assert not Source.objects.filter(name="wire").exists()


def test_estimate_without_sources_asks_explicitly_for_every_active_source(db: Any, monkeypatch: Any) -> None:
    started: dict[str, Any] = {}

    def fake_start(**kwargs: Any) -> EstimationRun:
        started.update(kwargs)
        return EstimationRunFactory()

    monkeypatch.setattr("core.management.commands.estimate.start_estimation_run", fake_start)
    call_command("estimate")
    assert started["sources"] == "all"


def test_the_service_refuses_a_run_that_names_no_sources_even_when_sources_hold_documents(db: Any) -> None:
    FactQueryFactory(query_set=QueryCollectionFactory(name="demo"))
    SourceFactory(name="wire", chunk_count=5)
    with pytest.raises(ValidationError) as caught:
        start_estimation_run()
    assert set(caught.value.message_dict) == {"sources"}
    assert 'or "all"' in caught.value.message_dict["sources"][0]
    assert not EstimationRun.objects.exists()


def test_a_user_with_the_maximum_of_runs_in_progress_cannot_start_another(db: Any, curator: Any, settings: Any) -> None:
    FactQueryFactory(query_set=QueryCollectionFactory(name="demo"))
    # Three sources: a run needs at least three (reliability comes from agreement between sources).
    sources = [SourceFactory(name=name, chunk_count=5) for name in ("wire", "wiki", "almanac")]
    EstimationRunFactory(created_by=curator, state=EstimationRun.State.RUNNING)
    EstimationRunFactory(created_by=curator, state=EstimationRun.State.PENDING)
    with pytest.raises(TooManyRuns) as caught:
        start_estimation_run(sources=sources, user=curator)
    assert "at most 2 at once" in caught.value.message_dict["runs"][0]
    settings.ESTIMATION_MAX_CONCURRENT_PER_USER = 3
    assert start_estimation_run(sources=sources, user=curator).created_by == curator
    assert start_estimation_run(sources="all").created_by is None  # the CLI (no user) is not capped
