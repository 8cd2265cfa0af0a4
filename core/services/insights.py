"""Read-side queries shared by the dashboard and the REST API.

Every function returns plain dicts and lists (JSON-ready: ids, names, floats, ISO-able
datetimes), runs a bounded number of SQL queries whatever the number of sources, runs or
votes, and never writes. "Finished run" means an estimation run that succeeded: a failed
run's responses are partial and must not move a trend or a conflict graph.
"""

from __future__ import annotations

from collections import defaultdict
from itertools import combinations
from typing import Any

from django.db.models import Count, F, OuterRef, Q, Subquery, Window
from django.db.models.functions import RowNumber

from core.engine.graphs.blocs import components
from core.engine.text import answer_contains_gold
from core.models import (
    ClaimResolution,
    EstimationRun,
    Question,
    ReliabilityScore,
    RunAnswer,
    RunResponse,
    SourceDependence,
)
from core.services.estimation.finish import DEPENDENT, detects_copying, usable_references
from core.services.estimation.update import full_run_of
from sources.models import Source

TREND_POINTS = 12


def finished_runs() -> Any:
    """Succeeded runs, newest first (the order every "latest"/"previous" below uses)."""
    return EstimationRun.objects.filter(state=EstimationRun.State.SUCCEEDED).order_by("-created_at", "-id")


def latest_finished_run() -> EstimationRun | None:
    return finished_runs().first()


def finished_full_runs() -> Any:
    """Succeeded full runs (those with responses of their own, not incremental updates), newest first."""
    return finished_runs().filter(kind=EstimationRun.Kind.FULL)


def responses_run(run: EstimationRun) -> EstimationRun:
    """The run whose stored responses describe ``run``: itself, or the full run an update rests on."""
    if run.kind != EstimationRun.Kind.UPDATE:
        return run
    return full_run_of(run) or run


def comparable_runs(run: EstimationRun) -> Any:
    """Succeeded runs whose scores compare with ``run``'s: claim-level runs with claim-level
    runs, runs over fact-checking queries (full runs and their updates) with each other; a
    claim run's reliabilities rest on other evidence (often other sources) than a QA run's."""
    runs = finished_runs()
    if run.kind == EstimationRun.Kind.CLAIMS:
        return runs.filter(kind=EstimationRun.Kind.CLAIMS)
    return runs.exclude(kind=EstimationRun.Kind.CLAIMS)


def previous_finished_run(run: EstimationRun) -> EstimationRun | None:
    """The comparable succeeded run started just before `run` (None for the first one)."""
    return (
        comparable_runs(run)
        .filter(Q(created_at__lt=run.created_at) | Q(created_at=run.created_at, id__lt=run.id))
        .exclude(pk=run.pk)
        .first()
    )


# --- Sources and their trend ---------------------------------------------------------


def reliability_history(source: Source | int) -> list[dict[str, Any]]:
    """The source's reliability in every finished run, oldest first (one query)."""
    source_id = source if isinstance(source, int) else source.pk
    rows = (
        ReliabilityScore.objects.filter(source_id=source_id, run__state=EstimationRun.State.SUCCEEDED)
        .order_by("run__created_at", "run_id")
        .values(
            "run_id",
            "run__created_at",
            "run__kind",
            "run__parent_id",
            "reliability",
            "low",
            "high",
            "answers",
            "agreements",
            "weight",
            "gold_answers",
            "gold_agreements",
        )
    )
    return [
        {
            "run_id": r["run_id"],
            "created_at": r["run__created_at"],
            "kind": r["run__kind"],
            "parent_run_id": r["run__parent_id"],
            "reliability": r["reliability"],
            "low": r["low"],
            "high": r["high"],
            "answers": r["answers"],
            "agreements": r["agreements"],
            "weight": r["weight"],
            "gold_answers": r["gold_answers"],
            "gold_agreements": r["gold_agreements"],
            "gold_accuracy": _share(r["gold_agreements"], r["gold_answers"]),
        }
        for r in rows
    ]


def _share(part: int | None, whole: int | None) -> float | None:
    return part / whole if part is not None and whole else None


def _trends(source_ids: list[int] | None = None, points: int = TREND_POINTS) -> dict[int, list[float]]:
    """The last `points` reliabilities of each source, oldest first (one query)."""
    scores = ReliabilityScore.objects.filter(run__state=EstimationRun.State.SUCCEEDED)
    if source_ids is not None:
        scores = scores.filter(source_id__in=source_ids)
    ranked = scores.annotate(
        recent=Window(
            RowNumber(), partition_by=[F("source_id")], order_by=[F("run__created_at").desc(), F("run_id").desc()]
        )
    ).filter(recent__lte=points)
    series: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for source_id, recent, reliability in ranked.values_list("source_id", "recent", "reliability"):
        series[source_id].append((recent, reliability))
    return {sid: [value for _, value in sorted(pairs, reverse=True)] for sid, pairs in series.items()}


