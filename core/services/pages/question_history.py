"""The history page: past questions, newest first, the same question asked again folded
into one row (its latest asking, with how many times it was asked)."""

from __future__ import annotations

from datetime import date, datetime, time

from django.db.models import Count, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.utils import timezone

from core.models import Question, asked_as_norm


def question_history(
    *, strategy: str = "", q: str = "", start: date | None = None, end: date | None = None
) -> QuerySet[Question]:
    """The questions matching the filters (a strategy; words of the question, its standalone
    rewrite or its answer: "Frankie Valli" finds the question it answered; asked from ``start``
    to ``end``, both days included, in the site's time zone), one row per question as asked
    (same text, case and surrounding spaces aside; a follow-up by its standalone rewrite),
    lazily, for the pager."""
    matching = Question.objects.annotate(norm=asked_as_norm())
    if strategy:
        matching = matching.filter(strategy=strategy)
    if q:
        matching = matching.filter(Q(text__icontains=q) | Q(answer__icontains=q) | Q(standalone__icontains=q))
    tz = timezone.get_current_timezone()
    if start:
        matching = matching.filter(created_at__gte=datetime.combine(start, time.min, tzinfo=tz))
    if end:
        matching = matching.filter(created_at__lte=datetime.combine(end, time.max, tzinfo=tz))
    same = matching.filter(norm=OuterRef("norm"))
    latest = same.order_by("-created_at", "-id").values("id")[:1]
    times = same.order_by().values("norm").annotate(n=Count("id")).values("n")
    return (
        matching.filter(pk=Subquery(latest))
        .select_related("asked_by", "job")
        .annotate(vote_count=Count("votes"), times_asked=Subquery(times, output_field=IntegerField()))
        .order_by("-created_at", "-id")
        .defer("params", "clusters")  # not the notes: the list marks an answer that has some
    )
