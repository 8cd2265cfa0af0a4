"""Claims, their homologous groups (with MultiRAG's confidence), claim-level resolutions,
loading claims and starting claim-level runs: analysts read, curators write."""

from __future__ import annotations

import json

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from django.db.models import Q, QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import exceptions, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import FormParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.exceptions import TooManyRunsInProgress
from core.api.parsers import LimitedMultiPartParser
from core.api.serializers.claims import (
    ClaimGroupSerializer,
    ClaimLoadAcceptedSerializer,
    ClaimLoadSerializer,
    ClaimResolutionSerializer,
    ClaimRunAcceptedSerializer,
    ClaimSerializer,
    StartClaimRunSerializer,
)
from core.api.serializers.common import ErrorSerializer
from core.api.views.base import ApiViewMixin, accepted, filter_by_query, query_param
from core.api.views.catalogue import _read_files
from core.engine.claims.mapping import ClaimMapping, MappingError
from core.engine.jsondepth import JsonTooDeep, loads_bounded
from core.models import ClaimResolution, EstimationRun
from core.services.estimation import TooManyRuns, start_claim_run
from core.services.pages.claim_scoring import item_rows, multirag_answer, score_rows, shown_values
from sources.claim_loading import start_claim_load
from sources.ingest import IngestError
from sources.models import Claim

CLAIM_FILTERS = [
    OpenApiParameter("source", OpenApiTypes.INT, description="Source id."),
    OpenApiParameter("subject", OpenApiTypes.STR, description="Exact subject (entity)."),
    OpenApiParameter("attribute", OpenApiTypes.STR, description="Exact attribute."),
    OpenApiParameter("method", OpenApiTypes.STR, enum=Claim.Method.values, description="How it was extracted."),
    OpenApiParameter("q", OpenApiTypes.STR, description="Subject or value contains (case-insensitive)."),
]


@extend_schema_view(
    list=extend_schema(summary="List claims", parameters=CLAIM_FILTERS),
    retrieve=extend_schema(summary="A claim with its provenance"),
)
class ClaimViewSet(ApiViewMixin, viewsets.ReadOnlyModelViewSet[Claim]):
    serializer_class = ClaimSerializer

    def get_queryset(self) -> QuerySet[Claim]:
        claims = Claim.objects.select_related("source").order_by("subject", "attribute", "source_id", "id")
        if self.action != "list":
            return claims
        claims = filter_by_query(
            self.request,
            claims,
            {
                "source_id": ("source", "id"),
                "subject": ("subject", "text"),
                "attribute": ("attribute", "text"),
                "method": ("method", "text"),
            },
        )
        text = query_param(self.request, "q", "text")
        if text is not None:
            claims = claims.filter(Q(subject__icontains=text) | Q(value__icontains=text))
        return claims

    @extend_schema(
        summary="Load structured or semi-structured files as claims through a mapping (curators)",
        description=(
            "Multipart `files` (CSV/TSV, JSON, JSONL, XML, JSON-LD), `mapping` (a JSON string: which field is the "
            "subject, which fields are attributes with which normaliser, optionally which field names each "
            "record's source), `source` (a source name, for a file of one source) and `format` (overrides "
            "detection by extension). A bad mapping is a 400 naming its key (`mapping.subject`, ...). Loading is "
            "all or nothing per upload and idempotent (a claim already held is updated, not repeated); it runs "
            "as a job: 202 with the job to poll."
        ),
        request={"multipart/form-data": ClaimLoadSerializer},
        responses={
            202: ClaimLoadAcceptedSerializer,
            413: OpenApiResponse(ErrorSerializer, description="A file or the body is over the limit."),
        },
    )
    @action(detail=False, methods=["post"], url_path="load", parser_classes=[LimitedMultiPartParser, FormParser])
    def load(self, request: Request) -> Response:
        upload = ClaimLoadSerializer(data=request.data)
        upload.is_valid(raise_exception=True)
        data = upload.validated_data
        mapping = parse_mapping(data["mapping"])
        blobs = _read_files(data["files"])
        try:
            with transaction.atomic():
                job = start_claim_load(
                    blobs,
                    mapping,
                    source=data.get("source") or None,
                    format_name=data.get("format") or None,
                    user=request.user,
                )
        except IngestError as exc:  # every file is parsed first: the file, line and field at fault
            field = "source" if exc.field == "source" and not exc.filename else "files"
            raise exceptions.ValidationError({field: [str(exc) if field == "files" else exc.reason]}) from None
        return accepted(request, job.pk, ClaimLoadAcceptedSerializer, {"files": len(blobs)})


