"""JSON form of the typed parts of a strategy result (evidence, graph, trace), checked on
the way in and out, so what the database stores and the API shows has one schema."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from core.engine.strategies.base import AnswerGraph, Evidence, GraphEdge, GraphNode


class ResultSchemaError(ValueError):
    """Stored or received JSON does not have the shape of a strategy result part."""


def _number(
    value: Any, where: str, *, optional: bool = False, low: float | None = None, high: float | None = None
) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(float(value)):
        raise ResultSchemaError(f"{where} must be a finite number")
    if (low is not None and value < low) or (high is not None and value > high):
        raise ResultSchemaError(f"{where} must lie in [{low}, {high}]")


def _integer(value: Any, where: str, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise ResultSchemaError(f"{where} must be a whole number")


def _text(value: Any, where: str) -> None:
    if not isinstance(value, str):
        raise ResultSchemaError(f"{where} must be text")


def _keys(item: Any, where: str, required: set[str], optional: set[str]) -> Mapping[str, Any]:
    if not isinstance(item, Mapping):
        raise ResultSchemaError(f"{where} must be an object")
    missing = required - set(item)
    extra = set(item) - required - optional
    if missing or extra:
        raise ResultSchemaError(f"{where}: missing {sorted(missing)}, unexpected {sorted(extra)}")
    return item


EVIDENCE_KEYS = {"chunk_id", "source_id", "document_id", "distance", "used", "credibility"}
EVIDENCE_OPTIONAL_KEYS = {"claim_id"}  # absent in JSON stored before claims (and for chunk evidence)


def _evidence_json(e: Evidence) -> dict[str, Any]:
    item = asdict(e)
    if item["claim_id"] is None:
        del item["claim_id"]  # chunk evidence keeps the JSON shape it always had
    return item


def evidence_to_json(evidence: Sequence[Evidence]) -> list[dict[str, Any]]:
    out = [_evidence_json(e) for e in evidence]
    validate_evidence(out)
    return out


def validate_evidence(value: Any) -> None:
    if not isinstance(value, list):
        raise ResultSchemaError("evidence must be a list")
    for i, item in enumerate(value):
        where = f"evidence[{i}]"
        item = _keys(item, where, EVIDENCE_KEYS, EVIDENCE_OPTIONAL_KEYS)
        _integer(item["chunk_id"], f"{where}.chunk_id")
        _integer(item["source_id"], f"{where}.source_id")
        _integer(item["document_id"], f"{where}.document_id", optional=True)
        _number(item["distance"], f"{where}.distance")
        if not isinstance(item["used"], bool):
            raise ResultSchemaError(f"{where}.used must be true or false")
        _number(item["credibility"], f"{where}.credibility", optional=True, low=0.0, high=1.0)
        _integer(item.get("claim_id"), f"{where}.claim_id", optional=True)


def evidence_from_json(value: Any) -> list[Evidence]:
    validate_evidence(value)
    return [Evidence(**item) for item in value]


def graph_to_json(graph: AnswerGraph | None) -> dict[str, Any] | None:
    if graph is None:
        return None
    out = {
        "nodes": [asdict(n) for n in graph.nodes],
        "edges": [asdict(e) for e in graph.edges],
        "confidence": graph.confidence,
    }
    validate_graph(out)
    return out


def validate_graph(value: Any) -> None:
    if value is None:
        return
    value = _keys(value, "graph", {"nodes", "edges", "confidence"}, set())
    _number(value["confidence"], "graph.confidence", optional=True, low=0.0, high=1.0)
    if not isinstance(value["nodes"], list) or not isinstance(value["edges"], list):
        raise ResultSchemaError("graph.nodes and graph.edges must be lists")
    ids = set()
    for i, node in enumerate(value["nodes"]):
        where = f"graph.nodes[{i}]"
        node = _keys(node, where, {"id", "kind", "label", "source_id", "confidence"}, set())
        for key in ("id", "kind", "label"):
            _text(node[key], f"{where}.{key}")
        _integer(node["source_id"], f"{where}.source_id", optional=True)
        _number(node["confidence"], f"{where}.confidence", optional=True, low=0.0, high=1.0)
        ids.add(node["id"])
    for i, edge in enumerate(value["edges"]):
        where = f"graph.edges[{i}]"
        edge = _keys(edge, where, {"a", "b", "kind", "weight"}, set())
        for key in ("a", "b", "kind"):
            _text(edge[key], f"{where}.{key}")
        if edge["a"] not in ids or edge["b"] not in ids:
            raise ResultSchemaError(f"{where} joins a node that is not in the graph")
        _number(edge["weight"], f"{where}.weight")


def graph_from_json(value: Any) -> AnswerGraph | None:
    validate_graph(value)
    if value is None:
        return None
    return AnswerGraph(
        nodes=tuple(GraphNode(**n) for n in value["nodes"]),
        edges=tuple(GraphEdge(**e) for e in value["edges"]),
        confidence=value["confidence"],
    )


def jsonable(value: Any) -> Any:
    """Plain JSON values for a trace (tuples and sets become lists, other objects text)."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)
