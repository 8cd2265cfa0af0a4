"""Sources and documents: read for analysts, write (and bulk upload) for curators."""

from __future__ import annotations

import json

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.db.models import Count, QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import exceptions, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import BaseParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from core.api.exceptions import PayloadTooLarge
from core.api.serializers.common import ErrorSerializer
from core.api.serializers.sources import (
    DocumentDetailSerializer,
    DocumentSerializer,
    JsonUploadSerializer,
    MultipartUploadSerializer,
    ReliabilityHistorySerializer,
    SourceSerializer,
    UploadAcceptedSerializer,
)
from core.api.views.base import UPLOAD_PARSERS, ApiViewMixin, accepted, filter_by_query
from core.engine.types import JSONObject
from core.services.pages.sources import reliability_history
from sources.ingest import IngestError
from sources.models import Document, Source
from sources.services import start_upload_ingest, validate_uploads

SOURCE_FILTERS = [
    OpenApiParameter("active", OpenApiTypes.BOOL, description="Only active (true) or deactivated (false) sources."),
    OpenApiParameter("kind", OpenApiTypes.STR, enum=Source.Kind.values),
    OpenApiParameter("q", OpenApiTypes.STR, description="Name contains (case-insensitive)."),
]


@extend_schema_view(
    list=extend_schema(summary="List sources", parameters=SOURCE_FILTERS),
    retrieve=extend_schema(summary="A source with its current reliability"),
    create=extend_schema(summary="Create a source (curators)"),
    update=extend_schema(summary="Replace a source's editable fields (curators)"),
    partial_update=extend_schema(summary="Change some of a source's fields (curators)"),
    destroy=extend_schema(
        summary="Deactivate a source (curators); sources are never deleted",
        responses={200: SourceSerializer},
    ),
)
class SourceViewSet(ApiViewMixin, viewsets.ModelViewSet[Source]):
    serializer_class = SourceSerializer
    http_method_names = ["get", "post", "put", "patch", "delete", "head", "options"]

    def get_queryset(self) -> QuerySet[Source]:
        sources = Source.objects.annotate(document_count=Count("documents")).order_by("name")
        if self.action != "list":
            return sources
        return filter_by_query(
            self.request,
            sources,
            {"active": ("active", "bool"), "kind": ("kind", "text"), "name__icontains": ("q", "text")},
        )

    def perform_create(self, serializer: BaseSerializer[Source]) -> None:
        with transaction.atomic():
            source = serializer.save()
        setattr(source, "document_count", 0)  # noqa: B010 - the list's annotation (Count), which a new source lacks

    def perform_update(self, serializer: BaseSerializer[Source]) -> None:
        with transaction.atomic():
            serializer.save()

    def _deactivate(self) -> Response:
        source = self.get_object()
        if source.active:
            source.active = False
            source.save(update_fields=["active", "updated_at"])
        return Response(self.get_serializer(source).data)

    def destroy(self, request: Request, *args: object, **kwargs: object) -> Response:
        return self._deactivate()

    @extend_schema(summary="Deactivate a source (curators)", request=None, responses={200: SourceSerializer})
    @action(detail=True, methods=["post"])
    def deactivate(self, request: Request, pk: str | None = None) -> Response:
        return self._deactivate()

    @extend_schema(
        summary="The source's reliability across finished estimation runs", responses=ReliabilityHistorySerializer
    )
    @action(detail=True, methods=["get"])
    def reliability(self, request: Request, pk: str | None = None) -> Response:
        source = self.get_object()
        body = {"source": source.pk, "name": source.name, "history": reliability_history(source)}
        return Response(ReliabilityHistorySerializer(body).data)


DOCUMENT_FILTERS = [
    OpenApiParameter("source", OpenApiTypes.INT, description="Source id."),
    OpenApiParameter("published_after", OpenApiTypes.DATETIME, description="ISO date or datetime, inclusive."),
    OpenApiParameter("published_before", OpenApiTypes.DATETIME, description="ISO date or datetime, exclusive."),
    OpenApiParameter("ingested_after", OpenApiTypes.DATETIME, description="ISO date or datetime, inclusive."),
    OpenApiParameter("ingested_before", OpenApiTypes.DATETIME, description="ISO date or datetime, exclusive."),
]