def source_overview(*, active_only: bool = False) -> list[dict[str, Any]]:
    """Every source with its current reliability, uncertainty, answers, documents and trend.

    Two queries in all: sources with a document count, and the recent scores of all sources.
    """
    sources = Source.objects.annotate(document_count=Count("documents", distinct=True)).order_by("name")
    if active_only:
        sources = sources.filter(active=True)
    rows = list(
        sources.values(
            "id",
            "name",
            "kind",
            "active",
            "homepage",
            "chunk_count",
            "reliability",
            "reliability_low",
            "reliability_high",
            "reliability_answers",
            "reliability_updated_at",
            "document_count",
        )
    )
    trends = _trends()
    overview = []
    for row in rows:
        low, high = row["reliability_low"], row["reliability_high"]
        overview.append(
            {
                "id": row["id"],
                "name": row["name"],
                "kind": row["kind"],
                "active": row["active"],
                "homepage": row["homepage"],
                "reliability": row["reliability"],
                "low": low,
                "high": high,
                "uncertainty": (high - low) if low is not None and high is not None else None,
                "answers": row["reliability_answers"],
                "updated_at": row["reliability_updated_at"],
                "document_count": row["document_count"],
                "chunk_count": row["chunk_count"],
                "trend": trends.get(row["id"], []),
            }
        )
    return overview


# --- Disagreement between sources ----------------------------------------------------


def _answer_key(cluster: int | None, response: str) -> Any:
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
    answers_by_query: dict[int, dict[int, Any]] = defaultdict(dict)
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
        .values_list("estimationrun_id", "n")
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


def source_disagreements(source: Source | int, limit: int = 50) -> list[dict[str, Any]]:
    """Fact-checking queries (newest runs first) where the source's non-IDK answer differed
    from the run's estimated answer. Each row says whether the source's answer matches the
    query's reference answers (``matches_reference``; None when the query has none): a source
    that disagreed with a wrong consensus was right, and a page must not show it as wrong. One query."""
    source_id = source if isinstance(source, int) else source.pk
    estimated = RunAnswer.objects.filter(run=OuterRef("run_id"), query=OuterRef("query_id"))
    rows = (
        RunResponse.objects.filter(
            source_id=source_id, run__state=EstimationRun.State.SUCCEEDED, is_idk=False, agrees=False
        )
        .annotate(estimated=Subquery(estimated.values("answer")[:1]), support=Subquery(estimated.values("support")[:1]))
        .order_by("-run__created_at", "-run_id", "query_id")
        .values(
            "run_id",
            "run__created_at",
            "query_id",
            "query__question",
            "query__reference_answers",
            "response",
            "align_score",
            "estimated",
            "support",
        )[:limit]
    )
    described = []
    for r in rows:
        references = usable_references(r["query__reference_answers"])
        described.append(
            {
                "run_id": r["run_id"],
                "run_created_at": r["run__created_at"],
                "query_id": r["query_id"],
                "question": r["query__question"],
                "response": r["response"],
                "align_score": r["align_score"],
                "estimated_answer": r["estimated"] or "",
                "support": r["support"],
                "references": references,
                "matches_reference": matches_reference(r["response"], references),
                "estimate_matches_reference": matches_reference(r["estimated"] or "", references),
            }
        )
    return described


# --- Copying and collusion (pairwise dependence) -------------------------------------


def has_copy_detection(run: EstimationRun) -> bool:
    """Whether the run's estimator detects copying, so that its stored pairwise dependence (an
    update: its full run's) is the whole story: no pair stored means no copying detected."""
    return detects_copying(str(responses_run(run).params.get("estimator", "")))


def run_dependence(run: EstimationRun, min_probability: float = 0.0) -> list[dict[str, Any]]:
    """Every pair of sources the run's estimator examined for copying, most likely dependent
    first, with its evidence (an update's are its full run's). One query."""
    rows = (
        SourceDependence.objects.filter(run=responses_run(run), probability__gte=min_probability)
        .order_by("-probability", "source_a_id", "source_b_id")
        .values(
            "run_id",
            "source_a_id",
            "source_a__name",
            "source_b_id",
            "source_b__name",
            "probability",
            "shared",
            "same_true",
            "same_false",
            "different",
            "examples",
        )
    )
    return [
        {
            "run_id": r["run_id"],
            "source_a": r["source_a_id"],
            "source_a_name": r["source_a__name"],
            "source_b": r["source_b_id"],
            "source_b_name": r["source_b__name"],
            "probability": r["probability"],
            "shared": r["shared"],
            "same_true": r["same_true"],
            "same_false": r["same_false"],
            "different": r["different"],
            "examples": r["examples"] or [],
        }
        for r in rows
    ]


