"""Sources: the overview with trend sparklines, and one source's reliability, documents and
the fact-checking queries where it disagreed with the consensus."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from core.services.insights import reliability_history, source_disagreements, source_overview
from core.views.access import analyst_required
from core.views.charts import reliability_chart, sparkline
from sources.models import Document, Source


@analyst_required
def source_list(request: HttpRequest) -> HttpResponse:
    sources = source_overview()
    for s in sources:
        s["spark"] = sparkline(s["trend"])
    return render(request, "core/source_list.html", {"sources": sources})


@analyst_required
def source_detail(request: HttpRequest, pk: int) -> HttpResponse:
    source = get_object_or_404(Source, pk=pk)
    history = reliability_history(source)
    documents = (
        Document.objects.filter(source=source)
        .annotate(chunk_total=Count("chunks"))
        .only("id", "title", "url", "published_at", "ingested_at")
        .order_by("-ingested_at", "id")
    )
    page = Paginator(documents, 20).get_page(request.GET.get("page"))
    return render(
        request,
        "core/source_detail.html",
        {
            "source": source,
            "history": history,
            "chart": reliability_chart(history) if history else None,
            "page": page,
            "disagreements": source_disagreements(source, limit=50),
        },
    )
