"""An answer's groups: the sources behind each answer a question received, with their
weights and shares, and the sources that said "I don't know" (the ask page, a question's
page and the API)."""

from __future__ import annotations

from typing import Any

from core.engine.text import is_idk
from core.models import Question

# Summed vote weight below which the answer groups' shares are not drawn (a source estimated
# at 0.51 carries a log-odds weight of 0.04; one never checked carries none).
MEANINGFUL_WEIGHT = 0.05


def question_clusters(question: Question) -> dict[str, Any]:
    """The question's answer clusters (best first) with the sources behind each and their
    weights, plus the sources that said "I don't know" (or were filtered to it). One query."""
    votes = list(question.votes.select_related("source").order_by("rank", "id"))
    stored = {c.get("id"): c for c in (question.clusters or [])}
    clusters: dict[int, dict[str, Any]] = {}
    abstained = []
    for vote in votes:
        member = {
            "source_id": vote.source_id,
            "source_name": vote.source.name,
            "response": vote.response,
            "weight": vote.weight,
            "reliability": vote.reliability,
            "filtered": vote.filtered,
        }
        if vote.cluster is None:
            abstained.append(member)
            continue
        info = stored.get(vote.cluster, {})
        cluster = clusters.setdefault(
            vote.cluster,
            {"id": vote.cluster, "label": info.get("label") or vote.response, "weight": 0.0, "sources": []},
        )
        cluster["sources"].append(member)
        cluster["weight"] += vote.weight
    for cid, info in stored.items():  # clusters recorded without votes (e.g. a strategy without per-source votes)
        if cid is not None and cid not in clusters:
            clusters[cid] = {
                "id": cid,
                "label": info.get("label", ""),
                "weight": float(info.get("weight") or 0.0),
                "sources": [],
            }
    for cid, cluster in clusters.items():
        if cid in stored and stored[cid].get("weight") is not None:
            cluster["weight"] = float(stored[cid]["weight"])  # the strategy's own sum is authoritative
    ordered = sorted(clusters.values(), key=lambda c: (-c["weight"], c["id"]))
    total = sum(c["weight"] for c in ordered)
    for c in ordered:
        # Shares of (almost) no weight say nothing: sources no better than chance behind every
        # answer would draw a full bar for whichever answer stood alone. None: "no weight".
        c["share"] = c["weight"] / total if total >= MEANINGFUL_WEIGHT else None
        c["chosen"] = bool(question.answer) and not is_idk(question.answer or "") and c is ordered[0]
    return {"question_id": question.pk, "answer": question.answer, "clusters": ordered, "abstained": abstained}
