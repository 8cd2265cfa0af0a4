"""Ending an estimation run: cluster and estimate from the stored responses, and store the
answers, the scores and the sources' current reliability; or mark the run failed."""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.db import transaction
from django.utils import timezone

from core.engine.estimation import ResponseRecord, estimate_from_records
from core.engine.reliability import DEFAULT_ESTIMATOR
from core.models import EstimationRun, ReliabilityScore, RunAnswer, RunResponse
from core.services.engine_context import configured_nli
from core.services.estimation.coordinate import run_layout
from sources.models import Source


class RunEnded(Exception):
    """The run ended (failed by its job's reaping) before its estimate could be stored."""


def _representative(responses: list[str]) -> str:
    counts = Counter(r.strip() for r in responses)
    return max(counts, key=lambda text: (counts[text], -responses.index(text) if text in responses else 0))


def finish_run(run: EstimationRun) -> dict[str, Any]:
    """Cluster, estimate, and store answers, scores and the sources' current reliability.
    Marks the run succeeded and returns the summary (its job's result)."""
    queries, source_ids = run_layout(run)
    index = {q.pk: i for i, q in enumerate(queries)}
    responses = list(RunResponse.objects.filter(run=run).order_by("query_id", "source_id"))
    records = [
        ResponseRecord(index[r.query_id], r.source_id, r.raw_response, r.response, r.filtered, r.align_score)
        for r in responses
        if r.query_id in index
    ]
    by_record = {
        id(rec): resp for rec, resp in zip(records, [r for r in responses if r.query_id in index], strict=False)
    }
    alpha = float(run.params.get("alpha", 1.0))
    beta = float(run.params.get("beta", 1.0))
    result, records = estimate_from_records(
        [q.question for q in queries],
        source_ids,
        records,
        configured_nli(),
        strict=bool(run.params.get("strict", False)),
        alpha=alpha,
        beta=beta,
        estimator=str(run.params.get("estimator", DEFAULT_ESTIMATOR)),
    )
    weight = dict(zip(source_ids, result.weights, strict=False))
    answers = []
    for q, query in enumerate(queries):
        winner = result.answers[q]
        members = [rec for rec in records if rec.query_index == q and rec.cluster is not None and rec.cluster == winner]
        answers.append(
            RunAnswer(
                run=run,
                query=query,
                cluster=winner,
                answer=_representative([m.response for m in members]) if members else "",
                support=float(sum(weight[m.source_id] for m in members)),
            )
        )
    for rec in records:
        resp = by_record[id(rec)]
        resp.cluster = rec.cluster
        winner = result.answers[rec.query_index]
        resp.agrees = None if rec.cluster is None else (winner is not None and rec.cluster == winner)
    now = timezone.now()
    with transaction.atomic():
        state = EstimationRun.objects.select_for_update().filter(pk=run.pk).values_list("state", flat=True).first()
        if state not in UNFINISHED:
            # Its job was failed meanwhile (reaped, say) and the run with it: store nothing.
            raise RunEnded(f"Run #{run.pk} was marked {state} while its estimate was computed; resume it to finish.")
        RunResponse.objects.bulk_update(list(by_record.values()), ["cluster", "agrees"], batch_size=1000)
        RunAnswer.objects.filter(run=run).delete()
        RunAnswer.objects.bulk_create(answers)
        ReliabilityScore.objects.filter(run=run).delete()
        scores = []
        for sid, rel in zip(source_ids, result.sources, strict=False):
            low, high = rel.interval
            scores.append(
                ReliabilityScore(
                    run=run,
                    source_id=sid,
                    reliability=rel.accuracy,
                    weight=rel.weight,
                    low=low,
                    high=high,
                    answers=rel.answers,
                    agreements=rel.agreements,
                )
            )
            Source.objects.filter(pk=sid).update(
                reliability=rel.accuracy,
                reliability_low=low,
                reliability_high=high,
                reliability_answers=rel.answers,
                reliability_updated_at=now,
            )
        ReliabilityScore.objects.bulk_create(scores)
        EstimationRun.objects.filter(pk=run.pk).update(
            state=EstimationRun.State.SUCCEEDED,
            iterations=result.iterations,
            converged=result.converged,
            finished_at=now,
        )
    names = dict(Source.objects.filter(pk__in=source_ids).values_list("id", "name"))
    return {
        "run_id": run.pk,
        "queries": len(queries),
        "sources": len(source_ids),
        "responses": len(responses),
        "iterations": result.iterations,
        "converged": result.converged,
        "scores": [
            {
                "source": names[sid],
                "source_id": sid,
                "reliability": round(rel.accuracy, 4),
                "weight": round(rel.weight, 4),
                "low": round(rel.interval[0], 4),
                "high": round(rel.interval[1], 4),
                "answers": rel.answers,
                "agreements": rel.agreements,
            }
            for sid, rel in zip(source_ids, result.sources, strict=False)
        ],
    }


def finished_message(summary: dict[str, Any]) -> str:
    """The line a finished run's job shows."""
    return f"Estimated {summary['sources']} source(s) over {summary['queries']} queries"


UNFINISHED = (EstimationRun.State.PENDING, EstimationRun.State.RUNNING)


def fail_run(run_id: int) -> int | None:
    """Mark the run failed unless it has ended (its job is the task layer's business);
    returns the run's job id."""
    run = EstimationRun.objects.filter(pk=run_id).only("pk", "job_id").first()
    if run is None:
        return None
    EstimationRun.objects.filter(pk=run_id, state__in=UNFINISHED).update(
        state=EstimationRun.State.FAILED, finished_at=timezone.now()
    )
    return run.job_id


def fail_runs_of_ended_jobs() -> int:
    """A run's state follows its job: every run still pending or running under a job that
    has ended (reaped, its worker restarted, failed) is marked failed, so it can be resumed.
    The task layer calls this whenever it fails jobs in bulk; returns the runs failed."""
    return EstimationRun.objects.filter(state__in=UNFINISHED, job__finished_at__isnull=False).update(
        state=EstimationRun.State.FAILED, finished_at=timezone.now()
    )


def run_scores(run: EstimationRun) -> list[dict[str, Any]]:
    return [
        {
            "source": s.source.name,
            "source_id": s.source_id,
            "reliability": round(s.reliability, 4),
            "weight": round(s.weight, 4),
            "low": round(s.low, 4),
            "high": round(s.high, 4),
            "answers": s.answers,
            "agreements": s.agreements,
        }
        for s in run.scores.select_related("source").order_by("source__name")
    ]
