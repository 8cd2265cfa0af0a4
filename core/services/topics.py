"""Reliability per topic in the product: the latest run's topics, a source's numbers by topic,
and a curator's renames and merges (core.engine.topics, core.engine.reliability.topical)."""

from __future__ import annotations

from dataclasses import replace
from typing import TypedDict

from django.db import transaction

from core.engine.topics import Topic, TopicModel
from core.engine.types import JSONObject, JSONValue
from core.models import EstimationRun


def latest_topic_run() -> EstimationRun | None:
    """The latest finished estimation run, full or an online update of one (its topics are the
    current ones; empty when it found one topic)."""
    return (
        EstimationRun.objects.filter(
            state=EstimationRun.State.SUCCEEDED, kind__in=[EstimationRun.Kind.FULL, EstimationRun.Kind.UPDATE]
        )
        .order_by("-finished_at", "-id")
        .first()
    )


def run_topics(run: EstimationRun | None) -> TopicModel | None:
    """``run``'s topics, None when it found no split (or there is no run)."""
    if run is None or not run.topics.get("model"):
        return None
    return TopicModel.from_dict(run.topics["model"])


def latest_topics() -> TopicModel | None:
    """The current topics, None when the latest run found no split."""
    return run_topics(latest_topic_run())


class TopicCell(TypedDict):
    """A source's reliability on one topic, as EstimationRun.topics["cells"] stores it."""

    key: str
    accuracy: float
    low: float
    high: float
    answers: float


class NamedTopicCell(TopicCell):
    """A cell with its topic's name, and whether the topic is still unsettled."""

    name: str
    unsettled: bool


class TopicSpread(TypedDict):
    """How far one source's reliability differs between topics (the run page)."""

    source_id: int
    source: str
    spread: float
    best: NamedTopicCell
    worst: NamedTopicCell


def _number(cell: JSONObject, name: str) -> float:
    value = cell.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"topic cell {name}: expected a number, got {value!r}")
    return value


def topic_cell(value: JSONValue) -> TopicCell:
    """One stored cell; ValueError when it is not {key, accuracy, low, high, answers}."""
    if not isinstance(value, dict) or not isinstance(value.get("key"), str):
        raise ValueError(f"topic cell: expected an object with a key, got {value!r}"[:200])
    return {
        "key": str(value["key"]),
        "accuracy": _number(value, "accuracy"),
        "low": _number(value, "low"),
        "high": _number(value, "high"),
        "answers": _number(value, "answers"),
    }


def stored_cells(topics: JSONObject) -> dict[str, list[TopicCell]]:
    """EstimationRun.topics["cells"] decoded: per source id (a string, as JSON keys are), its
    cells in topic order; {} without topics."""
    cells = topics.get("cells")
    if not isinstance(cells, dict):
        return {}
    return {sid: [topic_cell(c) for c in row] if isinstance(row, list) else [] for sid, row in cells.items()}


def _topic_names(topics: JSONObject) -> list[tuple[str, str]]:
    """(key, name) of the stored TopicModel's topics, in order."""
    model = topics.get("model")
    listed = model.get("topics") if isinstance(model, dict) else None
    return [
        (str(t["key"]), str(t["name"]))
        for t in (listed if isinstance(listed, list) else [])
        if isinstance(t, dict) and "key" in t and "name" in t
    ]


def topic_choices(run: EstimationRun | None) -> list[tuple[str, str]]:
    """(key, name) of ``run``'s topics, in order; empty without topics."""
    if run is None or not run.topics.get("model"):
        return []
    return _topic_names(run.topics)


def topic_cells(run: EstimationRun | None, source_id: int) -> list[NamedTopicCell]:
    """One source's per-topic reliabilities in ``run`` (in topic order), each with its name."""
    if run is None or not run.topics.get("cells"):
        return []
    names = dict(_topic_names(run.topics))
    listed = run.topics.get("unsettled")
    unsettled = {k for k in listed if isinstance(k, str)} if isinstance(listed, list) else set()
    return [
        {**cell, "name": names.get(cell["key"], cell["key"]), "unsettled": cell["key"] in unsettled}
        for cell in stored_cells(run.topics).get(str(source_id), [])
    ]


def topic_accuracies(run: EstimationRun | None) -> dict[int, tuple[float, ...]]:
    """Per source id, its accuracy on each topic of ``run`` (TopicModel order)."""
    if run is None or not run.topics.get("cells"):
        return {}
    return {int(sid): tuple(float(c["accuracy"]) for c in cells) for sid, cells in stored_cells(run.topics).items()}


