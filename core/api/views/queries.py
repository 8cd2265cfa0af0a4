"""Query sets and fact-checking queries: read for analysts; curators create sets and set the
reference answers that make a query gold-checked."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Count, Q, QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, viewsets
from rest_framework.serializers import BaseSerializer

from core.api.serializers.queries import FactQuerySerializer, QuerySetSerializer
from core.api.views.base import ApiViewMixin, filter_by_query, query_param
from core.models import FactQuery, QueryCollection


@extend_schema_view(
    list=extend_schema(summary="Query sets, with how many queries and gold-checked queries each holds"),
    retrieve=extend_schema(summary="A query set"),
    create=extend_schema(
        summary="Create a query set with its queries (curators); all or nothing",
        description="`queries`: `[{question, reference_answers, tags}]`; a query with reference answers is gold-checked.",
    ),
)
class QuerySetViewSet(
    ApiViewMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    viewsets.GenericViewSet[QueryCollection],
):
    serializer_class = QuerySetSerializer

    def get_queryset(self) -> QuerySet[QueryCollection]:
        return QueryCollection.objects.annotate(
            query_count=Count("queries", distinct=True),
            gold_count=Count("queries", filter=~Q(queries__reference_answers=[]), distinct=True),
        ).order_by("name")

    def perform_create(self, serializer: BaseSerializer[QueryCollection]) -> None:
        with transaction.atomic():
            serializer.save()


@extend_schema_view(
    list=extend_schema(
        summary="Fact-checking queries",
        parameters=[
            OpenApiParameter("query_set", OpenApiTypes.INT, description="Query set id."),
            OpenApiParameter(
                "gold", OpenApiTypes.BOOL, description="Only queries with (true) or without (false) reference answers."
            ),
        ],
    ),
    retrieve=extend_schema(summary="A fact-checking query with its reference answers"),
    partial_update=extend_schema(
        summary="Set a query's reference answers or tags (curators)",
        description="The question itself cannot change: past runs' responses answer it. After adding reference "
        "answers to queries of a finished run, `POST /api/estimation-runs/{id}/update/` adds them to its estimate.",
    ),
)
class FactQueryViewSet(
    ApiViewMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.UpdateModelMixin,
    viewsets.GenericViewSet[FactQuery],
):
    serializer_class = FactQuerySerializer
    http_method_names = ["get", "patch", "head", "options"]

    def get_queryset(self) -> QuerySet[FactQuery]:
        queries = FactQuery.objects.order_by("query_set_id", "id")
        if self.action != "list":
            return queries
        queries = filter_by_query(self.request, queries, {"query_set_id": ("query_set", "id")})
        wanted = query_param(self.request, "gold", "bool")
        if wanted is True:
            queries = queries.exclude(reference_answers=[])
        elif wanted is False:
            queries = queries.filter(reference_answers=[])
        return queries

    def perform_update(self, serializer: BaseSerializer[FactQuery]) -> None:
        with transaction.atomic():
            serializer.save()
