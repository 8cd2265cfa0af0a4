"""Claims pages: the browser (all claims, or one source's), one subject's attributes with
their resolved values, and one item's conflict view. The data comes from
core.services.claims_view; these views only read the query string and render."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from core.models import EstimationRun
from core.roles import is_curator
from core.services import claims_view
from core.views.access import analyst_required
from sources.models import Source

PAGE_SIZE = 25


def _chosen_run(request: HttpRequest) -> EstimationRun | None:
    """The claims run named by ?run= (404 when it is not a succeeded claims run), else None: the latest."""
    run_id = request.GET.get("run", "")
    if not run_id:
        return None
    if not run_id.isdigit():
        raise Http404("No such claims run.")
    return get_object_or_404(claims_view.claims_runs(), pk=int(run_id))


def _browser(request: HttpRequest, source: Source | None) -> HttpResponse:
    q = request.GET.get("q", "").strip()[:200]
    attribute = request.GET.get("attribute", "").strip()[:200]
    source_id = source.pk if source else None
    chosen = request.GET.get("source", "")
    if source is None and chosen.isdigit():
        source_id = int(chosen)
    page = Paginator(claims_view.browse_claims(q=q, source_id=source_id, attribute=attribute), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    run = claims_view.latest_claims_run()
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "core/claims.html",
        {
            "page": page,
            "rows": claims_view.with_resolutions(page.object_list, run),
            "run": run,
            "source": source,
            "q": q,
            "attribute": attribute,
            "source_id": source_id,
            "choices": claims_view.claim_filter_choices(),
            "query": query.urlencode(),
            "filtered": bool(q or attribute or (source is None and source_id is not None)),
            "is_curator": is_curator(request.user),
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
    subject = request.GET.get("subject", "").strip()
    if not subject:
        return render(request, "core/claims_subject.html", {"subject": "", "view": None})
    view = claims_view.subject_view(subject, _chosen_run(request))
    found = bool(view["attributes"])
    return render(request, "core/claims_subject.html", {"subject": subject, "view": view}, status=200 if found else 404)


@analyst_required
def claim_conflict(request: HttpRequest) -> HttpResponse:
    subject = request.GET.get("subject", "").strip()
    attribute = request.GET.get("attribute", "").strip()
    if not subject or not attribute:
        # Reached without an item (a link cut short, the address typed): the claims browser,
        # where every item links here, says so instead of a bare 404.
        messages.info(request, "Choose an item (a subject and an attribute) to see how its sources conflict.")
        return redirect("claim-list")
    view = claims_view.cached_conflict_view(subject, attribute, _chosen_run(request))
    if view is None:
        raise Http404("No claim about this subject and attribute.")
    return render(request, "core/claims_conflict.html", {"view": view, "is_curator": is_curator(request.user)})
