"""MultiRAG's confidences of the claims on an item, computed on demand for the claims pages
and the API from the claims and the sources' current reliability (``core.engine.claims.multirag``):
they are cheap (vectorised per value), and storing them would make them stale as soon as a
run updates a reliability. No language model: the pages never call one. Also the resolutions
a claims run stored for a subject."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, TypedDict

from django.db.models import Exists, OuterRef, QuerySet

from core.engine.claims.multirag import GRAPH_THRESHOLD, NODE_THRESHOLD, GroupConfidence, score_group
from core.engine.claims.tolerance import common_tolerance, tolerance_of, value_groups
from core.engine.claims.types import ClaimRecord
from core.engine.reliability.weights import voting_weight
from core.models import ClaimResolution, EstimationRun
from core.services.engine_context import weight_scheme
from core.services.pages.run_sets import claims_runs
from sources.models import Claim, Source


class ResolutionRow(TypedDict):
    """A run's resolution of one item (resolutions_of), as a dict."""

    run_id: int
    run__created_at: datetime
    attribute: str
    value: str
    confidence: float
    claims: int
    conflicting: bool
    values: Any  # the stored JSON: [{"value", "sources", ...}, ...]


ALPHA = 0.5

# The columns of an item's claims: what scoring needs, and what the conflict view shows.
ITEM_COLUMNS = (
    "id",
    "source_id",
    "source__name",
    "source__reliability",
    "source__reliability_answers",
    "value",
    "raw_value",
    "normalizer",
    "tolerance",
    "method",
    "provenance",
    "document_id",
    "document__title",
    "document__url",
    "updated_at",
)


def claim_records(rows: Sequence[Mapping[str, Any]], subject: str, attribute: str | None = None) -> list[ClaimRecord]:
    """The engine's records of claim rows (``attribute``: the rows' own when None)."""
    return [
        ClaimRecord(
            id=r["id"],
            source_id=r["source_id"],
            subject=subject,
            attribute=attribute if attribute is not None else r["attribute"],
            value=r["value"],
            raw_value=r.get("raw_value") or "",
            normalizer=r.get("normalizer") or "raw",
            tolerance=r.get("tolerance") or "",
        )
        for r in rows
    ]


def item_rows(subject: str, attribute: str, columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """The claims on one item with their source's name, reliability and history (one query,
    the needed columns only), in source order."""
    return list(
        Claim.objects.filter(subject=subject, attribute=attribute)
        .order_by("source__name", "id")
        .values(*(columns or ITEM_COLUMNS))
    )


def score_rows(rows: Sequence[Mapping[str, Any]], subject: str, attribute: str) -> GroupConfidence:
    """MultiRAG's confidence of an item from its ``item_rows``."""
    return score_claims(claim_records(rows, subject, attribute), rows)


def score_claims(records: Sequence[ClaimRecord], rows: Sequence[Mapping[str, Any]]) -> GroupConfidence:
    """MultiRAG's graph- and node-level confidence, historical authority from the sources'
    current reliability and the number of answers it rests on."""
    reliability = {r["source_id"]: r["source__reliability"] for r in rows}
    history = {r["source_id"]: r["source__reliability_answers"] or 0 for r in rows}
    return score_group(
        records,
        reliability,
        history=history,
        alpha=ALPHA,
        node_threshold=NODE_THRESHOLD,
        graph_threshold=GRAPH_THRESHOLD,
    )


def shown_values(
    rows: Sequence[Mapping[str, Any]],
    resolved: str | None = None,
    resolved_values: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, str]:
    """Each value claimed in one item's rows -> the value the pages show it as: itself, or,
    where its claims declare a tolerance (``core.engine.claims.tolerance``), its group's,
    grouped as the claim run grouped them (around its ``resolved`` value first) and shown as
    the run shows the group (``resolved_values``: the resolution's stored values with their
    ``spellings``), else as the group's most claimed value. Values within the tolerance of
    one another are one value, never a conflict."""
    declared = {(r.get("normalizer") or "raw", r.get("tolerance") or "") for r in rows}
    tolerance = common_tolerance([tolerance_of(normalizer, spec) for normalizer, spec in declared])
    counts = Counter(r["value"] for r in rows)
    groups = value_groups(counts, tolerance, centres=(resolved,) if resolved is not None else ())
    shown: dict[str, str] = {}
    for entry in resolved_values or []:
        value = entry.get("value")
        if isinstance(value, str):
            for member in [value, *(entry.get("spellings") or [])]:
                if member in groups:
                    shown.setdefault(groups[member], value)
    return {value: shown.get(centre, centre if centre in counts else value) for value, centre in groups.items()}


def claim_source_count() -> int:
    """Active sources holding claims: the N of their voting weights."""
    return Source.objects.filter(active=True).filter(Exists(Claim.objects.filter(source=OuterRef("pk")))).count()


def multirag_answer(
    group: GroupConfidence, rows: Sequence[Mapping[str, Any]], n_sources: int | None = None
) -> tuple[str, float]:
    """The value MultiRAG answers for the group (as the ``multirag`` strategy does: the kept
    claims vote with their sources' voting weights) and its share of the group's weight."""
    n = claim_source_count() if n_sources is None else n_sources
    scheme = weight_scheme()
    weights = {r["source_id"]: voting_weight(r["source__reliability"], max(n, 1), scheme=scheme) for r in rows}
    return group.weighted_answer(weights)


def resolutions_of(
    subject: str, attribute: str | None, run: EstimationRun | None
) -> QuerySet[ClaimResolution, ResolutionRow]:
    """The run's resolutions of a subject (one attribute or all) as dicts; the latest claims
    run's when ``run`` is None, found in the same query."""
    found = ClaimResolution.objects.filter(subject=subject)
    if attribute is not None:
        found = found.filter(attribute=attribute)
    if run is not None:
        found = found.filter(run=run)
    else:
        newest = claims_runs().values("id")[:1]
        found = found.filter(run_id__in=newest)
    return found.values(
        "run_id", "run__created_at", "attribute", "value", "confidence", "claims", "conflicting", "values"
    )