def _mapping_key(exc: MappingError) -> str:
    return f"mapping.{exc.field}" if exc.field and exc.field != "mapping" else "mapping"


def parse_mapping(text: str) -> ClaimMapping:
    """The mapping of an upload, validated by the engine; a 400 names the key at fault."""
    try:
        data = loads_bounded(text, settings.JSON_MAX_DEPTH)
    except JsonTooDeep as exc:
        raise exceptions.ValidationError({"mapping": [str(exc)]}) from None
    except json.JSONDecodeError as exc:
        raise exceptions.ValidationError({"mapping": [f"not valid JSON: {exc.msg} (line {exc.lineno})"]}) from None
    try:
        return ClaimMapping.from_json(data)
    except MappingError as exc:
        raise exceptions.ValidationError({_mapping_key(exc): [exc.reason]}) from None


# --- Homologous groups ----------------------------------------------------------------


def latest_resolution(subject: str, attribute: str) -> ClaimResolution | None:
    """The item's resolution by the latest succeeded claim-level run that resolved it."""
    return (
        ClaimResolution.objects.filter(
            subject=subject,
            attribute=attribute,
            run__state=EstimationRun.State.SUCCEEDED,
            run__kind=EstimationRun.Kind.CLAIMS,
        )
        .order_by("-run__created_at", "-run_id")
        .first()
    )


