"""Saved source groups a question can be limited to (POST /api/questions/ `source_group`)."""

from __future__ import annotations

from django.db.models import Prefetch, QuerySet
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers, viewsets

from core.api.views.base import ApiViewMixin
from core.models import SourceGroup
from core.services.source_selection import visible_groups
from sources.models import Source


class GroupSourceRefSerializer(serializers.Serializer[object]):
    id = serializers.IntegerField()
    name = serializers.CharField()
    active = serializers.BooleanField()


class SourceGroupSerializer(serializers.ModelSerializer[SourceGroup]):
    owner = serializers.CharField(source="owner.username", read_only=True, allow_null=True, default=None)
    sources = GroupSourceRefSerializer(many=True, read_only=True)

    class Meta:
        model = SourceGroup
        fields = ["id", "name", "description", "shared", "owner", "sources"]
        read_only_fields = fields


@extend_schema_view(
    list=extend_schema(summary="Source groups open to you (shared ones and your own)"),
    retrieve=extend_schema(summary="A source group and its sources"),
)
class SourceGroupViewSet(ApiViewMixin, viewsets.ReadOnlyModelViewSet[SourceGroup]):
    """Read-only: groups are edited in the admin."""

    serializer_class = SourceGroupSerializer

    def get_queryset(self) -> QuerySet[SourceGroup]:
        return (
            visible_groups(self.request.user)
            .select_related("owner")
            .prefetch_related(Prefetch("sources", Source.objects.order_by("name").only("id", "name", "active")))
            .order_by("name", "id")
        )
