"""Sources: the overview with trend sparklines (most reliable first, or by name), and one
source's reliability, documents and the fact-checking queries where it disagreed with the
consensus (with the reference answers, so a source that was right against a wrong consensus
is not shown as wrong)."""

from __future__ import annotations

from typing import Any

from django.core.paginator import Paginator
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from core.forms.query import PageForm, SourceListForm
from core.roles import analyst_required
from core.services.pages.copying import latest_collusion
from core.services.pages.sources import reliability_history, source_disagreements, source_overview
from core.services.topics import latest_topic_run, topic_cells, topic_choices
from core.views.charts import reliability_chart, sparkline
from core.views.query import bad_query
from sources.models import Document, Source

SOURCE_DOCUMENTS_PAGE = 20


def sorted_sources(sources: list[dict[str, Any]], sort: str) -> list[dict[str, Any]]:
    """By reliability (highest first; sources never estimated last, by name), or by name."""
    if sort == "name":
        return sorted(sources, key=lambda s: s["name"].lower())
    return sorted(
        sources,
        key=lambda s: (s["reliability"] is None, -(s["reliability"] or 0.0), s["name"].lower()),
    )


@analyst_required
def source_list(request: HttpRequest) -> HttpResponse:
    run = latest_topic_run()
    choices = topic_choices(run)
    form = SourceListForm(request.GET, topics=choices)
    if not form.is_valid():
        return bad_query(request, form)
    sort = form.text("sort") or "reliability"
    topic = form.text("topic")
    sources = sorted_sources(source_overview(), sort)
    collusion = latest_collusion()
    for s in sources:
        s["spark"] = sparkline(s["trend"])
        s["collusion"] = collusion.get(s["id"])
        if topic:
            s["on_topic"] = next((c for c in topic_cells(run, s["id"]) if c["key"] == topic), None)
    if topic and sort == "reliability":
        sources.sort(key=lambda s: (s["on_topic"] is None, -(s["on_topic"] or {}).get("accuracy", 0.0)))
    return render(
        request,
        "core/source_list.html",
        {"sources": sources, "sort": sort, "topic": topic, "topics": choices, "topic_name": dict(choices).get(topic)},
    )


@analyst_required
def source_detail(request: HttpRequest, pk: int) -> HttpResponse:
    source = get_object_or_404(Source, pk=pk)
    form = PageForm(request.GET)
    if not form.is_valid():
        return bad_query(request, form)
    history = reliability_history(source)
    documents = (
        Document.objects.filter(source=source)
        .annotate(chunk_total=Count("chunks"))
        .only("id", "title", "url", "published_at", "ingested_at")
        .order_by("-ingested_at", "id")
    )
    page = Paginator(documents, SOURCE_DOCUMENTS_PAGE).get_page(form.cleaned_data.get("page"))
    topic_run = latest_topic_run()
    topics = topic_cells(topic_run, source.pk)
    return render(
        request,
        "core/source_detail.html",
        {
            "source": source,
            "topic_run": topic_run,
            "topics": topics,
            "topic_chart_height": 28 * len(topics) + 8,
            "history": history,
            "chart": reliability_chart(history) if history else None,
            "page": page,
            "disagreements": source_disagreements(source, limit=50),
            "collusion": latest_collusion().get(source.pk),
            # Curators upload in the admin (staff with the right to change sources).
            "can_upload": request.user.is_staff and request.user.has_perm("sources.change_source"),
        },
    )
