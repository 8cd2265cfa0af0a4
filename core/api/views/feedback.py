"""Feedback on answers: analysts post it, curators confirm or reject it (core.services.feedback).

Analysts see their own feedback, curators everyone's. Confirming a verdict with a right answer
makes it a gold-checked query of the "Analyst feedback" query set."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import exceptions, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.serializers.feedback import FeedbackSerializer, NewFeedbackSerializer, ReviewSerializer
from core.api.views.base import ApiViewMixin, filter_by_query
from core.models import AnswerFeedback
from core.roles import is_curator
from core.services.feedback import confirm_feedback, record_feedback, reject_feedback


class FeedbackConflict(exceptions.APIException):
    """409: confirming would contradict the gold other confirmed feedback already gave."""

    status_code = status.HTTP_409_CONFLICT
    default_detail = "The feedback contradicts existing gold."
    default_code = "conflict"


FEEDBACK_FILTERS = [
    OpenApiParameter("question", OpenApiTypes.INT, description="Question id."),
    OpenApiParameter("status", OpenApiTypes.STR, enum=AnswerFeedback.Status.values),
    OpenApiParameter("kind", OpenApiTypes.STR, enum=AnswerFeedback.Kind.values),
]


@extend_schema_view(
    list=extend_schema(
        summary="Feedback on answers (analysts: their own; curators: everyone's)", parameters=FEEDBACK_FILTERS
    ),
    retrieve=extend_schema(summary="One feedback item"),
)
class FeedbackViewSet(ApiViewMixin, viewsets.ReadOnlyModelViewSet[AnswerFeedback]):
    serializer_class = FeedbackSerializer
    queryset = AnswerFeedback.objects.none()  # the schema's path parameter type; get_queryset filters
    analyst_write_actions = ("create",)

    def get_queryset(self) -> QuerySet[AnswerFeedback]:
        feedback = AnswerFeedback.objects.select_related("user", "source", "reviewed_by").order_by("-updated_at", "-id")
        if not is_curator(self.request.user):
            feedback = feedback.filter(user=self.request.user)  # type: ignore[misc]  # signed in (RolePermission)
        if self.action != "list":
            return feedback
        return filter_by_query(
            self.request,
            feedback,
            {"question_id": ("question", "id"), "status": ("status", "text"), "kind": ("kind", "text")},
        )

    @extend_schema(
        summary="Give feedback on an answered question (analysts and curators)",
        description=(
            "One feedback per (user, question, kind, source): 201 when new, 200 when it updated yours (a reviewed "
            "one that changes goes back to `pending`). `answer_right` or `answer_wrong` replaces your opposite "
            "verdict while that one is pending. 400 naming the field for a question not answered yet, a source "
            'that did not answer it (or said "I don\'t know"), an `answer_right` on "I don\'t know" or with a '
            "`corrected_answer`, a corrected answer equal to the one called wrong."
        ),
        request=NewFeedbackSerializer,
        responses={200: FeedbackSerializer, 201: FeedbackSerializer},
    )
    def create(self, request: Request) -> Response:
        given = NewFeedbackSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        data = given.validated_data
        feedback, created = record_feedback(
            data["question"],
            request.user,
            data["kind"],
            source=data.get("source"),
            corrected_answer=data.get("corrected_answer"),
            comment=data.get("comment"),
        )
        body = FeedbackSerializer(self.get_queryset().get(pk=feedback.pk)).data
        return Response(body, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    def _review(self, request: Request, confirm: bool) -> Response:
        feedback = self.get_object()
        ReviewSerializer(data=request.data).is_valid(raise_exception=True)
        try:
            if confirm:
                confirm_feedback(feedback, request.user)
            else:
                reject_feedback(feedback, request.user)
        except DjangoValidationError as exc:
            raise FeedbackConflict(" ".join(exc.messages)) from None
        return Response(FeedbackSerializer(self.get_queryset().get(pk=feedback.pk)).data)

    @extend_schema(
        summary="Confirm feedback (curators): a right answer becomes a gold-checked query",
        description=(
            "`answer_right`: the question's answer, `answer_wrong` / `source_wrong` with a `corrected_answer`: that "
            'answer, becomes the reference answer of the question\'s query in the "Analyst feedback" query set '
            "(`gold_query`), which estimation runs over that set use as gold. Without a right answer it is kept "
            "as a known wrong answer (`known_wrong`), which estimation does not use. 409 `conflict` when the "
            "answer contradicts the reference answer other confirmed feedback gave the same question."
        ),
        request=ReviewSerializer,
        responses={200: FeedbackSerializer, 409: OpenApiResponse(description="Contradicts existing gold.")},
    )
    @action(detail=True, methods=["post"])
    def confirm(self, request: Request, pk: str | None = None) -> Response:
        return self._review(request, confirm=True)

    @extend_schema(
        summary="Reject feedback (curators); gold it made is taken back",
        request=ReviewSerializer,
        responses={200: FeedbackSerializer},
    )
    @action(detail=True, methods=["post"])
    def reject(self, request: Request, pk: str | None = None) -> Response:
        return self._review(request, confirm=False)
