"""Questions, estimation runs, jobs and conflicts: the engine's work as seen by tools."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from django.db.models import Prefetch, QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
    extend_schema_view,
)
from rest_framework import exceptions, mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from core.api.exceptions import TooManyRunsInProgress
from core.api.serializers.common import ErrorSerializer
from core.api.serializers.jobs import JobSerializer
from core.api.serializers.questions import (
    AskSerializer,
    QuestionAcceptedSerializer,
    QuestionDetailSerializer,
    QuestionSerializer,
)
from core.api.serializers.runs import (
    PairwiseConflictsSerializer,
    QuestionConflictsSerializer,
    ResumeRunSerializer,
    RunAcceptedSerializer,
    RunDetailSerializer,
    RunSerializer,
    StartRunSerializer,
)
from core.api.throttles import AskThrottle
from core.api.views.base import ApiViewMixin, filter_by_query, query_param
from core.models import EstimationRun, Question, ReliabilityScore, Vote
from core.services.asking import start_question
from core.services.estimation import TooManyRuns, resume_estimation_run, start_estimation_run
from core.services.insights import pairwise_disagreement, question_clusters
from tasks.jobs import wait_for_job
from tasks.models import Job

QUESTION_FILTERS = [
    OpenApiParameter("strategy", OpenApiTypes.STR),
    OpenApiParameter("asked_after", OpenApiTypes.DATETIME, description="ISO date or datetime, inclusive."),
    OpenApiParameter("asked_before", OpenApiTypes.DATETIME, description="ISO date or datetime, exclusive."),
]


@extend_schema_view(
    list=extend_schema(summary="Past questions", parameters=QUESTION_FILTERS),
    retrieve=extend_schema(summary="A question with its answer and every source's vote"),
)
class QuestionViewSet(ApiViewMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):  # type: ignore[misc]
    analyst_write_actions = ("create",)

    def get_throttles(self) -> list[Any]:
        throttles = super().get_throttles()
        if self.action == "create":
            throttles.append(AskThrottle())
        return throttles

    def get_serializer_class(self) -> Any:
        return QuestionDetailSerializer if self.action == "retrieve" else QuestionSerializer

    def get_queryset(self) -> QuerySet[Question]:
        questions = Question.objects.select_related("job", "asked_by")
        if self.action == "retrieve":
            return questions.prefetch_related(
                Prefetch("votes", Vote.objects.select_related("source").order_by("rank", "id"))
            )
        filters = {
            "strategy": ("strategy", "text"),
            "created_at__gte": ("asked_after", "moment"),
            "created_at__lt": ("asked_before", "moment"),
        }
        return filter_by_query(self.request, questions, filters)

    @extend_schema(
        summary="Ask a question (analysts and curators)",
        description=(
            "Starts answering, then waits up to `wait` seconds: 200 with the full answer when it is ready, "
            "otherwise 202 with the job; poll `status_url` (the job) and then `result_url`."
        ),
        request=AskSerializer,
        responses={200: QuestionDetailSerializer, 202: QuestionAcceptedSerializer},
    )
    def create(self, request: Request) -> Response:
        ask = AskSerializer(data=request.data)
        ask.is_valid(raise_exception=True)
        data = ask.validated_data
        with transaction.atomic():
            question = start_question(
                data["text"],
                strategy=data["strategy"],
                kappa=data.get("kappa"),
                params=data.get("params"),
                user=request.user,
            )
        job_id = question.job_id
        if job_id is not None and data["wait"] > 0:
            wait_for_job(job_id, timeout=data["wait"])
        question = self.get_queryset().model.objects.select_related("job", "asked_by").get(pk=question.pk)
        result_url = reverse("api:question-detail", args=[question.pk], request=request)
        if question.job is None or question.job.finished:
            detail = (
                self.get_queryset()
                .prefetch_related(Prefetch("votes", Vote.objects.select_related("source").order_by("rank", "id")))
                .get(pk=question.pk)
            )
            return Response(
                QuestionDetailSerializer(detail).data, status=status.HTTP_200_OK, headers={"Location": result_url}
            )
        status_url = reverse("api:job-detail", args=[job_id], request=request)
        body = {"question": question, "job": job_id, "status_url": status_url, "result_url": result_url}
        return Response(
            QuestionAcceptedSerializer(body).data, status=status.HTTP_202_ACCEPTED, headers={"Location": status_url}
        )


RUN_FILTERS = [OpenApiParameter("state", OpenApiTypes.STR, enum=EstimationRun.State.values)]


class RunConflict(exceptions.APIException):
    """409: the run's state does not allow this now (resuming a running run, say)."""

    status_code = status.HTTP_409_CONFLICT
    default_detail = "The run cannot be resumed now."
    default_code = "conflict"