# A pair is shown as copying or colluding only when it shares at least this many false
# answers: the evidence an analyst can check. The estimator may find two sources dependent
# from their agreement on true answers alone ("about 0 false answers in common"), which is
# no sign of collusion to show anyone.
MIN_SHARED_FALSE = 1.0


def dependent_pairs(run: EstimationRun) -> list[dict[str, Any]]:
    """The pairs detected as copying or colluding: probability >= DEPENDENT (0.5) and at least
    MIN_SHARED_FALSE false answers in common."""
    return [p for p in run_dependence(run, min_probability=DEPENDENT) if p["same_false"] >= MIN_SHARED_FALSE]


def latest_collusion() -> dict[int, dict[str, Any]]:
    """Source id -> the copier pair or bloc it belongs to in the latest finished run with copy
    detection: {"run_id", "kind", "others": [names], "shared_false", "probability"}. Empty when
    no such run found any. What the sources list and a source's page badge."""
    run = next((r for r in finished_full_runs()[:10] if has_copy_detection(r)), None)
    if run is None:
        return {}
    badges: dict[int, dict[str, Any]] = {}
    for group in dependence_groups(run):
        for member in group["members"]:
            badges[member["id"]] = {
                "run_id": run.pk,
                "kind": group["kind"],
                "others": [m["name"] for m in group["members"] if m["id"] != member["id"]],
                "shared_false": group["shared_false"],
                "probability": group["probability"],
            }
    return badges


def dependence_groups(run: EstimationRun) -> list[dict[str, Any]]:
    """Detected copier pairs and blocs: the connected components of the pairs with probability
    >= DEPENDENT, each with its members, its pairs and its evidence (the shared false answers,
    at most five per pair), the most likely first. One query."""
    pairs = dependent_pairs(run)
    names: dict[int, str] = {}
    for p in pairs:
        names[p["source_a"]], names[p["source_b"]] = p["source_a_name"], p["source_b_name"]
    groups = []
    for component in components(names, [(p["source_a"], p["source_b"]) for p in pairs]):
        members_pairs = [p for p in pairs if p["source_a"] in component]
        members = sorted(component, key=lambda s: names[s])
        groups.append(
            {
                "kind": "pair" if len(members) == 2 else "bloc",
                "members": [{"id": s, "name": names[s]} for s in members],
                "probability": max(p["probability"] for p in members_pairs),
                "pairs": members_pairs,
                "shared_false": sum(p["same_false"] for p in members_pairs),
            }
        )
    groups.sort(key=lambda g: (-g["probability"], -len(g["members"]), g["members"][0]["name"]))
    return groups


# --- One run -------------------------------------------------------------------------


AGREE, DISAGREE, IDK = "agree", "disagree", "idk"
# Summed vote weight below which the answer groups' shares are not drawn (a source estimated
# at 0.51 carries a log-odds weight of 0.04; one never checked carries none).
MEANINGFUL_WEIGHT = 0.05


def claim_run_summary(run: EstimationRun, *, limit: int = 20) -> dict[str, Any]:
    """What a claim-level run resolved (it has no responses, so no agreement matrix): how many
    items, how many in conflict, and the ``limit`` least confident conflicting items. Two queries."""
    resolutions = ClaimResolution.objects.filter(run=run)
    counts = resolutions.aggregate(items=Count("id"), conflicting=Count("id", filter=Q(conflicting=True)))
    doubtful = list(
        resolutions.filter(conflicting=True)
        .order_by("confidence", "subject", "attribute")
        .values("subject", "attribute", "value", "confidence", "claims")[:limit]
    )
    return {"run_id": run.pk, "items": counts["items"], "conflicting": counts["conflicting"], "doubtful": doubtful}


def matches_reference(answer: str, references: list[str]) -> bool | None:
    """Whether an answer contains one of the query's reference answers (the containment test the
    estimator's gold labels use); None when the query has no reference answer to check against."""
    if not references:
        return None
    return bool(answer) and answer_contains_gold(answer, references)


