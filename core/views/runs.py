"""Estimation runs: the list, a run's page with its live progress and result, and resuming a
failed run (curators). Starting one is core.views.run_start, its checks core.views.run_checks."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from core.forms.query import RunListForm
from core.models import EstimationRun
from core.roles import analyst_required, curator_required, is_curator
from core.services import estimation
from core.services.pages.run_page import run_result as run_result_page
from core.views.htmx import HtmxHttpRequest
from core.views.query import bad_query
from core.views.run_start import RUNS_PAGE, listed_runs, start_form_context
from tasks.polling import render_poll


@analyst_required
def run_list(request: HttpRequest) -> HttpResponse:
    form = RunListForm(request.GET)
    if not form.is_valid():
        return bad_query(request, form)
    page = Paginator(listed_runs(), RUNS_PAGE).get_page(form.cleaned_data.get("page"))
    context = {"page": page, "can_start": is_curator(request.user)}
    if context["can_start"]:
        # ?start=1&query_set=N opens the form on that query set (the admin's offer after a
        # curator confirms feedback links here with the feedback set).
        chosen = form.cleaned_data.get("query_set")
        context.update(start_form_context(None if chosen is None else {"query_set": str(chosen)}))
    return render(request, "core/run_list.html", context)


def run_url(run: EstimationRun) -> str:
    return reverse("run-detail", args=[run.pk])


def _run(pk: int) -> EstimationRun:
    return get_object_or_404(EstimationRun.objects.select_related("query_set", "job", "created_by"), pk=pk)


@analyst_required
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = _run(pk)
    context = run_result_page(run, curator=is_curator(request.user))
    context["source_names"] = list(run.sources.order_by("name").values_list("name", flat=True))
    return render(request, "core/run_detail.html", context)


@analyst_required
def run_result(request: HttpRequest, pk: int) -> HttpResponse:
    """The result section the run page polls; 286 (htmx: stop polling) once the run ended."""
    context = run_result_page(_run(pk), curator=is_curator(request.user))
    return render_poll(request, "core/_run_result.html", context, finished=context["finished"])


@curator_required
@require_POST
def run_resume(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """Resume a failed or interrupted run (the button on its page); back to the run page."""
    run = _run(pk)
    # A claim-level run is resolved again from its sources' claims; a full run resumes its responses.
    resume = estimation.resume_claim_run if run.kind == EstimationRun.Kind.CLAIMS else estimation.resume_estimation_run
    try:
        resume(run, user=request.user)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.message_dict.get("run", exc.messages)))
    else:
        messages.success(
            request,
            f"Run #{run.pk} resumed: its claims are resolved again."
            if run.kind == EstimationRun.Kind.CLAIMS
            else f"Run #{run.pk} resumed: its stored responses are kept, the missing ones generated.",
        )
    if request.htmx:
        response = HttpResponse(status=204)
        response["HX-Redirect"] = run_url(run)
        return response
    return redirect("run-detail", pk=run.pk)
