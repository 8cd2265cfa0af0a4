"""Claims pages: the browser (all claims, or one source's), one subject's attributes with
their resolved values, and one item's conflict view. The data comes from
core.services.pages (claims_browser, claim_subject, claim_conflict), the links and graphs from
core.views.claim_charts; these views read the query string, link, draw and render."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.cache import cache
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from core.forms.query import ClaimBrowserForm, ClaimItemForm
from core.models import EstimationRun
from core.roles import analyst_required, is_curator
from core.services.estimation.checks import unsettled_view
from core.services.pages.claim_conflict import conflict_version, conflict_view
from core.services.pages.claim_subject import subject_view
from core.services.pages.claims_browser import browse_claims, claim_filter_choices, with_resolutions
from core.services.pages.run_sets import claims_runs, latest_claims_run
from core.views.claim_charts import conflict_url, link_browser_rows, subject_graph, subject_url, url_maker, value_graph
from core.views.query import bad_query
from sources.models import Source

PAGE_SIZE = 25
CONFLICT_CACHE_SECONDS = 3600


def _chosen_run(form: ClaimItemForm) -> EstimationRun | None:
    """The claims run named by ?run= (404 when it is not a succeeded claims run), else None: the latest."""
    run_id = form.cleaned_data.get("run")
    return None if run_id is None else get_object_or_404(claims_runs(), pk=run_id)


def _unsettled(run: EstimationRun | None) -> dict[str, object] | None:
    """The note a claims page shows when its claims run (``run``, else the latest) is not
    identified, naming every group of sites it leaves unsettled; None when it is."""
    shown = run or latest_claims_run()
    return unsettled_view(shown) if shown is not None else None


def cached_conflict_view(subject: str, attribute: str, run: EstimationRun | None = None) -> dict[str, Any] | None:
    """The item's conflict view with its links and value graph, kept in the cache (the shared
    database or Redis cache) under a key that changes whenever the claims, the sources or the
    run change: a page view does not rebuild the group's confidences and graph while nothing
    they rest on has changed."""
    key = f"claims:conflict:{conflict_version(subject, attribute, run)}"
    view: dict[str, Any] | None = cache.get(key)
    if view is None:
        view = conflict_view(subject, attribute, run)
        if view is not None:
            source_url = url_maker("source-detail")
            for claim in view["claims"]:
                claim["source_url"] = source_url(claim["source_id"])
            view["graph"] = value_graph(view["values"]) if view["values"] and view["claims"] else None
            view["subject_url"] = subject_url(subject)
        cache.set(key, view, CONFLICT_CACHE_SECONDS)
    return view


def _browser(request: HttpRequest, source: Source | None) -> HttpResponse:
    form = ClaimBrowserForm(request.GET)
    if not form.is_valid():
        return bad_query(request, form)
    q, attribute = form.text("q"), form.text("attribute")
    # A source's own claims page lists that source's claims, whatever ?source= says.
    source_id = source.pk if source else form.cleaned_data.get("source")
    page = Paginator(browse_claims(q=q, source_id=source_id, attribute=attribute), PAGE_SIZE).get_page(
        form.cleaned_data.get("page")
    )
    run = latest_claims_run()
    rows = with_resolutions(page.object_list, run)
    link_browser_rows(rows)
    return render(
        request,
        "core/claims.html",
        {
            "page": page,
            "rows": rows,
            "run": run,
            "source": source,
            "q": q,
            "attribute": attribute,
            "source_id": source_id,
            "choices": claim_filter_choices(),
            "query": form.pager_query(),
            "filtered": bool(q or attribute or (source is None and source_id is not None)),
            "is_curator": is_curator(request.user),
            "unsettled": unsettled_view(run) if run else None,
        },
    )


@analyst_required
def claim_list(request: HttpRequest) -> HttpResponse:
    return _browser(request, None)


@analyst_required
def source_claims(request: HttpRequest, pk: int) -> HttpResponse:
    return _browser(request, get_object_or_404(Source.objects.only("id", "name", "reliability"), pk=pk))


@analyst_required
def claim_subject(request: HttpRequest) -> HttpResponse:
    form = ClaimItemForm(request.GET)
    if not form.is_valid():
        return bad_query(request, form)
    subject = form.text("subject")
    if not subject:
        return render(request, "core/claims_subject.html", {"subject": "", "view": None})
    chosen = _chosen_run(form)
    view = subject_view(subject, chosen)
    for attribute in view["attributes"]:
        attribute["url"] = conflict_url(subject, attribute["attribute"])
    view["graph"] = subject_graph(subject, view["rows"], view["resolved_values"]) if view["rows"] else None
    found = bool(view["attributes"])
    return render(
        request,
        "core/claims_subject.html",
        {
            "subject": subject,
            "view": view,
            "unsettled": _unsettled(chosen) if found else None,
            "is_curator": is_curator(request.user),
        },
        status=200 if found else 404,
    )


@analyst_required
def claim_conflict(request: HttpRequest) -> HttpResponse:
    form = ClaimItemForm(request.GET)
    if not form.is_valid():
        return bad_query(request, form)
    subject, attribute = form.text("subject"), form.text("attribute")
    if not subject or not attribute:
        # Reached without an item (a link cut short, the address typed): the claims browser,
        # where every item links here, says so instead of a bare 404.
        messages.info(request, "Choose an item (a subject and an attribute) to see how its sources conflict.")
        return redirect("claim-list")
    chosen = _chosen_run(form)
    view = cached_conflict_view(subject, attribute, chosen)
    if view is None:
        raise Http404("No claim about this subject and attribute.")
    return render(
        request,
        "core/claims_conflict.html",
        {"view": view, "is_curator": is_curator(request.user), "unsettled": _unsettled(chosen)},
    )
