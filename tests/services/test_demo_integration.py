"""The demo end to end on the real database and worker: load_demo, an estimation run, an ask."""

from __future__ import annotations

import json
from pathlib import Path
from statistics import mean

from django.core.management import call_command

from core.models import EstimationRun, FactQuery
from core.services.asking import ask_now
from core.services.estimation import start_estimation_run
from sources.models import Source
from tasks.jobs import wait_for_job
from tasks.models import Job


def test_the_demo_run_ranks_unreliable_sources_below_reliable_ones_and_answers(worker):
    call_command("load_demo", "--wait", "--timeout", "600")
    manifest = json.loads(Path("sources/demo_data/manifest.json").read_text(encoding="utf-8"))
    truth = {s["name"]: s["simulated_reliability"] for s in manifest["sources"]}
    run = start_estimation_run(sources="all")
    job = wait_for_job(run.job_id, timeout=600)
    assert job.state == Job.State.SUCCEEDED, job.error
    run.refresh_from_db()
    assert run.state == EstimationRun.State.SUCCEEDED
    estimated = {s.name: s.reliability for s in Source.objects.filter(name__in=truth)}
    reliable = [estimated[n] for n, p in truth.items() if p >= 0.8]
    unreliable = [estimated[n] for n, p in truth.items() if p <= 0.15]
    assert min(reliable) > max(unreliable), estimated
    assert mean(reliable) - mean(unreliable) > 0.2, estimated

    query = FactQuery.objects.filter(query_set__name="demo").first()
    question = ask_now(query.question, strategy="ra-rag")
    assert question.answer and question.backend == "extractive"
    assert question.votes.exists()
    ranks = list(question.votes.order_by("rank").values_list("source__name", flat=True))
    assert ranks[0] in {n for n, p in truth.items() if p >= 0.8}  # kappa-RRSS visits the most reliable first