def agreement_matrix(run: EstimationRun, *, limit: int | None = None) -> dict[str, Any]:
    """Queries x sources of one run: each cell is "agree", "disagree", "idk" or None (no
    response recorded). Sources are ordered by their reliability in the run, most reliable
    first, so the heat map reads from trusted to doubtful. Each row carries the query's
    reference answers (``references``, [] when it has none) and whether the estimated answer
    matches one of them (``matches_reference``: None without references), so a page can show
    the estimate beside the truth a curator recorded. Four queries."""
    scores = dict(ReliabilityScore.objects.filter(run=run).values_list("source_id", "reliability"))
    sources = list(run.sources.order_by("name").values("id", "name"))
    sources.sort(key=lambda s: (-(scores.get(s["id"]) if scores.get(s["id"]) is not None else -1.0), s["name"]))
    column = {s["id"]: i for i, s in enumerate(sources)}
    answers = {
        a["query_id"]: a for a in RunAnswer.objects.filter(run=run).values("query_id", "answer", "cluster", "support")
    }
    rows: dict[int, dict[str, Any]] = {}
    responses = (
        RunResponse.objects.filter(run=run)
        .order_by("query_id")
        .values(
            "query_id",
            "query__question",
            "query__reference_answers",
            "source_id",
            "response",
            "is_idk",
            "agrees",
            "cluster",
        )
    )
    for r in responses:
        row = rows.get(r["query_id"])
        if row is None:
            if limit is not None and len(rows) >= limit:
                continue
            estimated = answers.get(r["query_id"], {})
            references = usable_references(r["query__reference_answers"])
            row = rows[r["query_id"]] = {
                "query_id": r["query_id"],
                "question": r["query__question"],
                "answer": estimated.get("answer", ""),
                "support": estimated.get("support"),
                "references": references,
                "matches_reference": matches_reference(estimated.get("answer", ""), references),
                "cells": [None] * len(sources),
                "responses": [""] * len(sources),
            }
        i = column.get(r["source_id"])
        if i is None:  # a response from a source no longer attached to the run
            continue
        if r["is_idk"]:
            state = IDK
        elif r["agrees"] is not None:
            state = AGREE if r["agrees"] else DISAGREE
        else:
            winning = answers.get(r["query_id"], {}).get("cluster")
            state = AGREE if winning is not None and winning == r["cluster"] else DISAGREE
        row["cells"][i] = state
        row["responses"][i] = r["response"]
    for s in sources:
        s["reliability"] = scores.get(s["id"])
    return {"run_id": run.pk, "sources": sources, "rows": list(rows.values())}


def run_changes(run: EstimationRun) -> dict[str, Any]:
    """Per-source change of reliability against the previous finished run. Each entry has
    status "new" (not scored before), "changed", or "dropped" (scored before, not now).
    Three queries."""
    previous = previous_finished_run(run)
    fields = (
        "source_id",
        "source__name",
        "reliability",
        "low",
        "high",
        "answers",
        "agreements",
        "gold_answers",
        "gold_agreements",
    )
    now = {r["source_id"]: r for r in ReliabilityScore.objects.filter(run=run).values(*fields)}
    before = (
        {r["source_id"]: r for r in ReliabilityScore.objects.filter(run=previous).values(*fields)} if previous else {}
    )
    entries = []
    for source_id in set(now) | set(before):
        cur, old = now.get(source_id), before.get(source_id)
        ref = cur or old
        assert ref is not None
        delta = cur["reliability"] - old["reliability"] if cur and old else None
        entries.append(
            {
                "source_id": source_id,
                "source_name": ref["source__name"],
                "status": "changed" if cur and old else ("new" if cur else "dropped"),
                "reliability": cur["reliability"] if cur else None,
                "low": cur["low"] if cur else None,
                "high": cur["high"] if cur else None,
                "answers": cur["answers"] if cur else None,
                "agreements": cur["agreements"] if cur else None,
                "gold_answers": cur["gold_answers"] if cur else None,
                "gold_agreements": cur["gold_agreements"] if cur else None,
                "gold_accuracy": _share(cur["gold_agreements"], cur["gold_answers"]) if cur else None,
                "previous_reliability": old["reliability"] if old else None,
                "previous_answers": old["answers"] if old else None,
                "delta": delta,
            }
        )
    entries.sort(key=lambda e: (-abs(e["delta"]) if e["delta"] is not None else 0.0, e["source_name"]))
    return {"run_id": run.pk, "previous_run_id": previous.pk if previous else None, "sources": entries}


# --- One question --------------------------------------------------------------------


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
        c["chosen"] = bool(question.answer) and c is ordered[0]
    return {"question_id": question.pk, "answer": question.answer, "clusters": ordered, "abstained": abstained}
