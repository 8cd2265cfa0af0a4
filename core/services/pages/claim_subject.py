"""One subject's page: every attribute claimed of it, with the resolved value, how many
sources and values, whether they conflict and MultiRAG's confidence (the view draws its line
graph, ``core.views.claim_charts.subject_graph``)."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from core.models import EstimationRun
from core.services.pages.claim_scoring import (
    claim_records,
    claim_source_count,
    multirag_answer,
    resolutions_of,
    score_claims,
    shown_values,
)
from sources.models import Claim

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
    "tolerance",
)


def subject_view(subject: str, run: EstimationRun | None = None) -> dict[str, Any]:
    """Every attribute claimed of ``subject``: the resolved value and confidence of the run
    (the latest claims run by default), the number of sources and values, whether they
    conflict and MultiRAG's group confidence; with the subject's claims (``rows``) and resolved
    values (``resolved_values``) its line graph is drawn from. Two queries."""
    rows = list(Claim.objects.filter(subject=subject).order_by("attribute", "source__name").values(*_SUBJECT_COLUMNS))
    n_sources = claim_source_count() if rows else 0
    resolutions = {r["attribute"]: r for r in resolutions_of(subject, None, run)}
    by_attribute: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_attribute[row["attribute"]].append(row)
    attributes = []
    for attribute in sorted(set(by_attribute) | set(resolutions)):
        members = by_attribute.get(attribute, [])
        resolution = resolutions.get(attribute)
        group = score_claims(claim_records(members, subject, attribute), members) if members else None
        # Values within the tolerance the mapping declares are one value (as the run counts them).
        shown = (
            shown_values(members, resolution["value"], resolution["values"]) if resolution else shown_values(members)
        )
        values = Counter(shown[r["value"]] for r in members)
        answer = multirag_answer(group, members, n_sources)[0] if group else None
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
                "answer": shown.get(answer, answer) if answer is not None else None,
            }
        )
    run_id = next((r["run_id"] for r in resolutions.values()), run.pk if run else None)
    return {
        "subject": subject,
        "attributes": attributes,
        "claims": len(rows),
        "sources": len({r["source_id"] for r in rows}),
        "run_id": run_id,
        "rows": rows,
        "resolved_values": {a: r["value"] for a, r in resolutions.items()},
    }