def claim_group(subject: str, attribute: str) -> dict[str, object] | None:
    """One homologous group: its values with the sources behind each, the latest resolution
    and MultiRAG's confidence (as the pages compute it: core.services.pages.claim_scoring); None when
    no claim is on the item."""
    rows = item_rows(subject, attribute)
    if not rows:
        return None
    resolution = latest_resolution(subject, attribute)
    # Values within the tolerance the mapping declares are one value (as the run and pages show them).
    shown = shown_values(rows, resolution.value, resolution.values) if resolution is not None else shown_values(rows)
    values: dict[str, list[dict[str, object]]] = {}
    for r in rows:
        values.setdefault(shown[r["value"]], []).append(
            {
                "id": r["source_id"],
                "name": r["source__name"],
                "claim_id": r["id"],
                "reliability": r["source__reliability"],
                "value": r["value"],
            }
        )
    scored = score_rows(rows, subject, attribute)
    answer, answer_share = multirag_answer(scored, rows)
    return {
        "subject": subject,
        "attribute": attribute,
        "claims": len(rows),
        "sources": len({r["source_id"] for r in rows}),
        "values": [
            {"value": value, "claims": len(sources), "sources": sources}
            for value, sources in sorted(values.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        ],
        "resolution": None
        if resolution is None
        else {
            "run_id": resolution.run_id,
            "value": resolution.value,
            "confidence": resolution.confidence,
            "conflicting": resolution.conflicting,
            "claims": resolution.claims,
            "values": resolution.values,
        },
        "confidence": {
            "confidence": scored.confidence,
            "entropy_agreement": scored.entropy_agreement,
            "kept": scored.kept,
            "isolated": scored.isolated,
            "llm_used": scored.llm_used,
            "answer": shown.get(answer, answer),
            "answer_share": answer_share,
            "nodes": [
                {
                    "claim_id": n.claim_id,
                    "source_id": n.source_id,
                    "value": shown.get(n.value, n.value),
                    "consistency": n.consistency,
                    "authority": n.authority,
                    "llm_authority": n.llm_authority,
                    "historical_authority": n.historical_authority,
                    "confidence": n.confidence,
                    "kept": n.kept,
                }
                for n in scored.nodes
            ],
        },
    }


class ClaimGroupView(ApiViewMixin, APIView):
    @extend_schema(
        summary="One homologous group: every source's value on one (subject, attribute)",
        description=(
            "The values claimed, most claimed first, with the sources asserting each (and their current "
            "reliability); the latest succeeded claim-level run's resolution of the item (null without one); and "
            "MultiRAG's confidence: graph level (how much the group's claims agree) and node level (each claim's "
            "consistency with the group plus its source's authority). 404 when no claim is on the item."
        ),
        parameters=[
            OpenApiParameter("subject", OpenApiTypes.STR, required=True),
            OpenApiParameter("attribute", OpenApiTypes.STR, required=True),
        ],
        responses={200: ClaimGroupSerializer},
    )
    def get(self, request: Request) -> Response:
        subject = query_param(request, "subject", "text")
        attribute = query_param(request, "attribute", "text")
        missing = {
            name: ["This query parameter is required."]
            for name, v in (("subject", subject), ("attribute", attribute))
            if v is None
        }
        if subject is None or attribute is None:
            raise exceptions.ValidationError(missing)
        group = claim_group(subject, attribute)
        if group is None:
            raise exceptions.NotFound(f"No claim on subject {subject[:100]!r}, attribute {attribute[:100]!r}.")
        return Response(ClaimGroupSerializer(group).data)


# --- Resolutions ----------------------------------------------------------------------


def latest_claim_run() -> EstimationRun | None:
    return (
        EstimationRun.objects.filter(kind=EstimationRun.Kind.CLAIMS, state=EstimationRun.State.SUCCEEDED)
        .order_by("-created_at", "-id")
        .first()
    )


@extend_schema_view(
    list=extend_schema(
        summary="A claim-level run's resolved items",
        description="Every (subject, attribute) the run resolved: the value, its confidence, and every value claimed "
        "with the sources behind it. Default run: the latest succeeded claim-level run (an empty list without one).",
        parameters=[
            OpenApiParameter("run", OpenApiTypes.INT, description="Claim-level run id."),
            OpenApiParameter("subject", OpenApiTypes.STR, description="Exact subject."),
            OpenApiParameter("attribute", OpenApiTypes.STR, description="Exact attribute."),
            OpenApiParameter("conflicting", OpenApiTypes.BOOL, description="Only items with more than one value."),
        ],
    ),
    retrieve=extend_schema(summary="One resolved item"),
)
class ClaimResolutionViewSet(ApiViewMixin, viewsets.ReadOnlyModelViewSet[ClaimResolution]):
    serializer_class = ClaimResolutionSerializer

    def get_queryset(self) -> QuerySet[ClaimResolution]:
        resolutions = ClaimResolution.objects.order_by("subject", "attribute", "id")
        if self.action != "list":
            return resolutions
        run_id = query_param(self.request, "run", "id")
        if run_id is None:
            latest = latest_claim_run()
            if latest is None:
                return resolutions.none()
            run_id = latest.pk
        return filter_by_query(
            self.request,
            resolutions.filter(run_id=run_id),
            {
                "subject": ("subject", "text"),
                "attribute": ("attribute", "text"),
                "conflicting": ("conflicting", "bool"),
            },
        )


# --- Claim-level runs -----------------------------------------------------------------


class ClaimRunView(ApiViewMixin, APIView):
    @extend_schema(
        summary="Start a claim-level estimation run (curators)",
        description=(
            "Resolves every (subject, attribute) of the chosen sources' claims (default: every active source with "
            "claims) to a value with confidence, and estimates the sources' reliability from their claims, as a "
            "job: 202 with the run and its job. 400 when there are no claims, or on an unknown source or attribute. "
            "Optional ``authorities``: sources a curator declares authoritative (their agreed values fix their items; "
            "a number measured with them is not a no-gold one)."
        ),
        request=StartClaimRunSerializer,
        responses={
            202: ClaimRunAcceptedSerializer,
            429: OpenApiResponse(
                ErrorSerializer, description="ESTIMATION_MAX_CONCURRENT_PER_USER runs of yours are in progress."
            ),
        },
    )
    def post(self, request: Request) -> Response:
        start = StartClaimRunSerializer(data=request.data)
        start.is_valid(raise_exception=True)
        data = start.validated_data
        try:
            with transaction.atomic():
                run = start_claim_run(
                    source_ids=data.get("sources"),
                    estimator=data.get("estimator"),
                    attributes=data.get("attributes"),
                    authorities=data.get("authorities"),
                    user=request.user,
                )
        except TooManyRuns as exc:
            raise TooManyRunsInProgress(" ".join(exc.messages)) from None
        except DjangoValidationError as exc:
            raise exceptions.ValidationError(exc.message_dict) from None
        run = (
            EstimationRun.objects.select_related("query_set", "created_by", "job")
            .prefetch_related("sources")
            .get(pk=run.pk)
        )
        return accepted(request, run.job_id, ClaimRunAcceptedSerializer, {"run": run})
