"""JSON form of the typed parts of a strategy result (evidence, graph, trace), checked on
the way in and out, so what the database stores and the API shows has one schema."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict

from core.engine.strategies.base import AnswerGraph, Evidence, GraphEdge, GraphNode
from core.engine.types import JSONObject, JSONValue


class ResultSchemaError(ValueError):
    """Stored or received JSON does not have the shape of a strategy result part."""


def _number(
    value: object, where: str, *, optional: bool = False, low: float | None = None, high: float | None = None
) -> float | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(float(value)):
        raise ResultSchemaError(f"{where} must be a finite number")
    if (low is not None and value < low) or (high is not None and value > high):
        raise ResultSchemaError(f"{where} must lie in [{low}, {high}]")
    return value


def _required_number(value: object, where: str) -> float:
    number = _number(value, where)
    assert number is not None  # not optional: _number raised on None
    return number


def _integer(value: object, where: str, *, optional: bool = False) -> int | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ResultSchemaError(f"{where} must be a whole number")
    return value


def _required_integer(value: object, where: str) -> int:
    number = _integer(value, where)
    assert number is not None  # not optional: _integer raised on None
    return number


def _text(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise ResultSchemaError(f"{where} must be text")
    return value


def _keys(item: object, where: str, required: set[str], optional: set[str]) -> Mapping[str, object]:
    if not isinstance(item, Mapping):
        raise ResultSchemaError(f"{where} must be an object")
    missing = required - set(item)
    extra = set(item) - required - optional
    if missing or extra:
        raise ResultSchemaError(f"{where}: missing {sorted(missing)}, unexpected {sorted(extra)}")
    return item


EVIDENCE_KEYS = {"chunk_id", "source_id", "document_id", "distance", "used", "credibility"}
EVIDENCE_OPTIONAL_KEYS = {"claim_id"}  # absent in JSON stored before claims (and for chunk evidence)


def _evidence_json(e: Evidence) -> JSONObject:
    item: JSONObject = asdict(e)  # the fields are JSON scalars
    if item["claim_id"] is None:
        del item["claim_id"]  # chunk evidence keeps the JSON shape it always had
    return item


def evidence_to_json(evidence: Sequence[Evidence]) -> list[JSONObject]:
    out = [_evidence_json(e) for e in evidence]
    validate_evidence(out)
    return out


def _decode_evidence(value: object) -> list[Evidence]:
    """The evidence in ``value`` (stored or received JSON), checked item by item."""
    if not isinstance(value, list):
        raise ResultSchemaError("evidence must be a list")
    out = []
    for i, raw in enumerate(value):
        where = f"evidence[{i}]"
        item = _keys(raw, where, EVIDENCE_KEYS, EVIDENCE_OPTIONAL_KEYS)
        chunk_id = _required_integer(item["chunk_id"], f"{where}.chunk_id")
        source_id = _required_integer(item["source_id"], f"{where}.source_id")
        document_id = _integer(item["document_id"], f"{where}.document_id", optional=True)
        distance = _required_number(item["distance"], f"{where}.distance")
        used = item["used"]
        if not isinstance(used, bool):
            raise ResultSchemaError(f"{where}.used must be true or false")
        credibility = _number(item["credibility"], f"{where}.credibility", optional=True, low=0.0, high=1.0)
        claim_id = _integer(item.get("claim_id"), f"{where}.claim_id", optional=True)
        out.append(Evidence(chunk_id, source_id, document_id, distance, used, credibility, claim_id))
    return out


def validate_evidence(value: object) -> None:
    _decode_evidence(value)


def evidence_from_json(value: object) -> list[Evidence]:
    return _decode_evidence(value)


def graph_to_json(graph: AnswerGraph | None) -> JSONObject | None:
    if graph is None:
        return None
    out: JSONObject = {
        "nodes": [asdict(n) for n in graph.nodes],  # the fields are JSON scalars
        "edges": [asdict(e) for e in graph.edges],
        "confidence": graph.confidence,
    }
    validate_graph(out)
    return out


def _decode_graph(value: object) -> AnswerGraph | None:
    """The graph in ``value`` (stored or received JSON, None: no graph), checked."""
    if value is None:
        return None
    graph = _keys(value, "graph", {"nodes", "edges", "confidence"}, set())
    confidence = _number(graph["confidence"], "graph.confidence", optional=True, low=0.0, high=1.0)
    raw_nodes, raw_edges = graph["nodes"], graph["edges"]
    if not isinstance(raw_nodes, list) or not isinstance(raw_edges, list):
        raise ResultSchemaError("graph.nodes and graph.edges must be lists")
    ids = set()
    nodes = []
    for i, raw in enumerate(raw_nodes):
        where = f"graph.nodes[{i}]"
        node = _keys(raw, where, {"id", "kind", "label", "source_id", "confidence"}, set())
        node_id, kind, label = (_text(node[key], f"{where}.{key}") for key in ("id", "kind", "label"))
        source_id = _integer(node["source_id"], f"{where}.source_id", optional=True)
        node_confidence = _number(node["confidence"], f"{where}.confidence", optional=True, low=0.0, high=1.0)
        ids.add(node_id)
        nodes.append(GraphNode(node_id, kind, label, source_id, node_confidence))
    edges = []
    for i, raw in enumerate(raw_edges):
        where = f"graph.edges[{i}]"
        edge = _keys(raw, where, {"a", "b", "kind", "weight"}, set())
        a, b, kind = (_text(edge[key], f"{where}.{key}") for key in ("a", "b", "kind"))
        if a not in ids or b not in ids:
            raise ResultSchemaError(f"{where} joins a node that is not in the graph")
        weight = _required_number(edge["weight"], f"{where}.weight")
        edges.append(GraphEdge(a, b, kind, weight))
    return AnswerGraph(nodes=tuple(nodes), edges=tuple(edges), confidence=confidence)


def validate_graph(value: object) -> None:
    _decode_graph(value)


def graph_from_json(value: object) -> AnswerGraph | None:
    return _decode_graph(value)


def jsonable(value: object) -> JSONValue:
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
