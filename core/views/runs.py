"""Estimation runs: the list, starting and resuming one (curators), live progress and the result."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from core.engine.reliability import available_estimators
from core.models import EstimationRun, QueryCollection
from core.roles import analyst_required, curator_required, is_curator
from core.services import estimation
from core.services.estimation.checks import identification_view, record_check, reestimate_run
from core.services.estimation.start import MIN_SOURCES
from core.services.pages.copying import dependence_groups
from core.services.pages.runs import agreement_matrix, claim_run_summary, run_changes
from core.services.topics import widest_spreads
from core.views.htmx import HtmxHttpRequest
from sources.models import Claim, Source
from tasks.polling import render_poll

MATRIX_ROWS = 200  # the heat map shows at most this many queries; the API has them all


def form_defaults() -> dict[str, Any]:
    """The parameters the form shows (the service's defaults, RELIABILITY_ESTIMATOR included); the service validates."""
    return estimation.default_params()


def _form_context(form: dict[str, Any] | None = None, errors: dict[str, list[str]] | None = None) -> dict[str, Any]:
    return {
        "query_sets": QueryCollection.objects.annotate(
            query_count=Count("queries", distinct=True),
            gold_count=Count("queries", filter=~Q(queries__reference_answers=[]), distinct=True),
        ).order_by("name"),
        # A run asks the sources' documents: sources that hold only claims have nothing to answer from.
        "all_sources": Source.objects.filter(active=True, chunk_count__gt=0).only("id", "name").order_by("name"),
        "claim_count": Claim.objects.count(),
        "form": form or {"params": form_defaults(), "sources": []},
        "default_estimator": settings.RELIABILITY_ESTIMATOR,
        "estimators": available_estimators(),
        "errors": errors or {},
        "min_sources": MIN_SOURCES,
    }


@analyst_required
def run_list(request: HttpRequest) -> HttpResponse:
    runs = (
        EstimationRun.objects.select_related("query_set", "job", "created_by")
        .annotate(source_count=Count("sources"))
        .order_by("-created_at", "-id")
    )
    page = Paginator(runs, 25).get_page(request.GET.get("page"))
    context = {"page": page, "can_start": is_curator(request.user)}
    if context["can_start"]:
        # ?start=1&query_set=N opens the form on that query set (the admin's offer after a
        # curator confirms feedback links here with the feedback set).
        chosen = request.GET.get("query_set", "")
        form = {"params": form_defaults(), "sources": [], "query_set": chosen} if chosen.isdigit() else None
        context.update(_form_context(form))
    return render(request, "core/run_list.html", context)


def _params(post: Any) -> tuple[dict[str, Any], dict[str, list[str]]]:
    params: dict[str, Any] = {}
    errors: dict[str, list[str]] = {}
    for name, cast in (("k", int), ("tau", float), ("alpha", float), ("beta", float)):
        raw = (post.get(name) or "").strip()
        if raw:
            try:
                params[name] = cast(raw)
            except ValueError:
                errors[name] = [f"{name} must be a number."]
    params["strict"] = post.get("strict") == "on"
    if post.get("agreement_only") == "on":  # unchecked (the default): reference answers anchor the run
        params["use_gold"] = False
    if post.get("estimator"):
        params["estimator"] = post["estimator"]
    return params, errors


@curator_required
@require_http_methods(["GET", "POST"])
def run_start(request: HtmxHttpRequest) -> HttpResponse:
    if request.method == "GET":
        # The form lives on the run list (an address typed or bookmarked, a reload after an
        # error): go there with it open, never a bare 405.
        return redirect(reverse("run-list") + "?start=1#start-run")
    params, errors = _params(request.POST)
    picked = request.POST.getlist("sources")
    every = estimation.ALL_SOURCES in picked  # the explicit "every active source" option
    source_ids = [int(s) for s in picked if s.isdigit()]
    query_set_id = request.POST.get("query_set", "")
    query_set = None
    if query_set_id:
        # A query set that was named must exist: an unknown one is an error on the field, never
        # a run on the default set (issue 38 row 13). Left empty, the service picks the default.
        query_set = (
            QueryCollection.objects.filter(pk=query_set_id).first()
            if query_set_id.isascii() and query_set_id.isdigit()
            else None
        )
        if query_set is None:
            errors["query_set"] = ["No such query set: choose one of the list."]
    if not errors:
        # Nothing chosen is an error (the service says so), never a run over everything.
        sources: Any = estimation.ALL_SOURCES if every else list(Source.objects.filter(pk__in=source_ids)) or None
        try:
            run = estimation.start_estimation_run(
                query_set=query_set, sources=sources, params=params, user=request.user
            )
        except ValidationError as exc:
            errors = exc.message_dict if hasattr(exc, "error_dict") else {"general": exc.messages}
            if "__all__" in errors:  # templates cannot read names that start with "_"
                errors["general"] = errors.pop("__all__")
        else:
            if request.htmx:
                response = HttpResponse(status=204)
                response["HX-Redirect"] = run_url(run)
                return response
            return redirect("run-detail", pk=run.pk)
    form = {
        "params": {**form_defaults(), **params},
        "sources": source_ids,
        "all_sources": every,
        "query_set": query_set_id,
    }
    runs = (
        EstimationRun.objects.select_related("query_set", "job", "created_by")
        .annotate(source_count=Count("sources"))
        .order_by("-created_at", "-id")
    )
    context = {"page": Paginator(runs, 25).get_page(1), "can_start": True, **_form_context(form, errors)}
    return render(request, "core/run_list.html", context, status=400)


@curator_required
@require_http_methods(["GET", "POST"])
def run_start_claims(request: HttpRequest) -> HttpResponse:
    """Start a claim-level run over every active source that holds claims (the run list's
    second form); what is wrong comes back as a message on the run list."""
    if request.method == "GET":
        return redirect(reverse("run-list") + "?start=1#start-claims-run")
    estimator = (request.POST.get("estimator") or "").strip() or None
    try:
        run = estimation.start_claim_run(estimator=estimator, user=request.user)
    except ValidationError as exc:
        details = exc.message_dict if hasattr(exc, "error_dict") else {"claims": exc.messages}
        for problem in (m for msgs in details.values() for m in msgs):
            messages.error(request, problem)
        return redirect(reverse("run-list") + "?start=1#start-claims-run")
    return redirect("run-detail", pk=run.pk)


def run_url(run: EstimationRun) -> str:
    return reverse("run-detail", args=[run.pk])


def _run(pk: int) -> EstimationRun:
    return get_object_or_404(EstimationRun.objects.select_related("query_set", "job", "created_by"), pk=pk)


def _finished(run: EstimationRun) -> bool:
    return run.effective_state in (EstimationRun.State.SUCCEEDED, EstimationRun.State.FAILED)


def _result_context(run: EstimationRun, request: HttpRequest | None = None) -> dict[str, Any]:
    context: dict[str, Any] = {"run": run, "finished": _finished(run)}
    # A failed (or interrupted) run can be resumed by a curator: its stored responses are kept.
    context["can_resume"] = (
        request is not None and is_curator(request.user) and run.effective_state == EstimationRun.State.FAILED
    )
    context["is_claims"] = run.kind == EstimationRun.Kind.CLAIMS
    context["identification"] = identification_view(run) if run.state == EstimationRun.State.SUCCEEDED else None
    context["is_curator"] = request is not None and is_curator(request.user)
    if run.state == EstimationRun.State.SUCCEEDED and context["is_claims"]:
        # A claim-level run has no responses (no agreement matrix): what it resolved instead.
        changes = run_changes(run)
        context.update(
            changes=changes,
            claims=claim_run_summary(run),
            copy_groups=dependence_groups(run),
            topic_spreads=widest_spreads(run, dict(run.sources.values_list("id", "name"))) if run.topics else [],
            topic_names=[t["name"] for t in run.topics.get("model", {}).get("topics", [])],
            scores=sorted(
                (c for c in changes["sources"] if c["status"] != "dropped"), key=lambda c: -(c["reliability"] or 0.0)
            ),
        )
    elif run.state == EstimationRun.State.SUCCEEDED:
        changes = run_changes(run)
        matrix = agreement_matrix(run, limit=MATRIX_ROWS)
        names = [s["name"] for s in matrix["sources"]]
        for row in matrix["rows"]:
            row["view_cells"] = [
                {"state": state or "none", "title": f"{name}: {response or 'no response'}"}
                for state, response, name in zip(row["cells"], row["responses"], names, strict=True)
            ]
        checked = [row for row in matrix["rows"] if row["references"]]
        context.update(
            changes=changes,
            matrix=matrix,
            # The estimate beside the reference answers: how many of the gold-checked queries it got right.
            reference_check={
                "checked": len(checked),
                "matching": sum(1 for row in checked if row["matches_reference"]),
                "differing": sum(1 for row in checked if not row["matches_reference"]),
            },
            copy_groups=dependence_groups(run),
            topic_spreads=widest_spreads(run, dict(run.sources.values_list("id", "name"))) if run.topics else [],
            topic_names=[t["name"] for t in run.topics.get("model", {}).get("topics", [])],
            scores=sorted(
                (c for c in changes["sources"] if c["status"] != "dropped"), key=lambda c: -(c["reliability"] or 0.0)
            ),
        )
    return context


@analyst_required
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = _run(pk)
    context = _result_context(run, request)
    context["source_names"] = list(run.sources.order_by("name").values_list("name", flat=True))
    return render(request, "core/run_detail.html", context)


@analyst_required
def run_result(request: HttpRequest, pk: int) -> HttpResponse:
    """The result section the run page polls; 286 (htmx: stop polling) once the run ended."""
    run = _run(pk)
    context = _result_context(run, request)
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


@curator_required
def run_checks(request: HttpRequest, pk: int) -> HttpResponse:
    """The checks that would settle a run's estimate (active gold): each proposed query with
    the answers the sources gave; one click records an answer as the right one (or type it),
    and the run is estimated again from its stored responses."""
    run = _run(pk)
    errors: dict[str, list[str]] = {}
    if request.method == "POST" and request.POST.get("action") == "reestimate":
        try:
            started = reestimate_run(run, user=request.user)
        except ValidationError as exc:
            messages.error(request, " ".join(exc.messages))
            return redirect("run-checks", pk=run.pk)
        if started:
            messages.success(request, f"Run #{run.pk} is being estimated again with the checks recorded so far.")
        else:
            messages.error(
                request,
                f"Run #{run.pk} is being estimated right now (or you are at your run limit): try again when it ends.",
            )
        return redirect("run-checks", pk=run.pk)
    if request.method == "POST":
        try:
            query_id = int(request.POST.get("query", ""))
        except ValueError:
            errors = {"query": ["Choose a query of this run's checks."]}
        else:
            try:
                started = record_check(run, query_id, request.POST.get("answer", ""), user=request.user)
            except ValidationError as exc:
                errors = exc.message_dict if hasattr(exc, "error_dict") else {"answer": exc.messages}
            else:
                if started:
                    messages.success(
                        request,
                        f"Recorded as the right answer; run #{run.pk} is being estimated again with it (its page "
                        "shows the new estimate in a few seconds).",
                    )
                else:
                    messages.warning(
                        request,
                        f"Recorded as the right answer. Run #{run.pk} is being estimated right now (or you are at "
                        'your run limit): press "Estimate again" when it ends so this answer counts.',
                    )
                return redirect("run-checks", pk=run.pk)
    view = identification_view(run)
    status = 400 if errors else 200
    return render(
        request, "core/run_checks.html", {"run": run, "identification": view, "errors": errors}, status=status
    )
