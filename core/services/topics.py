"""Reliability per topic in the product: the latest run's topics, a source's numbers by topic,
and a curator's renames and merges (core.engine.topics, core.engine.reliability.topical)."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from core.engine.topics import Topic, TopicModel
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


def topic_choices(run: EstimationRun | None) -> list[tuple[str, str]]:
    """(key, name) of ``run``'s topics, in order; empty without topics."""
    if run is None or not run.topics.get("model"):
        return []
    return [(str(t["key"]), str(t["name"])) for t in run.topics["model"].get("topics", [])]


def topic_cells(run: EstimationRun | None, source_id: int) -> list[dict[str, Any]]:
    """One source's per-topic reliabilities in ``run`` (in topic order), each with its name."""
    if run is None or not run.topics.get("cells"):
        return []
    names = {t["key"]: t["name"] for t in run.topics["model"]["topics"]}
    unsettled = set(run.topics.get("unsettled", []))
    return [
        {**cell, "name": names.get(cell["key"], cell["key"]), "unsettled": cell["key"] in unsettled}
        for cell in run.topics["cells"].get(str(source_id), [])
    ]


def topic_accuracies(run: EstimationRun | None) -> dict[int, tuple[float, ...]]:
    """Per source id, its accuracy on each topic of ``run`` (TopicModel order)."""
    if run is None or not run.topics.get("cells"):
        return {}
    return {int(sid): tuple(float(c["accuracy"]) for c in cells) for sid, cells in run.topics["cells"].items()}


def widest_spreads(run: EstimationRun, names: dict[int, str], limit: int = 5) -> list[dict[str, Any]]:
    """The sources whose reliability differs most between topics in ``run``, largest first."""
    out = []
    for sid in run.topics.get("cells", {}):
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
        merged = Topic(a.key, a.name, centroid, size, a.points() + b.points())
        topics = [merged if t.key == keep else t for t in model.topics if t.key != into_it]
        locked.topics["model"] = TopicModel(topics, model.temperature, model.source).as_dict()
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
        locked.save(update_fields=["topics"])
