"""Which runs the pages read. "Finished run" means an estimation run that succeeded: a failed
run's responses are partial and must not move a trend or a conflict graph. "The latest claims
run" is the newest claim-level run that succeeded; its ``ClaimResolution`` rows are the
resolved values the claims pages show."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from core.models import EstimationRun
from core.services.estimation.update import full_run_of


def finished_runs() -> QuerySet[EstimationRun]:
    """Succeeded runs, newest first (the order every "latest"/"previous" below uses)."""
    return EstimationRun.objects.filter(state=EstimationRun.State.SUCCEEDED).order_by("-created_at", "-id")


def finished_full_runs() -> QuerySet[EstimationRun]:
    """Succeeded full runs (those with responses of their own, not incremental updates), newest first."""
    return finished_runs().filter(kind=EstimationRun.Kind.FULL)


def responses_run(run: EstimationRun) -> EstimationRun:
    """The run whose stored responses describe ``run``: itself, or the full run an update rests on."""
    if run.kind != EstimationRun.Kind.UPDATE:
        return run
    return full_run_of(run) or run


def comparable_runs(run: EstimationRun) -> QuerySet[EstimationRun]:
    """Succeeded runs whose scores compare with ``run``'s: claim-level runs with claim-level
    runs, runs over fact-checking queries (full runs and their updates) with each other; a
    claim run's reliabilities rest on other evidence (often other sources) than a QA run's."""
    runs = finished_runs()
    if run.kind == EstimationRun.Kind.CLAIMS:
        return runs.filter(kind=EstimationRun.Kind.CLAIMS)
    return runs.exclude(kind=EstimationRun.Kind.CLAIMS)


def previous_finished_run(run: EstimationRun) -> EstimationRun | None:
    """The comparable succeeded run started just before `run` (None for the first one)."""
    return (
        comparable_runs(run)
        .filter(Q(created_at__lt=run.created_at) | Q(created_at=run.created_at, id__lt=run.id))
        .exclude(pk=run.pk)
        .first()
    )


def claims_runs() -> QuerySet[EstimationRun]:
    """Succeeded claim-level estimation runs, newest first."""
    return EstimationRun.objects.filter(state=EstimationRun.State.SUCCEEDED, kind=EstimationRun.Kind.CLAIMS).order_by(
        "-created_at", "-id"
    )


def latest_claims_run() -> EstimationRun | None:
    return claims_runs().first()
