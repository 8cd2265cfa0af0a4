"""Graphs drawn as static SVG: the source conflict graph (edges weighted by disagreement
rate, laid out by MDS so colluding blocs stand apart) and one question's answer clusters
with the sources attached to each."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from core.engine.graphs.blocs import BLOC_RATE, blocs
from core.engine.graphs.layout import mds_layout
from core.engine.graphs.palette import rate_colour, reliability_colour

WIDTH, HEIGHT, MARGIN = 900, 640, 60


def conflict_graph(
    pairs: list[dict[str, Any]], sources: Sequence[Mapping[str, Any]], *, edges: str = "auto", min_shared: int = 1
) -> dict[str, Any]:
    """Nodes (sources that answered in the run) placed so that distance ~ disagreement rate.

    edges: "all", "conflict" (rate >= 0.5), "agreement" (rate <= BLOC_RATE), or "auto"
    (all for up to 15 sources, else only the strong ones of either kind: a 50-source
    complete graph has 1,225 edges and would hide the structure it is meant to show).
    """
    pairs = [p for p in pairs if p["shared"] >= min_shared]
    info = {s["id"]: s for s in sources}
    ids = sorted(
        {p["source_a"] for p in pairs} | {p["source_b"] for p in pairs},
        key=lambda i: info.get(i, {}).get("name", str(i)),
    )
    positions = mds_layout(ids, {(p["source_a"], p["source_b"]): p["rate"] for p in pairs})
    if edges == "auto":
        edges = "all" if len(ids) <= 15 else "strong"

    # Crop the empty bands above and below a flat layout (e.g. two opposed blocs).
    ys = [y for _, y in positions.values()] or [0.5]
    y_low, y_span = min(ys), max(ys) - min(ys)
    height = int(max(260, 2 * MARGIN + y_span * (HEIGHT - 2 * MARGIN)))

    def place(sid: int) -> tuple[float, float]:
        x, y = positions[sid]
        top = (height - y_span * (HEIGHT - 2 * MARGIN)) / 2
        return MARGIN + x * (WIDTH - 2 * MARGIN), top + (y - y_low) * (HEIGHT - 2 * MARGIN)

    names = {
        sid: info.get(sid, {}).get("name")
        or next(
            (p["source_a_name"] if p["source_a"] == sid else p["source_b_name"])
            for p in pairs
            if sid in (p["source_a"], p["source_b"])
        )
        for sid in ids
    }
    drawn = []
    for p in pairs:
        rate = p["rate"]
        keep = (
            edges == "all"
            or (edges == "conflict" and rate >= 0.5)
            or (edges == "agreement" and rate <= BLOC_RATE)
            or (edges == "strong" and (rate >= 0.6 or rate <= BLOC_RATE))
        )
        if not keep:
            continue
        (x1, y1), (x2, y2) = place(p["source_a"]), place(p["source_b"])
        drawn.append(
            {
                "x1": f"{x1:.1f}",
                "y1": f"{y1:.1f}",
                "x2": f"{x2:.1f}",
                "y2": f"{y2:.1f}",
                "colour": rate_colour(rate),
                "width": f"{1 + 3 * min(p['shared'], 20) / 20:.1f}",
                "opacity": f"{0.25 + 0.6 * abs(rate - 0.5) * 2:.2f}",
                "title": f"{p['source_a_name']} – {p['source_b_name']}: disagree on {p['disagreements']} of {p['shared']} shared queries ({rate:.0%})",
            }
        )
    nodes = []
    for sid in ids:
        x, y = place(sid)
        s = info.get(sid, {})
        rel = s.get("reliability")
        nodes.append(
            {
                "id": sid,
                "name": names[sid],
                "x": f"{x:.1f}",
                "y": f"{y:.1f}",
                "label_y": f"{y - 13:.1f}",
                "colour": reliability_colour(rel),
                "reliability": rel,
                "title": f"{names[sid]}: reliability {rel:.2f}" if rel is not None else f"{names[sid]}: not estimated",
            }
        )
    return {
        "width": WIDTH,
        "height": height,
        "nodes": nodes,
        "edges": drawn,
        "mode": edges,
        "blocs": blocs(pairs, names),
    }


def cluster_graph(clusters: dict[str, Any], width: int = 720, height: int = 300) -> dict[str, Any]:
    """Answer clusters as large nodes in a row, each with its sources on a ring around it;
    abstaining sources sit apart in grey."""
    groups = [
        *clusters["clusters"],
        *(
            [{"id": None, "label": "I don't know", "weight": 0.0, "sources": clusters["abstained"], "chosen": False}]
            if clusters["abstained"]
            else []
        ),
    ]
    if not groups:
        return {"width": width, "height": height, "clusters": [], "links": [], "sources": []}
    slot = width / len(groups)
    max_weight = max((g["weight"] for g in groups), default=0.0) or 1.0
    out_clusters, links, out_sources = [], [], []
    for gi, group in enumerate(groups):
        cx, cy = slot * (gi + 0.5), height / 2
        radius = 14 + 18 * (group["weight"] / max_weight if group["id"] is not None else 0.3)
        ring = min(slot / 2 - 18, height / 2 - 24)
        if ring < radius + 30:
            ring = radius + 30
        out_clusters.append(
            {
                "x": f"{cx:.1f}",
                "y": f"{cy:.1f}",
                "r": f"{radius:.1f}",
                "label": group["label"][:28],
                "label_y": f"{cy + radius + 16:.1f}",
                "chosen": group.get("chosen", False),
                "abstain": group["id"] is None,
                "title": f"{group['label']}: summed weight {group['weight']:.2f} from {len(group['sources'])} source(s)",
            }
        )
        n = len(group["sources"])
        for si, member in enumerate(group["sources"]):
            angle = -math.pi / 2 + 2 * math.pi * si / max(n, 1)
            sx, sy = cx + ring * math.cos(angle), cy + ring * math.sin(angle)
            links.append(
                {
                    "x1": f"{cx:.1f}",
                    "y1": f"{cy:.1f}",
                    "x2": f"{sx:.1f}",
                    "y2": f"{sy:.1f}",
                    "width": f"{1 + 3 * min(member['weight'], 3) / 3:.1f}",
                }
            )
            out_sources.append(
                {
                    "x": f"{sx:.1f}",
                    "y": f"{sy:.1f}",
                    "label_y": f"{sy - 10:.1f}",
                    "name": member["source_name"],
                    "id": member["source_id"],
                    "colour": reliability_colour(member["reliability"]),
                    "title": f"{member['source_name']}: “{member['response']}”, weight {member['weight']:.2f}"
                    + (" (filtered to I don't know)" if member.get("filtered") else ""),
                }
            )
    return {"width": width, "height": height, "clusters": out_clusters, "links": links, "sources": out_sources}