def stored_copy_groups(run: EstimationRun | None) -> dict[str, tuple[frozenset[int], ...]]:
    """Per topic key of ``run``, the copy groups found on that topic's queries (source ids),
    for the topics whose verdict was settled; {} for a run stored before they were (those
    count the overall groups once on every topic)."""
    listed = run.topics.get("copy_groups") if run is not None else None
    if not isinstance(listed, dict):
        return {}
    return {
        str(key): tuple(frozenset(int(s) for s in g if isinstance(s, int)) for g in groups if isinstance(g, list))
        for key, groups in listed.items()
        if isinstance(groups, list)
    }


def widest_spreads(run: EstimationRun, names: dict[int, str], limit: int = 5) -> list[TopicSpread]:
    """The sources whose reliability differs most between topics in ``run``, largest first."""
    out: list[TopicSpread] = []
    for sid in stored_cells(run.topics):
        cells = topic_cells(run, int(sid))  # each with its topic's name
        if len(cells) < 2:
            continue
        low = min(cells, key=lambda c: c["accuracy"])
        high = max(cells, key=lambda c: c["accuracy"])
        out.append(
            {
                "source_id": int(sid),
                "source": names.get(int(sid), sid),
                "spread": round(high["accuracy"] - low["accuracy"], 4),
                "best": high,
                "worst": low,
            }
        )
    return sorted(out, key=lambda r: -r["spread"])[:limit]


class TopicEditError(ValueError):
    """A rename or merge that cannot be done (the message says why)."""


def rename_topic(run: EstimationRun, key: str, name: str) -> None:
    """Give ``key`` a curator's name; later runs keep it (core.engine.topics.match_topics)."""
    name = name.strip()
    if not name or len(name) > 80:
        raise TopicEditError("A topic's name is 1 to 80 characters.")
    with transaction.atomic():
        locked = EstimationRun.objects.select_for_update().get(pk=run.pk)
        model = locked.topics.get("model", {})
        topics = model.get("topics", [])
        if not any(t["key"] == key for t in topics):
            raise TopicEditError(f"Run #{run.pk} has no topic {key!r}.")
        for t in topics:
            if t["key"] == key:
                t["name"] = name
        locked.save(update_fields=["topics"])


def merge_topics(run: EstimationRun, keep: str, into_it: str) -> None:
    """Merge topic ``into_it`` into ``keep``: one topic with both topics' prototypes, each
    source's numbers the answer-weighted mean of the two."""
    if keep == into_it:
        raise TopicEditError("A topic cannot be merged into itself.")
    with transaction.atomic():
        locked = EstimationRun.objects.select_for_update().get(pk=run.pk)
        model = TopicModel.from_dict(locked.topics.get("model", {}))
        by_key = {t.key: t for t in model.topics}
        if keep not in by_key or into_it not in by_key:
            raise TopicEditError(f"Run #{run.pk} has no topics {keep!r} and {into_it!r} to merge.")
        a, b = by_key[keep], by_key[into_it]
        size = a.size + b.size
        centroid = tuple((a.size * x + b.size * y) / max(size, 1) for x, y in zip(a.centroid, b.centroid, strict=True))
        lexical = (
            tuple((a.size * x + b.size * y) / max(size, 1) for x, y in zip(a.lexical, b.lexical, strict=True))
            if len(a.lexical) == len(b.lexical)
            else ()
        )
        merged = Topic(a.key, a.name, centroid, size, a.points() + b.points(), lexical)
        topics = [merged if t.key == keep else t for t in model.topics if t.key != into_it]
        locked.topics["model"] = replace(model, topics=topics).as_dict()
        for sid, cells in locked.topics.get("cells", {}).items():
            first = next(c for c in cells if c["key"] == keep)
            second = next(c for c in cells if c["key"] == into_it)
            n = first["answers"] + second["answers"]
            mean = (
                (first["accuracy"] * first["answers"] + second["accuracy"] * second["answers"]) / n
                if n
                else first["accuracy"]
            )
            first.update(
                accuracy=round(mean, 4),
                answers=round(n, 2),
                low=min(first["low"], second["low"]),
                high=max(first["high"], second["high"]),
            )
            locked.topics["cells"][sid] = [c for c in cells if c["key"] != into_it]
        locked.topics["unsettled"] = [k for k in locked.topics.get("unsettled", []) if k != into_it]
        # The merged topic's copy groups were found on half its queries: the overall ones
        # count on it instead.
        groups = locked.topics.get("copy_groups")
        if isinstance(groups, dict):
            locked.topics["copy_groups"] = {k: v for k, v in groups.items() if k not in (keep, into_it)}
        locked.save(update_fields=["topics"])
