"""Conflicts: which sources disagree with which, which copy each other or collude (detected by
the run's estimator, with the false answers they share as evidence; for runs without copy
detection, the older agreement heuristic, labelled as such), and the questions that split
the sources."""

from __future__ import annotations

from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from core.engine.graphs.conflict import conflict_graph
from core.models import EstimationRun, Question
from core.services.insights import dependence_groups, finished_full_runs, has_copy_detection, pairwise_disagreement
from core.views.access import analyst_required
from sources.models import Source

EDGE_MODES = ("auto", "all", "strong", "conflict", "agreement")


@analyst_required
def conflicts(request: HttpRequest) -> HttpResponse:
    runs = list(finished_full_runs().only("id", "created_at")[:30])
    run_id = request.GET.get("run")
    run = (
        get_object_or_404(EstimationRun, pk=run_id, state=EstimationRun.State.SUCCEEDED)
        if run_id and run_id.isdigit()
        else (runs[0] if runs else None)
    )
    mode = request.GET.get("edges", "auto")
    mode = mode if mode in EDGE_MODES else "auto"
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
        },
    )
