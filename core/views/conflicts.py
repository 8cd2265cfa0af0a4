"""Conflicts: which sources disagree with which, which copy each other or collude (detected by
the run's estimator, with the false answers they share as evidence; for runs without copy
detection, the older agreement heuristic, labelled as such), and the questions that split
the sources. In claims mode (?mode=claims): the latest claims run's contested items and a source
conflict graph built from the values the sources claim."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from core.engine.graphs.conflict import conflict_graph
from core.forms.query import EDGE_MODES, ConflictsForm
from core.models import EstimationRun, Question
from core.roles import analyst_required
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
from core.views.claim_charts import link_contested, link_copy_examples
from core.views.query import bad_query
from sources.models import Source

CONTESTED_PAGE = 25


@analyst_required
def conflicts(request: HttpRequest) -> HttpResponse:
    form = ConflictsForm(request.GET)
    if not form.is_valid():
        return bad_query(request, form)
    if form.choice("mode", "answers") == "claims":
        return _claims_mode(request, form)
    runs = list(finished_full_runs().only("id", "created_at", "kind")[:30])
    with_pairs = runs_with_shared_answers(runs)
    for r in runs:
        r.has_pairs = r.pk in with_pairs  # type: ignore[attr-defined]  # for the template; the run picker says which runs have nothing to draw
    run_id = form.cleaned_data.get("run")
    skipped: list[EstimationRun] = []
    if run_id is not None:
        run: EstimationRun | None = get_object_or_404(EstimationRun, pk=run_id, state=EstimationRun.State.SUCCEEDED)
    else:
        run, skipped = default_conflict_run(runs)  # skipped: newer runs without pairs
    mode = form.choice("edges", "auto")
    pairs = pairwise_disagreement(run) if run else []
    sources = list(Source.objects.values("id", "name", "reliability"))
    graph = conflict_graph(pairs, sources, edges=mode) if pairs else None
    top_pairs = sorted(pairs, key=lambda p: (-p["rate"], -p["shared"]))[:20]
    # Copy detection when the run's estimator did it; otherwise the graph's heuristic blocs.
    copy_detection = has_copy_detection(run) if run else False
    # Questions whose sources split into two or more answer clusters, newest first.
    contested = (
        Question.objects.exclude(answered_at=None)
        .annotate(answer_clusters=Count("votes__cluster", distinct=True))
        .filter(answer_clusters__gte=2)
        .only("id", "text", "answer", "created_at")[:15]
    )
    return render(
        request,
        "core/conflicts.html",
        {
            "run": run,
            "runs": runs,
            "graph": graph,
            "pairs": top_pairs,
            "mode": mode,
            "modes": EDGE_MODES,
            "contested": contested,
            "copy_detection": copy_detection,
            "copy_groups": dependence_groups(run) if copy_detection and run else [],
            "view_mode": "answers",
            "skipped_runs": skipped,
            "no_run_has_pairs": bool(runs) and not with_pairs,
        },
    )


def _claims_mode(request: HttpRequest, form: ConflictsForm) -> HttpResponse:
    """The claims run's conflicting items, most contested first, and the sources' conflict graph
    over the values they claim (the GRAPH_SOURCES sources with the most claims)."""
    runs = list(claims_runs().only("id", "created_at", "params")[:30])
    run_id = form.cleaned_data.get("run")
    run = get_object_or_404(claims_runs(), pk=run_id) if run_id is not None else (runs[0] if runs else None)
    mode = form.choice("edges", "auto")
    context: dict[str, object] = {
        "view_mode": "claims",
        "run": run,
        "runs": runs,
        "mode": mode,
        "modes": EDGE_MODES,
        "graph": None,
        "pairs": [],
        "copy_groups": [],
        "copy_detection": False,
    }
    if run is not None:
        found = claim_source_pairs(run)
        pairs = found["pairs"]
        graph = conflict_graph(pairs, found["sources"], edges=mode) if pairs else None
        for edge in graph["edges"] if graph else []:
            edge["title"] = edge["title"].replace("shared queries", "shared items")
        context["graph"] = graph
        context["pairs"] = sorted(pairs, key=lambda p: (-p["disagreements"], -p["rate"], p["source_a_name"]))[:20]
        context["graph_sources"] = found
        groups = claim_copy_groups(run)
        link_copy_examples(groups)
        context["copy_groups"] = groups
        context["copy_detection"] = bool(groups) or has_copy_detection(run)
        page = Paginator(contested_items(run), CONTESTED_PAGE).get_page(form.cleaned_data.get("page"))
        context["page"] = page
        items = describe_contested(page.object_list)
        link_contested(items)
        context["contested_items"] = items
        context["query"] = form.pager_query()
    return render(request, "core/conflicts.html", context)
