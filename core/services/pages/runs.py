"""A run's page: the agreement matrix (queries x sources), each source's change against the
previous comparable run, and what a claim-level run resolved."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypedDict, cast

from django.db.models import Count, Q

from core.models import ClaimResolution, EstimationRun, ReliabilityScore, RunAnswer, RunResponse
from core.services.estimation.finish import usable_references
from core.services.pages.answers import gold_accuracy, matches_reference
from core.services.pages.run_sets import previous_finished_run
from sources.models import Source

AGREE, DISAGREE, IDK = "agree", "disagree", "idk"


def claim_run_summary(run: EstimationRun, *, limit: int = 20) -> dict[str, Any]:
    """What a claim-level run resolved (it has no responses, so no agreement matrix): how many
    items, how many in conflict, and the ``limit`` least confident conflicting items. Two queries."""
    resolutions = ClaimResolution.objects.filter(run=run)
    counts = resolutions.aggregate(items=Count("id"), conflicting=Count("id", filter=Q(conflicting=True)))
    doubtful = list(
        resolutions.filter(conflicting=True)
        .order_by("confidence", "subject", "attribute")
        .values("subject", "attribute", "value", "confidence", "claims")[:limit]
    )
    return {"run_id": run.pk, "items": counts["items"], "conflicting": counts["conflicting"], "doubtful": doubtful}


def agreement_matrix(run: EstimationRun, *, limit: int | None = None) -> dict[str, Any]:
    """Queries x sources of one run: each cell is "agree", "disagree", "idk" or None (no
    response recorded). Sources are ordered by their reliability in the run, most reliable
    first, so the heat map reads from trusted to doubtful. Each row carries the query's
    reference answers (``references``, [] when it has none) and whether the estimated answer
    matches one of them (``matches_reference``: None without references), so a page can show
    the estimate beside the truth a curator recorded. Four queries."""
    scores = dict(ReliabilityScore.objects.filter(run=run).values_list("source_id", "reliability"))
    # Plain dicts (values()), given a "reliability" below.
    sources = cast("list[dict[str, Any]]", list(run.sources.order_by("name").values("id", "name")))
    sources.sort(
        key=lambda s: (-(scores.get(s["id"]) if scores.get(s["id"]) is not None else -1.0), s["name"])  # type: ignore[operator]  # not None: the same lookup is checked
    )
    column = {s["id"]: i for i, s in enumerate(sources)}
    answers: dict[int, Mapping[str, Any]] = {
        a["query_id"]: a for a in RunAnswer.objects.filter(run=run).values("query_id", "answer", "cluster", "support")
    }
    rows: dict[int, dict[str, Any]] = {}
    responses = (
        RunResponse.objects.filter(run=run)
        .order_by("query_id")
        .values(
            "query_id",
            "query__question",
            "query__reference_answers",
            "source_id",
            "response",
            "is_idk",
            "agrees",
            "cluster",
        )
    )
    for r in responses:
        row = rows.get(r["query_id"])
        if row is None:
            if limit is not None and len(rows) >= limit:
                continue
            estimated = answers.get(r["query_id"], {})
            references = usable_references(r["query__reference_answers"])
            row = rows[r["query_id"]] = {
                "query_id": r["query_id"],
                "question": r["query__question"],
                "answer": estimated.get("answer", ""),
                "support": estimated.get("support"),
                "references": references,
                "matches_reference": matches_reference(estimated.get("answer", ""), references),
                "cells": [None] * len(sources),
                "responses": [""] * len(sources),
            }
        i = column.get(r["source_id"])
        if i is None:  # a response from a source no longer attached to the run
            continue
        if r["is_idk"]:
            state = IDK
        elif r["agrees"] is not None:
            state = AGREE if r["agrees"] else DISAGREE
        else:
            winning = answers.get(r["query_id"], {}).get("cluster")
            state = AGREE if winning is not None and winning == r["cluster"] else DISAGREE
        row["cells"][i] = state
        row["responses"][i] = r["response"]
    for s in sources:
        s["reliability"] = scores.get(s["id"])
    return {"run_id": run.pk, "sources": sources, "rows": list(rows.values())}


class SourceChange(TypedDict):
    """One source's score in a run beside its score in the previous one (None where it has none)."""

    source_id: int
    source_name: str
    status: Literal["new", "changed", "dropped"]
    reliability: float | None
    low: float | None
    high: float | None
    answers: int | None
    agreements: int | None
    gold_answers: int | None
    gold_agreements: int | None
    gold_accuracy: float | None
    previous_reliability: float | None
    previous_answers: int | None
    delta: float | None


class RunChanges(TypedDict):
    run_id: int
    previous_run_id: int | None
    sources: list[SourceChange]


def run_changes(run: EstimationRun) -> RunChanges:
    """Per-source change of reliability against the previous finished run. Each entry has
    status "new" (not scored before), "changed", or "dropped" (scored before, not now).
    Three queries."""
    previous = previous_finished_run(run)
    fields = (
        "source_id",
        "source__name",
        "reliability",
        "low",
        "high",
        "answers",
        "agreements",
        "gold_answers",
        "gold_agreements",
    )
    now = {r["source_id"]: r for r in ReliabilityScore.objects.filter(run=run).values(*fields)}
    before = (
        {r["source_id"]: r for r in ReliabilityScore.objects.filter(run=previous).values(*fields)} if previous else {}
    )
    entries: list[SourceChange] = []
    for source_id in set(now) | set(before):
        cur, old = now.get(source_id), before.get(source_id)
        ref = cur or old
        assert ref is not None
        delta = cur["reliability"] - old["reliability"] if cur and old else None
        entries.append(
            {
                "source_id": source_id,
                "source_name": ref["source__name"],
                "status": "changed" if cur and old else ("new" if cur else "dropped"),
                "reliability": cur["reliability"] if cur else None,
                "low": cur["low"] if cur else None,
                "high": cur["high"] if cur else None,
                "answers": cur["answers"] if cur else None,
                "agreements": cur["agreements"] if cur else None,
                "gold_answers": cur["gold_answers"] if cur else None,
                "gold_agreements": cur["gold_agreements"] if cur else None,
                "gold_accuracy": gold_accuracy(cur["gold_agreements"], cur["gold_answers"]) if cur else None,
                "previous_reliability": old["reliability"] if old else None,
                "previous_answers": old["answers"] if old else None,
                "delta": delta,
            }
        )
    entries.sort(key=lambda e: (-abs(e["delta"]) if e["delta"] is not None else 0.0, e["source_name"]))
    return {"run_id": run.pk, "previous_run_id": previous.pk if previous else None, "sources": entries}


def estimation_in_progress() -> dict[str, Any] | None:
    """The question-answering estimation run now in progress, for the ask page (issue 38 row
    12): its id, its job's percent and message, and whether it is the first one (no run has
    finished yet, so every source's reliability is still unchecked). None when none runs."""
    run = (
        EstimationRun.objects.filter(
            kind=EstimationRun.Kind.FULL, state__in=[EstimationRun.State.PENDING, EstimationRun.State.RUNNING]
        )
        .select_related("job")
        .order_by("-created_at", "-id")
        .first()
    )
    if run is None:
        return None
    # No source carries a reliability yet (a re-estimate of a finished run leaves the last one in place).
    first = not Source.objects.filter(reliability_updated_at__isnull=False).exists()
    job = run.job
    return {
        "run_id": run.pk,
        "percent": job.percent if job is not None else 0,
        "message": job.message if job is not None else "",
        "first": first,
    }
