"""One item's conflict view: every value claimed for a (subject, attribute) with its raw
spellings and the sources asserting it, every claim's MultiRAG node confidence and
provenance, the group's confidence and the claims run's resolved value. The view links it,
draws its value graph (``core.views.claim_charts.value_graph``) and caches the page under
``conflict_version``."""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from typing import Any

from django.db.models import Count, Max

from core.engine.claims.multirag import GRAPH_THRESHOLD, NODE_THRESHOLD
from core.models import EstimationRun
from core.services.pages.claim_scoring import (
    ALPHA,
    claim_records,
    item_rows,
    multirag_answer,
    resolutions_of,
    score_claims,
    shown_values,
)
from core.services.pages.claims_browser import document_link, provenance_label
from core.services.pages.run_sets import claims_runs
from sources.models import Claim, Source

VALUE_SOURCES_LISTED = 40  # sources named per value in the values table (the claims table has them all)
RAW_FORMS = 5  # raw spellings shown per value


def _two(x: float | None) -> str:
    return "?" if x is None else f"{x:.2f}"


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def conflict_view(subject: str, attribute: str, run: EstimationRun | None = None) -> dict[str, Any] | None:
    """One (subject, attribute): every distinct value with its raw spellings and the sources
    asserting it, every claim's node confidence (consistency + authority, kept or pruned at
    NODE_THRESHOLD) and provenance, the group's graph-level confidence against GRAPH_THRESHOLD,
    and the run's resolved value (the latest claims run by default). None when nothing is
    known of the item. Two queries: the claims with their source's name and reliability (the
    needed columns only), and the resolution with its run."""
    rows = item_rows(subject, attribute)
    resolution = next(iter(resolutions_of(subject, attribute, run)), None)
    if not rows and resolution is None:
        return None
    group = score_claims(claim_records(rows, subject, attribute), rows) if rows else None
    node_of = {n.claim_id: n for n in group.nodes} if group else {}
    resolved_value = resolution["value"] if resolution else None
    shares = {v.get("value"): v.get("share") for v in (resolution["values"] if resolution else [])}
    # Values within the tolerance the mapping declares are one value (shown as the run does).
    shown = shown_values(rows, resolved_value, resolution["values"] if resolution else None)

    claims = []
    by_value: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        node = node_of[row["id"]]
        claim = {
            "id": row["id"],
            "source_id": row["source_id"],
            "source_name": row["source__name"],
            "reliability": row["source__reliability"],
            "value": row["value"],
            "raw_value": row["raw_value"],
            "raw_differs": bool(row["raw_value"]) and row["raw_value"] != row["value"],
            "method": row["method"],
            "provenance": provenance_label(row["provenance"]),
            "document": document_link(row),
            "updated_at": row["updated_at"],
            "consistency": node.consistency,
            "authority": node.authority,
            "historical_authority": node.historical_authority,
            "llm_authority": node.llm_authority,
            "confidence": node.confidence,
            "kept": node.kept,
            "resolved": shown[row["value"]] == resolved_value,
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
        by_value[shown[row["value"]]].append(claim)

    answer, answer_share = multirag_answer(group, rows) if group else (None, None)
    answer = shown.get(answer, answer) if answer is not None else None
    values = []
    for value, members in by_value.items():
        members.sort(key=lambda c: (-(c["reliability"] if c["reliability"] is not None else -1.0), c["source_name"]))
        raw = Counter(c["raw_value"] or c["value"] for c in members)
        spellings = Counter(c["value"] for c in members)
        values.append(
            {
                "value": value,
                # the values within the tolerance of this one (it first), when there are several
                "spellings": sorted(spellings, key=lambda v: (v != value, -spellings[v], v))
                if len(spellings) > 1
                else [],
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
                    "spellings": [],
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
    }


def conflict_version(subject: str, attribute: str, run: EstimationRun | None) -> str:
    """What a conflict view depends on, in two aggregate queries: the item's claims (count,
    last change), the sources (last edit, last reliability update: weights and names) and the
    run whose resolution it shows. Each change makes a new cache key."""
    claims = Claim.objects.filter(subject=subject, attribute=attribute).aggregate(n=Count("id"), last=Max("updated_at"))
    sources = Source.objects.aggregate(edited=Max("updated_at"), rated=Max("reliability_updated_at"))
    run_id = run.pk if run is not None else next(iter(claims_runs().values_list("id", flat=True)[:1]), None)
    parts = [claims["n"], claims["last"], sources["edited"], sources["rated"], run_id, subject, attribute]
    return hashlib.sha256(repr(parts).encode("utf-8")).hexdigest()