@extend_schema_view(
    list=extend_schema(summary="Estimation runs", parameters=RUN_FILTERS),
    retrieve=extend_schema(summary="A run with its per-source scores and the change since the previous run"),
)
class EstimationRunViewSet(ApiViewMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):  # type: ignore[misc]
    def get_serializer_class(self) -> Any:
        return RunDetailSerializer if self.action == "retrieve" else RunSerializer

    def get_queryset(self) -> QuerySet[EstimationRun]:
        runs = EstimationRun.objects.select_related("query_set", "created_by", "job").prefetch_related("sources")
        if self.action == "retrieve":
            return runs.prefetch_related(
                Prefetch("scores", ReliabilityScore.objects.select_related("source").order_by("-reliability"))
            )
        return filter_by_query(self.request, runs, {"state": ("state", "text")})

    @extend_schema(
        summary="Start an estimation run (curators)",
        request=StartRunSerializer,
        responses={
            202: RunAcceptedSerializer,
            429: OpenApiResponse(
                ErrorSerializer, description="ESTIMATION_MAX_CONCURRENT_PER_USER runs of yours are in progress."
            ),
        },
    )
    def create(self, request: Request) -> Response:
        start = StartRunSerializer(data=request.data)
        start.is_valid(raise_exception=True)
        data = start.validated_data
        try:
            with transaction.atomic():
                run = start_estimation_run(
                    query_set=data.get("query_set"),
                    sources=data["sources"],
                    params=data.get("params"),
                    user=request.user,
                )
        except TooManyRuns as exc:
            raise TooManyRunsInProgress(" ".join(exc.messages)) from None
        except DjangoValidationError as exc:
            # The service names a parameter by itself ("tau"); the client sent it inside "params".
            known = set(StartRunSerializer().fields)
            raise exceptions.ValidationError(
                {(k if k in known else f"params.{k}"): v for k, v in exc.message_dict.items()}
            ) from None
        return self._accepted(request, run)

    def _accepted(self, request: Request, run: EstimationRun) -> Response:
        run = self.get_queryset().get(pk=run.pk)
        status_url = reverse("api:job-detail", args=[run.job_id], request=request) if run.job_id else None
        headers = {"Location": status_url} if status_url else {}
        body = {"run": run, "job": run.job_id, "status_url": status_url}
        return Response(RunAcceptedSerializer(body).data, status=status.HTTP_202_ACCEPTED, headers=headers)

    @extend_schema(
        summary="Resume a failed or interrupted run (curators)",
        description=(
            "Runs it again under a new job: its stored responses are kept, only the missing ones are "
            "generated, then the estimate is computed. 409 while its job is still running, and for a run "
            "that succeeded unless `reestimate` is true."
        ),
        request=ResumeRunSerializer,
        responses={202: RunAcceptedSerializer, 409: OpenApiResponse(description="The run cannot be resumed now.")},
    )
    @action(detail=True, methods=["post"])
    def resume(self, request: Request, pk: str | None = None) -> Response:
        run = self.get_object()
        options = ResumeRunSerializer(data=request.data)
        options.is_valid(raise_exception=True)
        try:
            with transaction.atomic():
                run = resume_estimation_run(run, user=request.user, reestimate=options.validated_data["reestimate"])
        except DjangoValidationError as exc:
            raise RunConflict(" ".join(exc.message_dict.get("run", exc.messages))) from None
        return self._accepted(request, run)


@extend_schema_view(
    list=extend_schema(
        summary="Jobs, newest first", parameters=[OpenApiParameter("kind", OpenApiTypes.STR, enum=Job.Kind.values)]
    ),
    retrieve=extend_schema(summary="A job's state, progress, message, error and result"),
)
class JobViewSet(ApiViewMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):  # type: ignore[misc]
    serializer_class = JobSerializer

    def get_queryset(self) -> QuerySet[Job]:
        jobs = Job.objects.all()
        if self.action == "list":
            # Nothing deferred: the list shows each log, and tasks.public needs the params.
            jobs = filter_by_query(self.request, jobs, {"kind": ("kind", "text")})
        return jobs

    def get_serializer_class(self) -> Any:
        return JobSerializer


class ConflictsView(ApiViewMixin, APIView):
    @extend_schema(
        summary="Where sources disagree",
        description=(
            "Without `question`: for every pair of sources, how often their answers fell in different clusters "
            "in an estimation run (`run`, default the latest finished one). With `question`: that question's "
            "answer clusters with the sources behind each, and the sources that abstained."
        ),
        parameters=[
            OpenApiParameter("question", OpenApiTypes.INT, description="Question id."),
            OpenApiParameter("run", OpenApiTypes.INT, description="Estimation run id."),
        ],
        responses={
            200: OpenApiResponse(
                PolymorphicProxySerializer(
                    component_name="Conflicts",
                    serializers=[PairwiseConflictsSerializer, QuestionConflictsSerializer],
                    resource_type_field_name=None,
                )
            )
        },
    )
    def get(self, request: Request) -> Response:
        question_id = query_param(request, "question", "id")
        if question_id is not None:
            question = get_object_or_404(Question, pk=question_id)
            return Response(QuestionConflictsSerializer(question_clusters(question)).data)
        run_id = query_param(request, "run", "id")
        run = get_object_or_404(EstimationRun, pk=run_id) if run_id is not None else None
        pairs = pairwise_disagreement(run)
        body = {"run_id": run.pk if run else (pairs[0]["run_id"] if pairs else None), "pairs": pairs}
        return Response(PairwiseConflictsSerializer(body).data)
