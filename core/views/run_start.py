"""Starting an estimation run over documents, or a claim-level run (curators): the run
list's two forms (core.forms.runs) post here; the services (core.services.estimation) decide
what may run, and what is wrong comes back on the form's fields."""

from __future__ import annotations

from typing import Any, Literal

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.db.models import Count, Q, QuerySet
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from core.engine.reliability import available_estimators
from core.forms.runs import ClaimRunForm, RunStartForm
from core.models import EstimationRun, QueryCollection
from core.roles import curator_required
from core.services import estimation
from core.services.estimation.start import MIN_SOURCES
from core.views.htmx import HtmxHttpRequest
from sources.models import Claim, Source

Errors = dict[str, list[str]]
RUNS_PAGE = 25


def listed_runs() -> QuerySet[EstimationRun]:
    """The run list's rows, newest first."""
    return (
        EstimationRun.objects.select_related("query_set", "job", "created_by")
        .annotate(source_count=Count("sources"))
        .order_by("-created_at", "-id")
    )


def form_defaults() -> dict[str, Any]:
    """The parameters the form shows (the service's defaults, RELIABILITY_ESTIMATOR included); the service validates."""
    return estimation.default_params()


def start_form_context(form: dict[str, Any] | None = None, errors: Errors | None = None) -> dict[str, Any]:
    """What the start forms offer (query sets with their sizes, the sources with documents,
    the estimators), with ``form``'s values shown and ``errors`` on their fields."""
    return {
        "query_sets": QueryCollection.objects.annotate(
            query_count=Count("queries", distinct=True),
            gold_count=Count("queries", filter=~Q(queries__reference_answers=[]), distinct=True),
        ).order_by("name"),
        # A run asks the sources' documents: sources that hold only claims have nothing to answer from.
        "all_sources": Source.objects.filter(active=True, chunk_count__gt=0).only("id", "name").order_by("name"),
        "claim_count": Claim.objects.count(),
        # The sources a claims run covers, offered as authorities (optional, a curator's setting).
        "claim_sources": Source.objects.filter(active=True, claims__isnull=False)
        .distinct()
        .only("id", "name")
        .order_by("name"),
        "form": {"params": form_defaults(), "sources": [], **(form or {})},
        "default_estimator": settings.RELIABILITY_ESTIMATOR,
        "estimators": available_estimators(),
        "errors": errors or {},
        "min_sources": MIN_SOURCES,
    }


@curator_required
@require_http_methods(["GET", "POST"])
def run_start(request: HtmxHttpRequest) -> HttpResponse:
    if request.method == "GET":
        # The form lives on the run list (an address typed or bookmarked, a reload after an
        # error): go there with it open, never a bare 405.
        return redirect(reverse("run-list") + "?start=1#start-run")
    form = RunStartForm(request.POST)
    errors: Errors = {} if form.is_valid() else form.errors_by_field()
    if not errors:
        # Nothing chosen is an error (the service says so), never a run over everything.
        ids = form.cleaned_data["sources"]
        sources: list[Source] | Literal["all"] | None = (
            estimation.ALL_SOURCES if form.every_source() else list(Source.objects.filter(pk__in=ids)) or None
        )
        try:
            run = estimation.start_estimation_run(
                query_set=form.cleaned_data["query_set"], sources=sources, params=form.params(), user=request.user
            )
        except ValidationError as exc:
            errors = exc.message_dict if hasattr(exc, "error_dict") else {"general": exc.messages}
            if "__all__" in errors:  # templates cannot read names that start with "_"
                errors["general"] = errors.pop("__all__")
        else:
            if request.htmx:
                response = HttpResponse(status=204)
                response["HX-Redirect"] = reverse("run-detail", args=[run.pk])
                return response
            return redirect("run-detail", pk=run.pk)
    cleaned = getattr(form, "cleaned_data", {})
    values = {
        "params": {**form_defaults(), **form.params()},
        "sources": cleaned.get("sources") or [],
        "all_sources": form.every_source(),
        "query_set": str(form.data.get("query_set") or ""),
    }
    page = Paginator(listed_runs(), RUNS_PAGE).get_page(1)
    context = {"page": page, "can_start": True, **start_form_context(values, errors)}
    return render(request, "core/run_list.html", context, status=400)


@curator_required
@require_http_methods(["GET", "POST"])
def run_start_claims(request: HtmxHttpRequest) -> HttpResponse:
    """Start a claim-level run over every active source that holds claims (the run list's
    second form), with the authorities the curator chose (stored in the run's params); what is
    wrong comes back as a message on the run list."""
    if request.method == "GET":
        return redirect(reverse("run-list") + "?start=1#start-claims-run")
    form = ClaimRunForm(request.POST)
    try:
        if not form.is_valid():  # an authority that is not a source id
            raise ValidationError({field: list(errors) for field, errors in form.errors.items()})
        run = estimation.start_claim_run(
            estimator=form.estimator_name(), authorities=form.authority_ids() or None, user=request.user
        )
    except ValidationError as exc:
        details = exc.message_dict if hasattr(exc, "error_dict") else {"claims": exc.messages}
        for field, msgs in details.items():
            for problem in msgs:
                messages.error(request, f"Authorities: {problem}" if field == "authorities" else problem)
        return redirect(reverse("run-list") + "?start=1#start-claims-run")
    return redirect("run-detail", pk=run.pk)
