"""The conflicts page: which sources disagree with which, in answers mode (the answers of a
run's sources to shared fact-checking queries) and in claims mode (the values a claims run's
sources claim for the same items, and its most contested items). The copier pairs and blocs
beside the graph come from ``core.services.pages.copying``."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations
from typing import Any, TypedDict

import numpy as np
from django.db.models import Count, QuerySet

from core.models import ClaimResolution, EstimationRun, RunResponse
from core.services.pages.copying import dependence_groups
from core.services.pages.run_sets import finished_full_runs, responses_run
from sources.models import Source


class ContestedItem(TypedDict):
    """A conflicting item of a claims run (contested_items): its resolution, as a dict."""

    subject: str
    attribute: str
    value: str
    confidence: float
    claims: int
    values: Any  # the stored JSON: [{"value", "sources", ...}, ...]


GRAPH_SOURCES = 60  # the claims conflict graph shows the sources with the most claims, at most this many
RESOLUTION_SCAN = 50_000  # items of a run read to count source pairs (Books has about 1,300)

# How two answers to one query are told apart: their cluster, or the text of an unclustered one.
AnswerKey = int | tuple[str, str]


# --- answers mode ----------------------------------------------------------------------------


def _answer_key(cluster: int | None, response: str) -> AnswerKey:
    # Clusters are per query; a response the run did not cluster falls back to its text.
    return cluster if cluster is not None else ("text", " ".join(response.lower().split()))


def pairwise_disagreement(run: EstimationRun | None = None) -> list[dict[str, Any]]:
    """For every pair of sources that both answered (non-IDK) at least one query of the run:
    how many queries they shared, on how many their answers fell in different clusters,
    and the rate. The latest finished full run by default (an update's are its full run's);
    [] when there is none. Two queries."""
    run = run or finished_full_runs().first()
    if run is None:
        return []
    answered = responses_run(run)
    answers_by_query: dict[int, dict[int, AnswerKey]] = defaultdict(dict)
    for query_id, source_id, cluster, response in RunResponse.objects.filter(run=answered, is_idk=False).values_list(
        "query_id", "source_id", "cluster", "response"
    ):
        answers_by_query[query_id][source_id] = _answer_key(cluster, response)
    shared: dict[tuple[int, int], int] = defaultdict(int)
    differ: dict[tuple[int, int], int] = defaultdict(int)
    for answers in answers_by_query.values():
        for a, b in combinations(sorted(answers), 2):
            shared[(a, b)] += 1
            if answers[a] != answers[b]:
                differ[(a, b)] += 1
    names = dict(Source.objects.filter(pk__in={s for pair in shared for s in pair}).values_list("id", "name"))
    return [
        {
            "run_id": run.pk,
            "source_a": a,
            "source_a_name": names.get(a, str(a)),
            "source_b": b,
            "source_b_name": names.get(b, str(b)),
            "shared": count,
            "disagreements": differ[(a, b)],
            "rate": differ[(a, b)] / count,
        }
        for (a, b), count in sorted(shared.items())
    ]


def default_conflict_run(runs: list[EstimationRun]) -> tuple[EstimationRun | None, list[EstimationRun]]:
    """The run the conflicts views show by default among ``runs`` (newest first): among those
    with something to show (a run in which no two sources answered a shared query has no
    conflict graph), the one that covered the most sources, the latest of them (a small run
    over three sources must not hide the full picture); else the latest. Also the newer runs
    passed over."""
    if not runs:
        return None, []
    with_pairs = runs_with_shared_answers(runs)
    candidates = [r for r in runs if r.pk in with_pairs]
    if not candidates:
        return runs[0], []
    covered = dict(
        EstimationRun.sources.through.objects.filter(estimationrun_id__in=[r.pk for r in candidates])
        .values("estimationrun_id")
        .annotate(n=Count("source_id"))
        .values_list("estimationrun_id", "n")  # type: ignore[misc]  # n: the annotate() above, unseen by the plugin
    )
    widest = max(covered.get(r.pk, 0) for r in candidates)
    run = next(r for r in candidates if covered.get(r.pk, 0) == widest)
    return run, runs[: runs.index(run)]


def runs_with_shared_answers(runs: list[EstimationRun]) -> set[int]:
    """The ids of those runs in which two sources answered (non-IDK) the same query, so a
    conflict graph has at least one pair to draw (an update's pairs are its full run's). One query."""
    answered = {run.pk: responses_run(run).pk for run in runs}
    shared = (
        RunResponse.objects.filter(run_id__in=set(answered.values()), is_idk=False)
        .values("run_id", "query_id")
        .annotate(answers=Count("source_id", distinct=True))
        .filter(answers__gte=2)
        .values_list("run_id", flat=True)
        .distinct()
    )
    found = set(shared)
    return {run_id for run_id, responses in answered.items() if responses in found}


# --- claims mode -----------------------------------------------------------------------------


def contested_items(run: EstimationRun) -> QuerySet[ClaimResolution, ContestedItem]:
    """The run's conflicting items, most contested (lowest confidence) first: lazy, for the pager."""
    return (
        ClaimResolution.objects.filter(run=run, conflicting=True)
        .order_by("confidence", "subject", "attribute")
        .values("subject", "attribute", "value", "confidence", "claims", "values")
    )


