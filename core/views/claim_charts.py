"""How the claims pages link and draw: the URLs of a subject's page and an item's conflict
view, the links the claims pages' rows carry, and SVG geometry with its colours: a subject's
line graph and an item's value graph (the data comes from ``core.services.pages``)."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from django.urls import reverse
from django.utils.http import urlencode

from core.engine.claims.multirag import NODE_THRESHOLD, line_graph
from core.engine.claims.types import ClaimRecord
from core.engine.graphs.conflict import cluster_graph
from core.engine.graphs.palette import rate_colour
from core.services.pages.claim_scoring import claim_records

SUBJECT_GRAPH_PER_GROUP = 30  # claims drawn per attribute in a subject's line graph
SUBJECT_GRAPH_EDGES = 400
VALUE_GRAPH_SOURCES = 16  # sources drawn around each value in the conflict view's graph


# --- links -----------------------------------------------------------------------------------


def subject_url(subject: str) -> str:
    return f"{reverse('claim-subject')}?{urlencode({'subject': subject})}"


def conflict_url(subject: str, attribute: str) -> str:
    return f"{reverse('claim-conflict')}?{urlencode({'subject': subject, 'attribute': attribute})}"


def url_maker(name: str) -> Callable[[int], str]:
    """pk -> the URL named ``name`` for that pk, reversing once (900 reverse() calls cost ~15 ms)."""
    probe = 987_654_321
    head, _, tail = reverse(name, args=[probe]).partition(str(probe))
    return lambda pk: f"{head}{pk}{tail}"


def link_browser_rows(rows: Iterable[dict[str, Any]]) -> None:
    """Give the claims browser's rows the links to their subject and their item's conflict view."""
    for row in rows:
        row["subject_url"] = subject_url(row["subject"])
        row["conflict_url"] = conflict_url(row["subject"], row["attribute"])


def link_contested(items: Iterable[dict[str, Any]]) -> None:
    """Give contested items the links to their conflict view (``url``) and their subject."""
    for item in items:
        item["url"] = conflict_url(item["subject"], item["attribute"])
        item["subject_url"] = subject_url(item["subject"])


def link_copy_examples(groups: Iterable[Mapping[str, Any]]) -> None:
    """Link each shared false value of the copier pairs to its item's conflict view."""
    for group in groups:
        for pair in group["pairs"]:
            pair["examples"] = [{**e, "url": conflict_url(e["subject"], e["attribute"])} for e in pair["examples"]]


# --- graphs ----------------------------------------------------------------------------------


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
    for claimed in by_attribute.values():
        best = sorted(claimed, key=lambda r: (-(r["source__reliability"] or 0.0), r["source__name"]))
        kept = best[:SUBJECT_GRAPH_PER_GROUP]
        hidden += len(claimed) - len(kept)
        counts = Counter(r["value"] for r in kept)
        drawn.extend(sorted(kept, key=lambda r: (-counts[r["value"]], r["value"], r["source__name"])))
    records = claim_records(drawn, subject)
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
