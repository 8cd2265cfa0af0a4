"""The sources list and a source's page: every source with its current reliability and
trend, one source's reliability in every finished run, and the queries on which it
disagreed with the estimate."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.db.models import Count, F, OuterRef, Subquery, Window
from django.db.models.functions import RowNumber

from core.models import EstimationRun, ReliabilityScore, RunAnswer, RunResponse
from core.services.estimation.finish import usable_references
from core.services.pages.answers import gold_accuracy, matches_reference
from sources.models import Source

TREND_POINTS = 12


def reliability_history(source: Source | int) -> list[dict[str, Any]]:
    """The source's reliability in every finished run, oldest first (one query)."""
    source_id = source if isinstance(source, int) else source.pk
    rows = (
        ReliabilityScore.objects.filter(source_id=source_id, run__state=EstimationRun.State.SUCCEEDED)
        .order_by("run__created_at", "run_id")
        .values(
            "run_id",
            "run__created_at",
            "run__kind",
            "run__parent_id",
            "reliability",
            "low",
            "high",
            "answers",
            "agreements",
            "weight",
            "gold_answers",
            "gold_agreements",
        )
    )
    return [
        {
            "run_id": r["run_id"],
            "created_at": r["run__created_at"],
            "kind": r["run__kind"],
            "parent_run_id": r["run__parent_id"],
            "reliability": r["reliability"],
            "low": r["low"],
            "high": r["high"],
            "answers": r["answers"],
            "agreements": r["agreements"],
            "weight": r["weight"],
            "gold_answers": r["gold_answers"],
            "gold_agreements": r["gold_agreements"],
            "gold_accuracy": gold_accuracy(r["gold_agreements"], r["gold_answers"]),
        }
        for r in rows
    ]


def _trends(source_ids: list[int] | None = None, points: int = TREND_POINTS) -> dict[int, list[float]]:
    """The last `points` reliabilities of each source, oldest first (one query)."""
    scores = ReliabilityScore.objects.filter(run__state=EstimationRun.State.SUCCEEDED)
    if source_ids is not None:
        scores = scores.filter(source_id__in=source_ids)
    ranked = scores.annotate(
        recent=Window(
            RowNumber(), partition_by=[F("source_id")], order_by=[F("run__created_at").desc(), F("run_id").desc()]
        )
    ).filter(recent__lte=points)
    series: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for source_id, recent, reliability in ranked.values_list("source_id", "recent", "reliability"):
        series[source_id].append((recent, reliability))
    return {sid: [value for _, value in sorted(pairs, reverse=True)] for sid, pairs in series.items()}


def source_overview(*, active_only: bool = False) -> list[dict[str, Any]]:
    """Every source with its current reliability, uncertainty, answers, documents and trend.

    Two queries in all: sources with a document count, and the recent scores of all sources.
    """
    sources = Source.objects.annotate(document_count=Count("documents", distinct=True)).order_by("name")
    if active_only:
        sources = sources.filter(active=True)
    rows = list(
        sources.values(
            "id",
            "name",
            "kind",
            "active",
            "homepage",
            "chunk_count",
            "reliability",
            "reliability_low",
            "reliability_high",
            "reliability_answers",
            "reliability_updated_at",
            "document_count",
        )
    )
    trends = _trends()
    overview = []
    for row in rows:
        low, high = row["reliability_low"], row["reliability_high"]
        overview.append(
            {
                "id": row["id"],
                "name": row["name"],
                "kind": row["kind"],
                "active": row["active"],
                "homepage": row["homepage"],
                "reliability": row["reliability"],
                "low": low,
                "high": high,
                "uncertainty": (high - low) if low is not None and high is not None else None,
                "answers": row["reliability_answers"],
                "updated_at": row["reliability_updated_at"],
                "document_count": row["document_count"],
                "chunk_count": row["chunk_count"],
                "trend": trends.get(row["id"], []),
            }
        )
    return overview


def source_disagreements(source: Source | int, limit: int = 50) -> list[dict[str, Any]]:
    """Fact-checking queries (newest runs first) where the source's non-IDK answer differed
    from the run's estimated answer. Each row says whether the source's answer matches the
    query's reference answers (``matches_reference``; None when the query has none): a source
    that disagreed with a wrong consensus was right, and a page must not show it as wrong. One query."""
    source_id = source if isinstance(source, int) else source.pk
    estimated = RunAnswer.objects.filter(run=OuterRef("run_id"), query=OuterRef("query_id"))
    rows = (
        RunResponse.objects.filter(
            source_id=source_id, run__state=EstimationRun.State.SUCCEEDED, is_idk=False, agrees=False
        )
        .annotate(estimated=Subquery(estimated.values("answer")[:1]), support=Subquery(estimated.values("support")[:1]))
        .order_by("-run__created_at", "-run_id", "query_id")
        .values(
            "run_id",
            "run__created_at",
            "query_id",
            "query__question",
            "query__reference_answers",
            "response",
            "align_score",
            "estimated",
            "support",
        )[:limit]
    )
    described = []
    for r in rows:
        references = usable_references(r["query__reference_answers"])
        described.append(
            {
                "run_id": r["run_id"],
                "run_created_at": r["run__created_at"],
                "query_id": r["query_id"],
                "question": r["query__question"],
                "response": r["response"],
                "align_score": r["align_score"],
                "estimated_answer": r["estimated"] or "",
                "support": r["support"],
                "references": references,
                "matches_reference": matches_reference(r["response"], references),
                "estimate_matches_reference": matches_reference(r["estimated"] or "", references),
            }
        )
    return described
