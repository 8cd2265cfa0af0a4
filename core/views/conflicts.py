"""Conflicts: which sources disagree with which, which copy each other or collude (detected by
the run's estimator, with the false answers they share as evidence; for runs without copy
detection, the older agreement heuristic, labelled as such), and the questions that split
the sources. In claims mode (?mode=claims): the latest claims run's contested items and a source
conflict graph built from the values the sources claim."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from core.forms.query import EDGE_MODES, ConflictsForm
from core.models import EstimationRun
from core.roles import analyst_required
from core.services.pages.conflicts_page import answers_mode, claims_mode
from core.services.pages.run_sets import claims_runs
from core.views.claim_charts import link_contested, link_copy_examples
from core.views.query import bad_query


@analyst_required
def conflicts(request: HttpRequest) -> HttpResponse:
    form = ConflictsForm(request.GET)
    if not form.is_valid():
        return bad_query(request, form)
    edges = form.choice("edges", "auto")
    run_id = form.cleaned_data.get("run")
    if form.choice("mode", "answers") == "claims":
        run = get_object_or_404(claims_runs(), pk=run_id) if run_id is not None else None
        context = claims_mode(run, edges, form.cleaned_data.get("page"))
        link_copy_examples(context["copy_groups"])
        link_contested(context.get("contested_items", []))
        context["query"] = form.pager_query()
    else:
        succeeded = EstimationRun.objects.filter(state=EstimationRun.State.SUCCEEDED)
        run = get_object_or_404(succeeded, pk=run_id) if run_id is not None else None
        context = answers_mode(run, edges)
    return render(request, "core/conflicts.html", {**context, "mode": edges, "modes": EDGE_MODES})