@extend_schema_view(
    list=extend_schema(summary="List documents", parameters=DOCUMENT_FILTERS),
    retrieve=extend_schema(summary="A document with its text", responses=DocumentDetailSerializer),
)
class DocumentViewSet(ApiViewMixin, viewsets.ReadOnlyModelViewSet[Document]):
    def get_parsers(self) -> list[BaseParser]:
        return [parser() for parser in UPLOAD_PARSERS]

    def get_serializer_class(self) -> type[DocumentSerializer]:
        return DocumentDetailSerializer if self.action == "retrieve" else DocumentSerializer

    def get_queryset(self) -> QuerySet[Document]:
        documents = Document.objects.select_related("source")
        if self.action == "retrieve":
            return documents.annotate(chunk_count=Count("chunks"))
        documents = documents.defer("metadata")
        filters = {
            "source_id": ("source", "id"),
            "published_at__gte": ("published_after", "moment"),
            "published_at__lt": ("published_before", "moment"),
            "ingested_at__gte": ("ingested_after", "moment"),
            "ingested_at__lt": ("ingested_before", "moment"),
        }
        return filter_by_query(self.request, documents, filters)

    @extend_schema(
        summary="Upload documents into a source (curators); all or nothing",
        description=(
            "Multipart files (any supported format) or JSON `{source, documents: [{text, title, url, published}]}`. "
            "Everything is parsed now with the ingestion adapters: any error is a 400 naming the file, line and "
            "field, and nothing is stored. Otherwise an ingestion job starts: 202 with the job to poll."
        ),
        request={"application/json": JsonUploadSerializer, "multipart/form-data": MultipartUploadSerializer},
        responses={
            202: UploadAcceptedSerializer,
            413: OpenApiResponse(ErrorSerializer, description="A file or the body is over the limit."),
        },
    )
    def create(self, request: Request) -> Response:
        if request.content_type.startswith("multipart/"):
            upload: MultipartUploadSerializer | JsonUploadSerializer = MultipartUploadSerializer(data=request.data)
            upload.is_valid(raise_exception=True)
            blobs = _read_files(upload.validated_data["files"])
            options = {"format": upload.validated_data["format"]} if upload.validated_data.get("format") else {}
            field = "files"
        else:
            upload = JsonUploadSerializer(data=request.data)
            upload.is_valid(raise_exception=True)
            records = [{k: v for k, v in doc.items() if v is not None} for doc in request.data["documents"]]
            blobs = [("documents.json", json.dumps(records, ensure_ascii=False).encode("utf-8"))]
            options = {}
            field = "documents"
        source = upload.validated_data["source"]
        if not source.active:
            raise exceptions.ValidationError({"source": ["This source is deactivated; reactivate it first."]})
        counts = _validate(blobs, options, field)
        with transaction.atomic():
            job = start_upload_ingest(source, blobs, options=options, user=request.user)
        body = {"source": source.pk, "files": len(blobs), "documents": sum(counts)}
        return accepted(request, job.pk, UploadAcceptedSerializer, body)


def _read_files(files: list[UploadedFile]) -> list[tuple[str, bytes]]:
    limit = settings.INGEST_MAX_FILE_BYTES
    for upload in files:
        if (upload.size or 0) > limit:
            raise PayloadTooLarge(f"{upload.name}: file is {upload.size} bytes, over the limit of {limit}.")
    return [(upload.name or "upload", upload.read()) for upload in files]


def _validate(blobs: list[tuple[str, bytes]], options: JSONObject, field: str) -> list[int]:
    """Parse everything with the ingestion adapters; the first error names file, line and field."""
    try:
        return validate_uploads(blobs, options)
    except IngestError as exc:
        if field == "documents" and exc.field and exc.field.startswith("["):
            # "[3].published" from the JSON adapter -> "documents.3.published"
            index, _, rest = exc.field[1:].partition("]")
            name = f"documents.{index}" + (f".{rest.lstrip('.')}" if rest.strip(".") else "")
            raise exceptions.ValidationError({name: [exc.reason]}) from None
        raise exceptions.ValidationError({field: [str(exc)]}) from None
