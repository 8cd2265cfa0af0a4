"""The claims browser: every claim (or one source's), searched and filtered, a page at a time,
each with where it came from and the latest claims run's resolved value for its item."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, cast

from django.db.models import Exists, OuterRef, Q, QuerySet

from core.models import ClaimResolution, EstimationRun
from sources.links import http_url
from sources.models import Claim, Source

FILTER_CHOICES = 1000  # at most this many sources and attributes in the browser's filters

BROWSER_COLUMNS = (
    "id",
    "source_id",
    "source__name",
    "subject",
    "attribute",
    "value",
    "raw_value",
    "method",
    "provenance",
    "document_id",
    "document__title",
    "document__url",
    "updated_at",
)


def provenance_label(provenance: Mapping[str, Any] | None) -> str:
    """Where a claim came from, in one short line: "dirty.csv, line 12, field act_dep_time"."""
    if not provenance:
        return ""
    parts = []
    if provenance.get("file"):
        parts.append(str(provenance["file"]))
    for key in ("line", "record", "path", "sentence", "offset"):
        if provenance.get(key) not in (None, ""):
            parts.append(f"{key} {provenance[key]}")
    if provenance.get("field"):
        parts.append(f"field {provenance['field']}")
    shown = {"file", "line", "record", "path", "sentence", "offset", "field", "document"}
    parts.extend(f"{k} {provenance[k]}" for k in sorted(provenance) if k not in shown)
    return ", ".join(parts)[:200]


def document_link(row: Mapping[str, Any]) -> dict[str, Any] | None:
    """The document a text claim was extracted from (title, and its URL when it is http(s))."""
    if not row.get("document_id"):
        return None
    return {
        "id": row["document_id"],
        "title": row.get("document__title") or f"document #{row['document_id']}",
        "href": http_url(row.get("document__url") or ""),
    }


def browse_claims(*, q: str = "", source_id: int | None = None, attribute: str = "") -> QuerySet[Claim, dict[str, Any]]:
    """Claims (as dicts) whose subject or value contains ``q``, of one source and one
    attribute when given, by subject, attribute and source name: lazy, for the pager."""
    claims = Claim.objects.all()
    if source_id is not None:
        claims = claims.filter(source_id=source_id)
    if attribute:
        claims = claims.filter(attribute=attribute)
    q = q.strip()
    if q:
        claims = claims.filter(Q(subject__icontains=q) | Q(value__icontains=q) | Q(raw_value__icontains=q))
    order = ("subject", "attribute", "id") if source_id is not None else ("subject", "attribute", "source__name")
    return cast("QuerySet[Claim, dict[str, Any]]", claims.order_by(*order).values(*BROWSER_COLUMNS))


def claim_filter_choices() -> dict[str, list[Any]]:
    """The browser's filter options: the attributes claimed, and the sources with claims. Two queries."""
    attributes = list(
        Claim.objects.order_by("attribute").values_list("attribute", flat=True).distinct()[:FILTER_CHOICES]
    )
    sources = list(
        Source.objects.filter(Exists(Claim.objects.filter(source=OuterRef("pk"))))
        .order_by("name")
        .values("id", "name")[:FILTER_CHOICES]
    )
    return {"attributes": attributes, "sources": sources}


def with_resolutions(rows: Iterable[Mapping[str, Any]], run: EstimationRun | None) -> list[dict[str, Any]]:
    """One page of browser rows, each with its provenance and the run's resolved value for its
    item (``agrees``: the claim's value is the resolved one, or within its tolerance; None without a run); the view adds
    the links. One query."""
    page = [dict(r) for r in rows]
    resolved: dict[tuple[str, str], Mapping[str, Any]] = {}
    if run is not None and page:
        found = ClaimResolution.objects.filter(
            run=run, subject__in={r["subject"] for r in page}, attribute__in={r["attribute"] for r in page}
        ).values("subject", "attribute", "value", "confidence", "conflicting", "values")
        resolved = {(r["subject"], r["attribute"]): r for r in found}
    for row in page:
        resolution = resolved.get((row["subject"], row["attribute"]))
        row["resolved"] = resolution
        row["agrees"] = None if resolution is None else _agrees(resolution, row["value"])
        row["provenance_label"] = provenance_label(row.get("provenance"))
        row["document"] = document_link(row)
        row["raw_differs"] = bool(row.get("raw_value")) and row["raw_value"] != row["value"]
    return page


def _agrees(resolution: Mapping[str, Any], value: str) -> bool:
    """Whether a claimed value is the resolved one, or one of the spellings within the
    tolerance that the run counted as it (the resolved value's ``spellings``)."""
    if resolution["value"] == value:
        return True
    first = (resolution.get("values") or [{}])[0]
    return first.get("value") == resolution["value"] and value in (first.get("spellings") or [])
