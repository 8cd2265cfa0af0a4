"""The claims pages' read side: the claims browser, one subject's attributes, one item's
conflict view and the conflicts page's claims mode.

Every function returns plain dicts, lists or lazy ``values()`` querysets (for the pager),
runs a bounded number of SQL queries whatever the number of sources or claims, and never
writes. MultiRAG's confidences (``core.engine.claims.multirag``) are computed here on demand
from the claims and the sources' current reliability: they are cheap (vectorised per value),
and storing them would make them stale as soon as a run updates a reliability.

"The latest claims run" is the newest claim-level estimation run that succeeded; its
``ClaimResolution`` rows are the resolved values the pages show.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from django.core.cache import cache
from django.db.models import Count, Exists, Max, OuterRef, Q, QuerySet
from django.urls import reverse
from django.utils.http import urlencode

from core.engine.claims.multirag import GRAPH_THRESHOLD, NODE_THRESHOLD, GroupConfidence, line_graph, score_group
from core.engine.claims.types import ClaimRecord
from core.engine.graphs.conflict import cluster_graph
from core.engine.graphs.palette import rate_colour
from core.engine.reliability.weights import voting_weight
from core.models import ClaimResolution, EstimationRun
from core.services.engine_context import weight_scheme
from core.services.insights import dependence_groups
from sources.links import http_url
from sources.models import Claim, Source

ALPHA = 0.5
GRAPH_SOURCES = 60  # the claims conflict graph shows the sources with the most claims, at most this many
RESOLUTION_SCAN = 50_000  # items of a run read to count source pairs (Books has about 1,300)
SUBJECT_GRAPH_PER_GROUP = 30  # claims drawn per attribute in a subject's line graph
SUBJECT_GRAPH_EDGES = 400
VALUE_GRAPH_SOURCES = 16  # sources drawn around each value in the conflict view's graph
VALUE_SOURCES_LISTED = 40  # sources named per value in the values table (the claims table has them all)
RAW_FORMS = 5  # raw spellings shown per value
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


# --- runs ----------------------------------------------------------------------------------


def claims_runs() -> Any:
    """Succeeded claim-level estimation runs, newest first."""
    return EstimationRun.objects.filter(state=EstimationRun.State.SUCCEEDED, kind=EstimationRun.Kind.CLAIMS).order_by(
        "-created_at", "-id"
    )


def latest_claims_run() -> EstimationRun | None:
    return claims_runs().first()


# --- links and provenance ------------------------------------------------------------------


def subject_url(subject: str) -> str:
    return f"{reverse('claim-subject')}?{urlencode({'subject': subject})}"


def conflict_url(subject: str, attribute: str) -> str:
    return f"{reverse('claim-conflict')}?{urlencode({'subject': subject, 'attribute': attribute})}"


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


def _document_link(row: Mapping[str, Any]) -> dict[str, Any] | None:
    """The document a text claim was extracted from (title, and its URL when it is http(s))."""
    if not row.get("document_id"):
        return None
    return {
        "id": row["document_id"],
        "title": row.get("document__title") or f"document #{row['document_id']}",
        "href": http_url(row.get("document__url") or ""),
    }


# --- the claims browser --------------------------------------------------------------------


def browse_claims(*, q: str = "", source_id: int | None = None, attribute: str = "") -> QuerySet[Any]:
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
    return claims.order_by(*order).values(*BROWSER_COLUMNS)


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
    """One page of browser rows, each with its links, provenance and the run's resolved value
    for its item (``agrees``: the claim's value is the resolved one; None without a run). One query."""
    rows = [dict(r) for r in rows]
    resolved: dict[tuple[str, str], dict[str, Any]] = {}
    if run is not None and rows:
        found = ClaimResolution.objects.filter(
            run=run, subject__in={r["subject"] for r in rows}, attribute__in={r["attribute"] for r in rows}
        ).values("subject", "attribute", "value", "confidence", "conflicting")
        resolved = {(r["subject"], r["attribute"]): r for r in found}
    for row in rows:
        resolution = resolved.get((row["subject"], row["attribute"]))
        row["resolved"] = resolution
        row["agrees"] = None if resolution is None else resolution["value"] == row["value"]
        row["subject_url"] = subject_url(row["subject"])
        row["conflict_url"] = conflict_url(row["subject"], row["attribute"])
        row["provenance_label"] = provenance_label(row.get("provenance"))
        row["document"] = _document_link(row)
        row["raw_differs"] = bool(row.get("raw_value")) and row["raw_value"] != row["value"]
    return rows


# --- MultiRAG confidence of a group ---------------------------------------------------------


def _records(rows: Sequence[Mapping[str, Any]], subject: str, attribute: str | None = None) -> list[ClaimRecord]:
    return [
        ClaimRecord(
            id=r["id"],
            source_id=r["source_id"],
            subject=subject,
            attribute=attribute if attribute is not None else r["attribute"],
            value=r["value"],
            raw_value=r.get("raw_value") or "",
            normalizer=r.get("normalizer") or "raw",
        )
        for r in rows
    ]


def item_rows(subject: str, attribute: str, columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """The claims on one item with their source's name, reliability and history (one query,
    the needed columns only), in source order."""
    return list(
        Claim.objects.filter(subject=subject, attribute=attribute)
        .order_by("source__name", "id")
        .values(*(columns or _CONFLICT_COLUMNS))
    )


def score_rows(rows: Sequence[Mapping[str, Any]], subject: str, attribute: str) -> GroupConfidence:
    """MultiRAG's confidence of an item from its ``item_rows``."""
    return _score(_records(rows, subject, attribute), rows)


def _score(records: Sequence[ClaimRecord], rows: Sequence[Mapping[str, Any]]) -> GroupConfidence:
    """MultiRAG's graph- and node-level confidence, historical authority from the sources'
    current reliability and the number of answers it rests on (no language model: the pages
    never call one)."""
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


def _resolution_of(subject: str, attribute: str | None, run: EstimationRun | None) -> Any:
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


# --- one subject -----------------------------------------------------------------------------

_SUBJECT_COLUMNS = (
    "id",
    "source_id",
    "source__name",
    "source__reliability",
    "source__reliability_answers",
    "attribute",
    "value",
    "raw_value",
    "normalizer",
)


def subject_view(subject: str, run: EstimationRun | None = None) -> dict[str, Any]:
    """Every attribute claimed of ``subject``: the resolved value and confidence of the run
    (the latest claims run by default), the number of sources and values, whether they
    conflict, MultiRAG's group confidence, and the subject's line graph. Two queries."""
    rows = list(Claim.objects.filter(subject=subject).order_by("attribute", "source__name").values(*_SUBJECT_COLUMNS))
    n_sources = claim_source_count() if rows else 0
    resolutions = {r["attribute"]: r for r in _resolution_of(subject, None, run)}
    by_attribute: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_attribute[row["attribute"]].append(row)
    attributes = []
    for attribute in sorted(set(by_attribute) | set(resolutions)):
        members = by_attribute.get(attribute, [])
        resolution = resolutions.get(attribute)
        group = _score(_records(members, subject, attribute), members) if members else None
        values = Counter(r["value"] for r in members)
        attributes.append(
            {
                "attribute": attribute,
                "resolved": resolution["value"] if resolution else None,
                "confidence": resolution["confidence"] if resolution else None,
                "claims": len(members),
                "sources": len({r["source_id"] for r in members}),
                "values": len(values),
                "top_value": values.most_common(1)[0][0] if values else None,
                "conflicting": len(values) > 1 or bool(resolution and resolution["conflicting"]),
                "group_confidence": group.confidence if group else None,
                "group_kept": group.kept if group else None,
                "isolated": group.isolated if group else False,
                "answer": multirag_answer(group, members, n_sources)[0] if group else None,
                "url": conflict_url(subject, attribute),
            }
        )
    run_id = next((r["run_id"] for r in resolutions.values()), run.pk if run else None)
    return {
        "subject": subject,
        "attributes": attributes,
        "claims": len(rows),
        "sources": len({r["source_id"] for r in rows}),
        "run_id": run_id,
        "graph": subject_graph(subject, rows, {a: r["value"] for a, r in resolutions.items()}) if rows else None,
    }


def subject_graph(
    subject: str, rows: Sequence[Mapping[str, Any]], resolved: Mapping[str, str], *, width: int = 1000
) -> dict[str, Any]:
    """The subject's multi-source line graph (nodes are claims, edges join claims that share an
    entity: MultiRAG's sparsified form, a hub per attribute) as SVG geometry.

    The first attribute's hub sits in the middle, every attribute's claims fan out in a sector
    of their own, same values side by side; green is the resolved value (or the most claimed
    one without a run), other values shade to red. At most SUBJECT_GRAPH_PER_GROUP claims per
    attribute are drawn (the most reliable sources first), so 900 sources stay readable."""
    by_attribute: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for row in rows:
        by_attribute[row["attribute"]].append(row)
    drawn: list[Mapping[str, Any]] = []
    hidden = 0
    for members in by_attribute.values():
        best = sorted(members, key=lambda r: (-(r["source__reliability"] or 0.0), r["source__name"]))
        kept = best[:SUBJECT_GRAPH_PER_GROUP]
        hidden += len(members) - len(kept)
        counts = Counter(r["value"] for r in kept)
        drawn.extend(sorted(kept, key=lambda r: (-counts[r["value"]], r["value"], r["source__name"])))
    records = _records(drawn, subject)
    graph = line_graph(records, max_edges=SUBJECT_GRAPH_EDGES)
    row_of = {r["id"]: r for r in drawn}
    groups: dict[str, list[ClaimRecord]] = {}
    for record in graph.nodes:
        groups.setdefault(record.attribute, []).append(record)
    attributes = list(groups)
    sector = 2 * math.pi / max(len(attributes), 1)
    height = 560
    cx, cy = width / 2, height / 2
    hub_radius, fan_radius = 120.0, 230.0
    positions: dict[int, tuple[float, float]] = {}
    labels = []
    nodes = []
    root = attributes[0] if attributes else None
    for gi, attribute in enumerate(attributes):
        members = groups[attribute]
        angle = -math.pi / 2 + gi * sector
        hub = members[0]
        if attribute == root:
            positions[hub.id] = (cx, cy)
        else:
            positions[hub.id] = (cx + hub_radius * math.cos(angle), cy + hub_radius * math.sin(angle))
        others = members[1:]
        spread = min(sector * 0.8, math.pi * 0.9)
        for k, member in enumerate(others):
            t = 0.5 if len(others) == 1 else k / (len(others) - 1)
            a = angle - spread / 2 + t * spread
            radius = fan_radius + (18 if k % 2 else 0)  # stagger so neighbours' labels do not touch
            positions[member.id] = (cx + radius * math.cos(a), cy + radius * math.sin(a) * 0.95)
        # The attribute's name beyond its fan: to the side (anchored away from the fan) or above/below.
        cos, sin = math.cos(angle), math.sin(angle)
        anchor = "start" if cos > 0.3 else ("end" if cos < -0.3 else "middle")
        lx = cx + (fan_radius + 34) * cos
        ly = cy + (fan_radius + 40) * sin * 0.95 + (4 if anchor != "middle" else (8 if sin > 0 else 0))
        values = Counter(m.value for m in members)
        good = resolved.get(attribute) or values.most_common(1)[0][0]
        url = conflict_url(subject, attribute)
        labels.append({"x": f"{lx:.1f}", "y": f"{ly:.1f}", "anchor": anchor, "text": attribute, "url": url})
        for member in members:
            row = row_of[member.id]
            x, y = positions[member.id]
            share = values[member.value] / len(members)
            colour = rate_colour(0.0) if member.value == good else rate_colour(min(1.0, 0.75 + (1 - share) / 4))
            nodes.append(
                {
                    "x": f"{x:.1f}",
                    "y": f"{y:.1f}",
                    "r": 8 if member is hub else 5,
                    "colour": colour,
                    "hub": member is hub,
                    "url": url,
                    "title": f"{row['source__name']}: {attribute} = {member.value}"
                    + (f" (raw: {member.raw_value})" if member.raw_value and member.raw_value != member.value else "")
                    + (" · hub of the group" if member is hub else ""),
                }
            )
    edges = []
    for a, b, entity in graph.edges:
        if a not in positions or b not in positions:
            continue
        (x1, y1), (x2, y2) = positions[a], positions[b]
        edges.append(
            {"x1": f"{x1:.1f}", "y1": f"{y1:.1f}", "x2": f"{x2:.1f}", "y2": f"{y2:.1f}", "title": f"share {entity}"}
        )
    return {
        "width": width,
        "height": height,
        "nodes": nodes,
        "edges": edges,
        "labels": labels,
        "centre": {"x": f"{cx:.1f}", "y": f"{cy + 26:.1f}", "text": subject},
        "hidden": hidden,
    }


# --- one item: the claim conflict view ----------------------------------------------------------


def _two(x: float | None) -> str:
    return "?" if x is None else f"{x:.2f}"


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _url_maker(name: str) -> Any:
    """pk -> the URL named ``name`` for that pk, reversing once (900 reverse() calls cost ~15 ms)."""
    probe = 987_654_321
    head, _, tail = reverse(name, args=[probe]).partition(str(probe))
    return lambda pk: f"{head}{pk}{tail}"


_CONFLICT_COLUMNS = (
    "id",
    "source_id",
    "source__name",
    "source__reliability",
    "source__reliability_answers",
    "value",
    "raw_value",
    "normalizer",
    "method",
    "provenance",
    "document_id",
    "document__title",
    "document__url",
    "updated_at",
)


def conflict_view(subject: str, attribute: str, run: EstimationRun | None = None) -> dict[str, Any] | None:
    """One (subject, attribute): every distinct value with its raw spellings and the sources
    asserting it, every claim's node confidence (consistency + authority, kept or pruned at
    NODE_THRESHOLD) and provenance, the group's graph-level confidence against GRAPH_THRESHOLD,
    and the run's resolved value (the latest claims run by default). None when nothing is
    known of the item. Two queries: the claims with their source's name and reliability (the
    needed columns only), and the resolution with its run."""
    rows = item_rows(subject, attribute)
    resolution = next(iter(_resolution_of(subject, attribute, run)), None)
    if not rows and resolution is None:
        return None
    group = _score(_records(rows, subject, attribute), rows) if rows else None
    node_of = {n.claim_id: n for n in group.nodes} if group else {}
    resolved_value = resolution["value"] if resolution else None
    shares = {v.get("value"): v.get("share") for v in (resolution["values"] if resolution else [])}

    claims = []
    by_value: dict[str, list[dict[str, Any]]] = defaultdict(list)
    source_url = _url_maker("source-detail")
    for row in rows:
        node = node_of[row["id"]]
        claim = {
            "id": row["id"],
            "source_id": row["source_id"],
            "source_name": row["source__name"],
            "source_url": source_url(row["source_id"]),
            "reliability": row["source__reliability"],
            "value": row["value"],
            "raw_value": row["raw_value"],
            "raw_differs": bool(row["raw_value"]) and row["raw_value"] != row["value"],
            "method": row["method"],
            "provenance": provenance_label(row["provenance"]),
            "document": _document_link(row),
            "updated_at": row["updated_at"],
            "consistency": node.consistency,
            "authority": node.authority,
            "historical_authority": node.historical_authority,
            "llm_authority": node.llm_authority,
            "confidence": node.confidence,
            "kept": node.kept,
            "resolved": row["value"] == resolved_value,
            # Numbers as the page prints them: formatting 900 rows with the floatformat filter
            # would take most of the page's 200 ms budget.
            "text": {
                "reliability": _two(row["source__reliability"]),
                "consistency": _two(node.consistency),
                "authority": _two(node.authority),
                "confidence": _two(node.confidence),
                "value": _short(row["value"], 120),
                "raw_value": _short(row["raw_value"], 60),
            },
        }
        claims.append(claim)
        by_value[row["value"]].append(claim)

    answer, answer_share = multirag_answer(group, rows) if group else (None, None)
    values = []
    for value, members in by_value.items():
        members.sort(key=lambda c: (-(c["reliability"] if c["reliability"] is not None else -1.0), c["source_name"]))
        raw = Counter(c["raw_value"] or c["value"] for c in members)
        values.append(
            {
                "value": value,
                "raw_forms": [{"text": text, "count": n} for text, n in raw.most_common(RAW_FORMS)],
                "more_raw_forms": max(0, len(raw) - RAW_FORMS),
                "claims": len(members),
                "sources": members[:VALUE_SOURCES_LISTED],
                "more_sources": max(0, len(members) - VALUE_SOURCES_LISTED),
                "share": shares.get(value),
                "claim_share": len(members) / len(rows),
                "confidence": sum(c["confidence"] for c in members),
                "mean_confidence": sum(c["confidence"] for c in members) / len(members),
                "kept": sum(1 for c in members if c["kept"]),
                "resolved": value == resolved_value,
                "answer": value == answer,
            }
        )
    # The resolved value first, then by the confidence behind each value.
    values.sort(key=lambda v: (not v["resolved"], -v["confidence"], v["value"]))
    for value in shares:
        if value is not None and value not in by_value:  # claimed at run time, since withdrawn
            values.append(
                {
                    "value": value,
                    "raw_forms": [],
                    "more_raw_forms": 0,
                    "claims": 0,
                    "sources": [],
                    "more_sources": 0,
                    "share": shares[value],
                    "claim_share": 0.0,
                    "confidence": 0.0,
                    "mean_confidence": None,
                    "kept": 0,
                    "resolved": value == resolved_value,
                    "answer": False,
                }
            )
    claims.sort(key=lambda c: (not c["resolved"], -c["confidence"], c["source_name"]))
    return {
        "subject": subject,
        "attribute": attribute,
        "claims": claims,
        "values": values,
        "sources": len({c["source_id"] for c in claims}),
        "kept": sum(1 for c in claims if c["kept"]),
        "pruned": sum(1 for c in claims if not c["kept"]),
        "group": (
            {
                "confidence": group.confidence,
                "entropy_agreement": group.entropy_agreement,
                "kept": group.kept,
                "isolated": group.isolated,
                "llm_used": group.llm_used,
                "answer": answer,
                "answer_share": answer_share,
            }
            if group
            else None
        ),
        "resolution": resolution,
        "node_threshold": NODE_THRESHOLD,
        "graph_threshold": GRAPH_THRESHOLD,
        "alpha": ALPHA,
        "graph": value_graph(values) if values and claims else None,
        "subject_url": subject_url(subject),
    }


CONFLICT_CACHE_SECONDS = 3600


def _conflict_version(subject: str, attribute: str, run: EstimationRun | None) -> str:
    """What a conflict view depends on, in two aggregate queries: the item's claims (count,
    last change), the sources (last edit, last reliability update: weights and names) and the
    run whose resolution it shows. Any change makes a new cache key."""
    claims = Claim.objects.filter(subject=subject, attribute=attribute).aggregate(n=Count("id"), last=Max("updated_at"))
    sources = Source.objects.aggregate(edited=Max("updated_at"), rated=Max("reliability_updated_at"))
    run_id = run.pk if run is not None else next(iter(claims_runs().values_list("id", flat=True)[:1]), None)
    parts = [claims["n"], claims["last"], sources["edited"], sources["rated"], run_id, subject, attribute]
    return hashlib.sha256(repr(parts).encode("utf-8")).hexdigest()


def cached_conflict_view(subject: str, attribute: str, run: EstimationRun | None = None) -> dict[str, Any] | None:
    """conflict_view, kept in the cache (the shared database or Redis cache) under a key that
    changes whenever the claims, the sources or the run change: a page view does not rebuild
    the group's confidences and graph while nothing they rest on has changed."""
    key = f"claims:conflict:{_conflict_version(subject, attribute, run)}"
    view = cache.get(key)
    if view is None:
        view = conflict_view(subject, attribute, run)
        cache.set(key, view, CONFLICT_CACHE_SECONDS)
    return view


def value_graph(values: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The item's values as large nodes (size: summed node confidence, blue: resolved), each
    with its most reliable sources around it (drawn by the engine's cluster graph), at most
    VALUE_GRAPH_SOURCES per value and eight values."""
    shown = [v for v in values if v["claims"]][:8]
    clusters = {
        "clusters": [
            {
                "id": i,
                "label": v["value"],
                "weight": v["confidence"],
                "chosen": v["resolved"],
                "sources": [
                    {
                        "source_id": c["source_id"],
                        "source_name": c["source_name"],
                        "response": c["raw_value"] or c["value"],
                        "weight": c["confidence"],
                        "reliability": c["reliability"],
                        "filtered": False,
                    }
                    for c in v["sources"][:VALUE_GRAPH_SOURCES]
                ],
            }
            for i, v in enumerate(shown)
        ],
        "abstained": [],
    }
    graph = cluster_graph(clusters, width=900, height=340)
    # The engine's titles speak of answers and votes; say what they are here.
    members = [m for c in clusters["clusters"] for m in c["sources"]]
    for drawn, member in zip(graph["sources"], members, strict=True):
        drawn["title"] = (
            f"{member['source_name']} said “{member['response']}”: node confidence {member['weight']:.2f}"
            + (" (pruned)" if member["weight"] < NODE_THRESHOLD else "")
        )
    for drawn, v in zip(graph["clusters"], shown, strict=True):
        drawn["title"] = f"{v['value']}: {v['claims']} claim(s), summed node confidence {v['confidence']:.2f}"
    graph["more"] = sum(max(0, v["claims"] - VALUE_GRAPH_SOURCES) for v in shown)
    return graph


# --- the conflicts page's claims mode -----------------------------------------------------------


def contested_items(run: EstimationRun) -> QuerySet[Any]:
    """The run's conflicting items, most contested (lowest confidence) first: lazy, for the pager."""
    return (
        ClaimResolution.objects.filter(run=run, conflicting=True)
        .order_by("confidence", "subject", "attribute")
        .values("subject", "attribute", "value", "confidence", "claims", "values")
    )


def describe_contested(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One page of contested items with their links and the runner-up value."""
    out = []
    for row in rows:
        values = row["values"] or []
        runner = values[1] if len(values) > 1 else None
        out.append(
            {
                **row,
                "value_count": len(values),
                "sources": sum(len(v.get("sources") or []) for v in values),
                "resolved_sources": len(values[0].get("sources") or []) if values else 0,
                "runner_up": runner.get("value") if runner else None,
                "runner_up_sources": len(runner.get("sources") or []) if runner else 0,
                "url": conflict_url(row["subject"], row["attribute"]),
                "subject_url": subject_url(row["subject"]),
            }
        )
    return out


def claim_copy_groups(
    run: EstimationRun, *, pairs_per_group: int = 5, examples_per_pair: int = 3
) -> list[dict[str, Any]]:
    """The run's copier pairs and blocs (insights.dependence_groups: dependent at >= 0.5), each
    cut to its most likely pairs, whose shared false values link to their conflict views. One query."""
    groups = dependence_groups(run)
    for group in groups:
        pairs = sorted(group["pairs"], key=lambda p: (-p["probability"], -p["same_false"]))
        group["more_pairs"] = max(0, len(pairs) - pairs_per_group)
        group["pairs"] = [
            {
                **p,
                "examples": [
                    {**e, "url": conflict_url(e["subject"], e["attribute"])}
                    for e in p["examples"][:examples_per_pair]
                    if e.get("subject") is not None and e.get("attribute") is not None
                ],
            }
            for p in pairs[:pairs_per_group]
        ]
    return groups


def claim_source_pairs(run: EstimationRun, *, top: int = GRAPH_SOURCES) -> dict[str, Any]:
    """For every pair among the ``top`` sources with the most claims in the run: on how many
    items both claimed a value (shared), on how many their values differed, and the rate: the
    same rows as insights.pairwise_disagreement, so the engine's conflict graph draws them.

    Read from the run's resolutions (each lists every value with the sources behind it), so
    the graph describes the run, not claims loaded since. Vectorised: with the items' values
    one-hot over the chosen sources (X, value rows x sources) and the items' presence (P),
    shared = P^T P and agreements = X^T X. Two queries (resolutions, the sources' names)."""
    item_values = list(
        ClaimResolution.objects.filter(run=run).order_by("id").values_list("values", flat=True)[:RESOLUTION_SCAN]
    )
    counts: Counter[int] = Counter()
    for values in item_values:
        for v in values or []:
            counts.update(v.get("sources") or [])
    chosen = [sid for sid, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]]
    if len(chosen) < 2:
        return {"pairs": [], "sources": [], "total_sources": len(counts), "items": len(item_values)}
    column = {sid: j for j, sid in enumerate(chosen)}
    value_rows: list[list[int]] = []
    item_rows: list[list[int]] = []
    for values in item_values:
        present: list[int] = []
        for v in values or []:
            cols = [column[s] for s in v.get("sources") or [] if s in column]
            if cols:
                value_rows.append(cols)
                present.extend(cols)
        if len(present) >= 2:
            item_rows.append(present)
    x = _incidence(value_rows, len(chosen))
    p = _incidence(item_rows, len(chosen))
    shared = p.T @ p
    agree = x.T @ x
    info = {
        s["id"]: s for s in Source.objects.filter(pk__in=chosen).values("id", "name", "reliability", "reliability_low")
    }
    pairs = []
    a_idx, b_idx = np.nonzero(np.triu(shared, k=1))
    for a, b in zip(a_idx.tolist(), b_idx.tolist(), strict=True):
        sa, sb = chosen[a], chosen[b]
        if sa > sb:
            sa, sb = sb, sa
        n = int(shared[a, b])
        differ = n - int(agree[a, b])
        pairs.append(
            {
                "run_id": run.pk,
                "source_a": sa,
                "source_a_name": info.get(sa, {}).get("name", str(sa)),
                "source_b": sb,
                "source_b_name": info.get(sb, {}).get("name", str(sb)),
                "shared": n,
                "disagreements": differ,
                "rate": differ / n,
            }
        )
    pairs.sort(key=lambda p: (p["source_a"], p["source_b"]))
    sources = [
        {"id": sid, "name": info[sid]["name"], "reliability": info[sid]["reliability"], "claims": counts[sid]}
        for sid in chosen
        if sid in info
    ]
    return {"pairs": pairs, "sources": sources, "total_sources": len(counts), "items": len(item_values)}


def _incidence(rows: Sequence[Sequence[int]], width: int) -> np.ndarray:
    """A 0/1 matrix with one row per list of column indices (float32: exact for counts < 2^24)."""
    matrix = np.zeros((len(rows), width), dtype=np.float32)
    for i, cols in enumerate(rows):
        matrix[i, cols] = 1.0
    return matrix
