"""``manage.py truth_discovery`` on a slice of Flights: loaded through the product's claim
loading, resolved by a claim-level run as a job, scored against the gold, and in agreement
with the benchmark's truth-discovery path on the same slice."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from core.bench.paths import default_data_dir
from core.bench.truth import load_claims
from core.bench.truth_methods import estimator_truths
from core.models import ClaimResolution, EstimationRun, ReliabilityScore
from sources.models import Claim, Source
from tasks.models import Job

FLIGHTS = default_data_dir() / "flights"
SLICE = 10  # flights: every tenth of the file's first hundred


def flights_slice(root: Path) -> Path:
    """A data dir holding the rows of ten flights from dirty.csv and the same rows of clean.csv
    (the two files are row-aligned)."""
    with open(FLIGHTS / "dirty.csv", encoding="utf-8", newline="") as fh:
        dirty = list(csv.reader(fh))
    with open(FLIGHTS / "clean.csv", encoding="utf-8", newline="") as fh:
        clean = list(csv.reader(fh))
    order: list[str] = []
    for row in dirty[1:]:
        if row[2] not in order:
            order.append(row[2])
    chosen = set(order[::10][:SLICE])
    keep = [0, *(i for i, row in enumerate(dirty) if i and row[2] in chosen)]
    folder = root / "flights"
    folder.mkdir(parents=True)
    for name, rows in (("dirty.csv", dirty), ("clean.csv", clean)):
        with open(folder / name, "w", encoding="utf-8", newline="") as fh:
            csv.writer(fh).writerows(rows[i] for i in keep)
    return root


def truth_discovery(*args: str) -> dict[str, Any]:
    out = io.StringIO()
    call_command("truth_discovery", *args, "--json", stdout=out)
    report: dict[str, Any] = json.loads(out.getvalue())
    return report


def bench_accuracy(data_dir: Path, estimator: str) -> tuple[float, int, int, Any]:
    """The benchmark's accuracy on the labelled items (core.bench.truth_methods' way)."""
    claims = load_claims("flights", data_dir)
    output = estimator_truths(claims, estimator)
    labelled = [t for t in claims.gold if t in set(claims.tasks)]
    correct = sum(output.truths.get(t) == claims.gold[t] for t in labelled)
    return correct / len(labelled), correct, len(labelled), claims


@pytest.mark.skipif(not (FLIGHTS / "dirty.csv").is_file(), reason="the shared Flights data is not here")
def test_the_command_agrees_with_the_benchmark_on_a_slice_of_flights_for_two_estimators(db, tmp_path):
    data_dir = flights_slice(tmp_path)
    for turn, estimator in enumerate(("iwmv", "accucopy")):
        report = truth_discovery("flights", "--estimator", estimator, "--data-dir", str(data_dir))
        accuracy, correct, labelled, claims = bench_accuracy(data_dir, estimator)
        assert (report["accuracy"], report["correct"], report["labelled"]) == (accuracy, correct, labelled)
        assert 0 < report["accuracy"] < 1  # a slice with conflicts the estimators settle differently
        assert report["estimator"] == estimator and report["dataset"] == "flights"
        assert (report["items"], report["sources"], report["claims"]) == (
            len(claims.tasks),
            len(claims.sources),
            len(claims.claims),
        )
        # The product's run resolved the benchmark's values, item for item.
        run = EstimationRun.objects.get(pk=report["run_id"])
        assert run.kind == EstimationRun.Kind.CLAIMS and run.state == EstimationRun.State.SUCCEEDED
        resolved = dict(
            ((s, a), v)
            for s, a, v in ClaimResolution.objects.filter(run=run).values_list("subject", "attribute", "value")
        )
        assert resolved == estimator_truths(claims, estimator).truths
        # What the run concluded about the sites (the interface issue 37's checks read).
        assert report["reliability"] == {
            name: round(value, 4)
            for name, value in ReliabilityScore.objects.filter(run=run).values_list("source__name", "reliability")
        }
        assert set(report["reliability"]) == set(claims.sources)
        assert report["identified"] is run.identification["identified"]
        assert all(isinstance(g, list) and len(g) >= 2 for g in report["copying"])
        if not report["identified"]:
            assert report["copying"] == []  # an unsettled run calls nobody a copier
        # The run was a job, with its progress recorded.
        job = Job.objects.get(pk=report["job_id"])
        assert (job.state, job.kind, job.percent) == (Job.State.SUCCEEDED, Job.Kind.ESTIMATE, 100)
        assert job.result["items"] == report["resolved"]
        assert report["seconds"] >= report["estimate_seconds"] >= 0 and report["load_seconds"] >= 0
        # Loading is idempotent: the second time every claim is already held.
        assert report["load"]["claims"] == len(claims.claims)
        if turn == 0:
            assert report["load"]["created"] == len(claims.claims) and report["load"]["sources_created"] == len(
                claims.sources
            )
        else:
            assert report["load"]["created"] == 0 and report["load"]["unchanged"] == len(claims.claims)
    assert Claim.objects.count() == len(claims.claims)
    assert Source.objects.count() == len(claims.sources)


@pytest.mark.skipif(not (FLIGHTS / "dirty.csv").is_file(), reason="the shared Flights data is not here")
def test_the_command_prints_a_short_summary_without_json(db, tmp_path):
    data_dir = flights_slice(tmp_path)
    out = io.StringIO()
    call_command("truth_discovery", "flights", "--estimator", "iwmv", "--data-dir", str(data_dir), stdout=out)
    accuracy, correct, labelled, _ = bench_accuracy(data_dir, "iwmv")
    text = out.getvalue()
    assert f"flights: accuracy {accuracy:.4f} ({correct}/{labelled} labelled items) with iwmv" in text
    assert "claims of" in text and "load" in text


@pytest.mark.skipif(not (FLIGHTS / "dirty.csv").is_file(), reason="the shared Flights data is not here")
def test_a_curators_authority_fixes_the_items_it_lists_and_is_reported(db, tmp_path):
    data_dir = flights_slice(tmp_path)
    claims = load_claims("flights", data_dir)
    site = "ua" if "ua" in claims.sources else "aa"
    own = {c.task: c.value for c in claims.claims if c.source == site}
    assert own  # the slice holds some of the airline's own listings
    plain = truth_discovery("flights", "--data-dir", str(data_dir))
    assert plain["authorities"] == []
    report = truth_discovery("flights", "--data-dir", str(data_dir), "--authority", site)
    assert report["authorities"] == [site]
    run = EstimationRun.objects.get(pk=report["run_id"])
    assert run.params["authorities"] == [Source.objects.get(name=site).pk]
    resolved = {
        (s, a): (v, c)
        for s, a, v, c in ClaimResolution.objects.filter(run=run).values_list(
            "subject", "attribute", "value", "confidence"
        )
    }
    assert all(resolved[item] == (value, 1.0) for item, value in own.items())
    with pytest.raises(CommandError, match="--authority: not a site"):
        truth_discovery("flights", "--data-dir", str(data_dir), "--authority", "no-such-site")


def test_a_missing_data_set_is_a_clear_error_and_stores_nothing(db, tmp_path):
    with pytest.raises(CommandError, match="No flights data at .*--data-dir"):
        call_command("truth_discovery", "flights", "--data-dir", str(tmp_path), "--json")
    assert not Claim.objects.exists() and not EstimationRun.objects.exists()
