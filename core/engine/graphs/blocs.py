"""Collusion / copying candidates: groups of sources that agree with each other and
disagree with everyone else (union-find over low-disagreement pairs)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

BLOC_RATE = 0.15  # sources this close (disagreement rate) on shared queries form a bloc


def components(nodes: Iterable[int], links: Iterable[tuple[int, int]]) -> list[set[int]]:
    """Connected components (union-find) of the graph with these nodes and links; a node
    with no link is a component of its own. Components come in first-seen order."""
    parent: dict[int, int] = {}

    def find(a: int) -> int:
        parent.setdefault(a, a)
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for node in nodes:
        find(node)
    for a, b in links:
        parent[find(a)] = find(b)
    groups: dict[int, set[int]] = defaultdict(set)
    for node in list(parent):
        groups[find(node)].add(node)
    return list(groups.values())


def blocs(pairs: list[dict[str, Any]], names: dict[int, str]) -> list[dict[str, Any]]:
    """Groups of two or more sources that agree with each other (rate <= BLOC_RATE) and,
    on average, disagree with everyone else: candidates for collusion or copying."""
    nodes = [s for p in pairs for s in (p["source_a"], p["source_b"])]
    links = [(p["source_a"], p["source_b"]) for p in pairs if p["rate"] <= BLOC_RATE and p["shared"] >= 2]
    everyone = set(nodes)
    found = []
    for members in components(nodes, links):
        if len(members) < 2 or len(members) == len(everyone):
            continue
        inside = [p["rate"] for p in pairs if p["source_a"] in members and p["source_b"] in members]
        outside = [p["rate"] for p in pairs if (p["source_a"] in members) != (p["source_b"] in members)]
        if not outside:
            continue
        internal, external = sum(inside) / len(inside), sum(outside) / len(outside)
        if external - internal >= 0.3:
            found.append(
                {"members": sorted(names.get(m, str(m)) for m in members), "internal": internal, "external": external}
            )
    found.sort(key=lambda b: b["internal"] - b["external"])
    return found