def describe_contested(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One page of contested items with the runner-up value (the view adds their links)."""
    out = []
    for row in rows:
        values = row["values"] or []
        runner = values[1] if len(values) > 1 else None
        out.append(
            {
                **row,
                "value_count": len(values),
                "sources": sum(len(v.get("sources") or []) for v in values),
                "resolved_sources": len(values[0].get("sources") or []) if values else 0,
                "runner_up": runner.get("value") if runner else None,
                "runner_up_sources": len(runner.get("sources") or []) if runner else 0,
            }
        )
    return out


def claim_copy_groups(
    run: EstimationRun, *, pairs_per_group: int = 5, examples_per_pair: int = 3
) -> list[dict[str, Any]]:
    """The run's copier pairs and blocs (copying.dependence_groups: dependent at >= 0.5), each
    cut to its most likely pairs, with the shared false values that name their item (the view
    links them to their conflict views). One query."""
    groups = dependence_groups(run)
    for group in groups:
        pairs = sorted(group["pairs"], key=lambda p: (-p["probability"], -p["same_false"]))
        group["more_pairs"] = max(0, len(pairs) - pairs_per_group)
        group["pairs"] = [
            {
                **p,
                "examples": [
                    e
                    for e in p["examples"][:examples_per_pair]
                    if e.get("subject") is not None and e.get("attribute") is not None
                ],
            }
            for p in pairs[:pairs_per_group]
        ]
    return groups


def claim_source_pairs(run: EstimationRun, *, top: int = GRAPH_SOURCES) -> dict[str, Any]:
    """For every pair among the ``top`` sources with the most claims in the run: on how many
    items both claimed a value (shared), on how many their values differed, and the rate: the
    same rows as pairwise_disagreement, so the engine's conflict graph draws them.

    Read from the run's resolutions (each lists every value with the sources behind it), so
    the graph describes the run, not claims loaded since. Vectorised: with the items' values
    one-hot over the chosen sources (X, value rows x sources) and the items' presence (P),
    shared = P^T P and agreements = X^T X. Two queries (resolutions, the sources' names)."""
    item_values = list(
        ClaimResolution.objects.filter(run=run).order_by("id").values_list("values", flat=True)[:RESOLUTION_SCAN]
    )
    counts: Counter[int] = Counter()
    for values in item_values:
        for v in values or []:
            counts.update(v.get("sources") or [])
    chosen = [sid for sid, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]]
    if len(chosen) < 2:
        return {"pairs": [], "sources": [], "total_sources": len(counts), "items": len(item_values)}
    column = {sid: j for j, sid in enumerate(chosen)}
    value_rows: list[list[int]] = []
    item_rows: list[list[int]] = []
    for values in item_values:
        present: list[int] = []
        for v in values or []:
            cols = [column[s] for s in v.get("sources") or [] if s in column]
            if cols:
                value_rows.append(cols)
                present.extend(cols)
        if len(present) >= 2:
            item_rows.append(present)
    x = _incidence(value_rows, len(chosen))
    p = _incidence(item_rows, len(chosen))
    shared = p.T @ p
    agree = x.T @ x
    info: dict[int, Mapping[str, Any]] = {
        s["id"]: s for s in Source.objects.filter(pk__in=chosen).values("id", "name", "reliability", "reliability_low")
    }
    pairs = []
    a_idx, b_idx = np.nonzero(np.triu(shared, k=1))
    for a, b in zip(a_idx.tolist(), b_idx.tolist(), strict=True):
        sa, sb = chosen[a], chosen[b]
        if sa > sb:
            sa, sb = sb, sa
        n = int(shared[a, b])
        differ = n - int(agree[a, b])
        pairs.append(
            {
                "run_id": run.pk,
                "source_a": sa,
                "source_a_name": info.get(sa, {}).get("name", str(sa)),
                "source_b": sb,
                "source_b_name": info.get(sb, {}).get("name", str(sb)),
                "shared": n,
                "disagreements": differ,
                "rate": differ / n,
            }
        )
    pairs.sort(key=lambda p: (p["source_a"], p["source_b"]))
    sources = [
        {"id": sid, "name": info[sid]["name"], "reliability": info[sid]["reliability"], "claims": counts[sid]}
        for sid in chosen
        if sid in info
    ]
    return {"pairs": pairs, "sources": sources, "total_sources": len(counts), "items": len(item_values)}


def _incidence(rows: Sequence[Sequence[int]], width: int) -> np.ndarray:
    """A 0/1 matrix with one row per list of column indices (float32: exact for counts < 2^24)."""
    matrix = np.zeros((len(rows), width), dtype=np.float32)
    for i, cols in enumerate(rows):
        matrix[i, cols] = 1.0
    return matrix
