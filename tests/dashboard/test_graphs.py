"""The conflict graph's layout puts a colluding bloc apart and stays readable at 50 sources."""

from __future__ import annotations

import math
from itertools import combinations
from typing import Any

from core.engine.graphs.conflict import conflict_graph


def _pairs(n: int, bloc: set[int]) -> list[dict[str, Any]]:
    pairs = []
    for a, b in combinations(range(n), 2):
        rate = 0.0 if (a in bloc) == (b in bloc) and a in bloc else (0.9 if (a in bloc) != (b in bloc) else 0.3)
        pairs.append(
            {
                "source_a": a,
                "source_b": b,
                "source_a_name": f"s{a}",
                "source_b_name": f"s{b}",
                "shared": 10,
                "disagreements": int(rate * 10),
                "rate": rate,
            }
        )
    return pairs


def _centre(nodes: list[dict[str, Any]]) -> tuple[float, float]:
    return sum(float(n["x"]) for n in nodes) / len(nodes), sum(float(n["y"]) for n in nodes) / len(nodes)


def test_a_colluding_bloc_is_found_and_laid_out_apart_with_50_sources() -> None:
    bloc = {3, 17, 29, 41}
    graph = conflict_graph(_pairs(50, bloc), [{"id": i, "name": f"s{i}", "reliability": 0.5} for i in range(50)])
    assert len(graph["nodes"]) == 50
    assert graph["mode"] == "strong" and len(graph["edges"]) < 1225  # not the complete graph
    assert graph["blocs"] and graph["blocs"][0]["members"] == sorted(f"s{i}" for i in bloc)
    inside = [n for n in graph["nodes"] if n["id"] in bloc]
    outside = [n for n in graph["nodes"] if n["id"] not in bloc]
    (bx, by), (ox, oy) = _centre(inside), _centre(outside)
    spread = max(math.dist((float(n["x"]), float(n["y"])), (bx, by)) for n in inside)
    assert math.dist((bx, by), (ox, oy)) > 2 * spread
    assert all("<" not in e["title"] for e in graph["edges"])  # titles are plain text for <title>
