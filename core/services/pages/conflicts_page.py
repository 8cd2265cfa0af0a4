"""The conflicts page's two modes, assembled from core.services.pages.conflicts: in answers
mode, a run's pairwise disagreements as a graph, its copier groups and the questions that
split the sources; in claims mode, a claims run's source graph over the values claimed, its
copier groups and its contested items (a page of them). Links are the view's to add."""

from __future__ import annotations

from typing import Any

from django.core.paginator import Paginator
from django.db.models import Count

from core.engine.graphs.conflict import conflict_graph
from core.models import EstimationRun, Question
from core.services.pages.conflicts import (
    claim_copy_groups,
    claim_source_pairs,
    contested_items,
    default_conflict_run,
    describe_contested,
    pairwise_disagreement,
    runs_with_shared_answers,
)
from core.services.pages.copying import dependence_groups, has_copy_detection
from core.services.pages.run_sets import claims_runs, finished_full_runs
from sources.models import Source

RUN_CHOICES = 30  # the run picker lists this many latest runs
TOP_PAIRS = 20
SPLIT_QUESTIONS = 15
CONTESTED_PAGE = 25


def answers_mode(chosen: EstimationRun | None, edges: str) -> dict[str, Any]:
    """The answers mode for the run ``chosen`` (None: the latest run with pairs to draw)."""
    runs = list(finished_full_runs().only("id", "created_at", "kind")[:RUN_CHOICES])
    with_pairs = runs_with_shared_answers(runs)
    for r in runs:
        r.has_pairs = r.pk in with_pairs  # type: ignore[attr-defined]  # for the template; the run picker says which runs have nothing to draw
    skipped: list[EstimationRun] = []
    run = chosen
    if run is None:
        run, skipped = default_conflict_run(runs)  # skipped: newer runs without pairs
    pairs = pairwise_disagreement(run) if run else []
    sources = list(Source.objects.values("id", "name", "reliability"))
    # Copy detection when the run's estimator did it; otherwise the graph's heuristic blocs.
    copy_detection = has_copy_detection(run) if run else False
    # Questions whose sources split into two or more answer clusters, newest first.
    split = (
        Question.objects.exclude(answered_at=None)
        .annotate(answer_clusters=Count("votes__cluster", distinct=True))
        .filter(answer_clusters__gte=2)
        .only("id", "text", "answer", "created_at")[:SPLIT_QUESTIONS]
    )
    return {
        "view_mode": "answers",
        "run": run,
        "runs": runs,
        "graph": conflict_graph(pairs, sources, edges=edges) if pairs else None,
        "pairs": sorted(pairs, key=lambda p: (-p["rate"], -p["shared"]))[:TOP_PAIRS],
        "contested": split,
        "copy_detection": copy_detection,
        "copy_groups": dependence_groups(run) if copy_detection and run else [],
        "skipped_runs": skipped,
        "no_run_has_pairs": bool(runs) and not with_pairs,
    }


def claims_mode(chosen: EstimationRun | None, edges: str, page_number: int | None) -> dict[str, Any]:
    """The claims mode for the claims run ``chosen`` (None: the latest): the sources' conflict
    graph over the values they claim (the GRAPH_SOURCES sources with the most claims), copier
    groups, and the page ``page_number`` of its contested items, most contested first."""
    runs = list(claims_runs().only("id", "created_at", "params")[:RUN_CHOICES])
    run = chosen if chosen is not None else (runs[0] if runs else None)
    context: dict[str, Any] = {
        "view_mode": "claims",
        "run": run,
        "runs": runs,
        "graph": None,
        "pairs": [],
        "copy_groups": [],
        "copy_detection": False,
    }
    if run is None:
        return context
    found = claim_source_pairs(run)
    pairs = found["pairs"]
    graph = conflict_graph(pairs, found["sources"], edges=edges) if pairs else None
    for edge in graph["edges"] if graph else []:
        edge["title"] = edge["title"].replace("shared queries", "shared items")
    groups = claim_copy_groups(run)
    page = Paginator(contested_items(run), CONTESTED_PAGE).get_page(page_number)
    context.update(
        graph=graph,
        pairs=sorted(pairs, key=lambda p: (-p["disagreements"], -p["rate"], p["source_a_name"]))[:TOP_PAIRS],
        graph_sources=found,
        copy_groups=groups,
        copy_detection=bool(groups) or has_copy_detection(run),
        page=page,
        contested_items=describe_contested(page.object_list),
    )
    return context
