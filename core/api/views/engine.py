"""Questions, estimation runs, jobs and conflicts: the engine's work as seen by tools."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
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
from rest_framework import exceptions, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.throttling import BaseThrottle
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
    GoldUpdateSerializer,
    PairwiseConflictsSerializer,
    QuestionConflictsSerializer,
    ResumeRunSerializer,
    RunAcceptedSerializer,
    RunDependenceSerializer,
    RunDetailSerializer,
    RunSerializer,
    StartRunSerializer,
)
from core.api.throttles import AskThrottle
from core.api.views.base import ApiViewMixin, accepted, filter_by_query, query_param
from core.models import EstimationRun, Question, ReliabilityScore, Vote
from core.services.asking import start_question
from core.services.estimation import (
    TooManyRuns,
    apply_gold_update,
    refuse_gold_update,
    resume_claim_run,
    resume_estimation_run,
    start_estimation_run,
)
from core.services.estimation.finish import DEPENDENT
from core.services.pages.conflicts import default_conflict_run, pairwise_disagreement
from core.services.pages.copying import dependent_pairs, has_copy_detection, run_dependence, unsettled
from core.services.pages.question import question_clusters
from core.services.pages.run_sets import finished_full_runs
from core.services.source_selection import SourceChoice
from tasks.jobs import cancel_job, may_cancel, wait_for_job
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
class QuestionViewSet(ApiViewMixin, viewsets.ReadOnlyModelViewSet[Question]):
    analyst_write_actions = ("create",)

    def get_throttles(self) -> list[BaseThrottle]:
        throttles = super().get_throttles()
        if self.action == "create":
            throttles.append(AskThrottle())
        return throttles

    def get_serializer_class(self) -> type[QuestionSerializer]:
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
            "otherwise 202 with the job; poll `status_url` (the job) and then `result_url`. A server process "
            "lets at most ASK_WAIT_SLOTS requests wait at once (default 2): past that, 202 at once."
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
                sources=SourceChoice.of(
                    include=data.get("include_sources"),
                    exclude=data.get("exclude_sources"),
                    group=data.get("source_group"),
                ),
                user=request.user,
                follows=data.get("follows"),
            )
        job_id = question.job_id
        if job_id is not None and data["wait"] > 0:
            with wait_slot() as waiting:
                if waiting:  # else every slot is taken: answer 202 now rather than hold a server thread
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
                QuestionDetailSerializer(detail, context=self.get_serializer_context()).data,
                status=status.HTTP_200_OK,
                headers={"Location": result_url},
            )
        body = {"question": question, "result_url": result_url}
        return accepted(request, job_id, QuestionAcceptedSerializer, body, self.get_serializer_context())


RUN_FILTERS = [OpenApiParameter("state", OpenApiTypes.STR, enum=EstimationRun.State.values)]


_wait_slots: threading.BoundedSemaphore | None = None
_wait_slots_size = -1
_wait_slots_lock = threading.Lock()


@contextmanager
def wait_slot() -> Iterator[bool]:
    """One of this process's ASK_WAIT_SLOTS places to wait on an answer, if one is free (True),
    else False at once: waiting clients never hold every thread of the web server (issue 38
    row 7: 20 clients waiting 10 s each held gunicorn's 8 threads, and a plain page took 34 s)."""
    global _wait_slots, _wait_slots_size
    size = int(settings.ASK_WAIT_SLOTS)
    with _wait_slots_lock:
        if _wait_slots is None or _wait_slots_size != size:
            _wait_slots, _wait_slots_size = threading.BoundedSemaphore(max(size, 1)), size
        slots = _wait_slots
    got = size > 0 and slots.acquire(blocking=False)
    try:
        yield got
    finally:
        if got:
            slots.release()


class JobConflict(exceptions.APIException):
    """409: the job has ended, so it cannot be cancelled."""

    status_code = status.HTTP_409_CONFLICT
    default_detail = "The job had ended already."
    default_code = "conflict"


class RunConflict(exceptions.APIException):
    """409: the run's state does not allow this now (resuming a running run, say)."""

    status_code = status.HTTP_409_CONFLICT
    default_detail = "The run cannot be resumed now."
    default_code = "conflict"


@extend_schema_view(
    list=extend_schema(summary="Estimation runs", parameters=RUN_FILTERS),
    retrieve=extend_schema(summary="A run with its per-source scores and the change since the previous run"),
)
class EstimationRunViewSet(ApiViewMixin, viewsets.ReadOnlyModelViewSet[EstimationRun]):
    def get_serializer_class(self) -> type[RunSerializer]:
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
        return accepted(request, run.job_id, RunAcceptedSerializer, {"run": run})

    @extend_schema(
        summary="Pairwise dependence between the run's sources (copying, collusion)",
        description=(
            "Every pair of sources the run's estimator examined for copying (estimators that detect it: "
            "accucopy), most likely dependent first, with the evidence: shared answers expected true and false, "
            "and up to 5 false answers both gave. Empty with `copy_detection: false` for other estimators. "
            "An incremental update shows its full run's. `unsettled: true` when the run's estimate is not "
            "identified by agreement: the pairs may then be the honest group a larger group outvotes."
        ),
        responses={200: RunDependenceSerializer},
    )
    @action(detail=True, methods=["get"])
    def dependence(self, request: Request, pk: str | None = None) -> Response:
        run = self.get_object()
        body = {
            "run_id": run.pk,
            "copy_detection": has_copy_detection(run),
            "threshold": DEPENDENT,
            "unsettled": unsettled(run),
            "pairs": run_dependence(run),
        }
        return Response(RunDependenceSerializer(body).data)

    @extend_schema(
        summary="Add new gold evidence to a finished run, incrementally (curators)",
        description=(
            "After reference answers were added to queries of the run's set: recomputes only those queries' gold "
            "labels from the stored responses, adds the evidence to each source's reliability (Beta posterior) and "
            "stores the result as a new run of kind `update` whose `parent` is this run; sources whose latest "
            "score was this run's move to it. 201 with the new run. 409 for a run that has not succeeded and for "
            "a claim-level run (no queries); 400 on `queries` when there is nothing new to add."
        ),
        request=GoldUpdateSerializer,
        responses={201: RunDetailSerializer, 409: OpenApiResponse(description="The run cannot be updated now.")},
    )
    @action(detail=True, methods=["post"], url_path="update", url_name="update")
    def gold_update(self, request: Request, pk: str | None = None) -> Response:
        run = self.get_object()
        options = GoldUpdateSerializer(data=request.data)
        options.is_valid(raise_exception=True)
        try:
            refuse_gold_update(run)  # a claim-level run has no fact-checking queries to add gold to
            with transaction.atomic():
                update = apply_gold_update(run, options.validated_data.get("queries"), user=request.user)
        except DjangoValidationError as exc:
            errors = exc.message_dict
            if "run" in errors:
                raise RunConflict(" ".join(errors["run"])) from None
            raise exceptions.ValidationError(errors) from None
        detail = self.get_queryset().prefetch_related(
            Prefetch("scores", ReliabilityScore.objects.select_related("source").order_by("-reliability"))
        )
        return Response(RunDetailSerializer(detail.get(pk=update.pk)).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Resume a failed or interrupted run (curators)",
        description=(
            "Runs it again under a new job: its stored responses are kept, only the missing ones are "
            "generated, then the estimate is computed (a claim-level run resolves its sources' claims again). "
            "409 while its job is still running, and for a run that succeeded unless `reestimate` is true. "
            "429 when ESTIMATION_MAX_CONCURRENT_PER_USER runs of yours are in progress (started or resumed)."
        ),
        request=ResumeRunSerializer,
        responses={
            202: RunAcceptedSerializer,
            409: OpenApiResponse(description="The run cannot be resumed now."),
            429: OpenApiResponse(
                ErrorSerializer, description="ESTIMATION_MAX_CONCURRENT_PER_USER runs of yours are in progress."
            ),
        },
    )
    @action(detail=True, methods=["post"])
    def resume(self, request: Request, pk: str | None = None) -> Response:
        run = self.get_object()
        options = ResumeRunSerializer(data=request.data)
        options.is_valid(raise_exception=True)
        # A claim-level run is resolved again from its sources' claims; a full run resumes its responses.
        resume = resume_claim_run if run.kind == EstimationRun.Kind.CLAIMS else resume_estimation_run
        try:
            with transaction.atomic():
                run = resume(run, user=request.user, reestimate=options.validated_data["reestimate"])
        except TooManyRuns as exc:
            raise TooManyRunsInProgress(" ".join(exc.messages)) from None
        except DjangoValidationError as exc:
            raise RunConflict(" ".join(exc.message_dict.get("run", exc.messages))) from None
        return self._accepted(request, run)


@extend_schema_view(
    list=extend_schema(
        summary="Jobs, newest first", parameters=[OpenApiParameter("kind", OpenApiTypes.STR, enum=Job.Kind.values)]
    ),
    retrieve=extend_schema(summary="A job's state, progress, message, error and result"),
)
class JobViewSet(ApiViewMixin, viewsets.ReadOnlyModelViewSet[Job]):
    serializer_class = JobSerializer
    analyst_write_actions = ("cancel",)  # who started a job may cancel it (checked in the action)

    @extend_schema(
        summary="Cancel a pending or running job (who started it, or a curator)",
        description=(
            'The job ends now, failed with "Cancelled by <user>"; its worker stops at its next batch and a '
            "pending one is never started. What it stored is kept (an estimation run is marked failed, so it can "
            "be resumed from its stored responses). 200 with the job; 409 when it had ended already; 403 for "
            "someone else's job unless you are a curator."
        ),
        request=None,
        responses={200: JobSerializer, 409: OpenApiResponse(description="The job had ended already.")},
    )
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        job = self.get_object()
        if not may_cancel(job, request.user):
            raise exceptions.PermissionDenied("Only who started this job, or a curator, may cancel it.")
        if not cancel_job(job.pk, by=request.user.get_username()):
            raise JobConflict(f"Job #{job.pk} had already ended ({job.state}).")
        job.refresh_from_db()
        return Response(JobSerializer(job).data)

    def get_queryset(self) -> QuerySet[Job]:
        jobs = Job.objects.all()
        if self.action == "list":
            # Nothing deferred: the list shows each log, and tasks.public needs the params.
            jobs = filter_by_query(self.request, jobs, {"kind": ("kind", "text")})
        return jobs

    def get_serializer_class(self) -> type[JobSerializer]:
        return JobSerializer


class ConflictsView(ApiViewMixin, APIView):
    @extend_schema(
        summary="Where sources disagree",
        description=(
            "Without `question`: for every pair of sources, how often their answers fell in different clusters "
            "in an estimation run (`run`, default the latest finished full run in which two sources answered a shared "
            "query, as on the conflicts page), and the pairs its estimator "
            "detected as copying or colluding (`dependent_pairs`, probability >= 0.5, with the false answers "
            "they share; `copy_detection` is false for estimators that do not detect copying). With `question`: "
            "that question's answer clusters with the sources behind each, and the sources that abstained."
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
        if run_id is not None:
            run: EstimationRun | None = get_object_or_404(EstimationRun, pk=run_id)
        else:
            run, _newer_without_pairs = default_conflict_run(list(finished_full_runs()[:30]))
        pairs = pairwise_disagreement(run) if run is not None else []
        body = {
            "run_id": run.pk if run else None,
            "pairs": pairs,
            "copy_detection": has_copy_detection(run) if run is not None else False,
            "dependent_pairs": dependent_pairs(run) if run is not None else [],
            "unsettled": unsettled(run) if run is not None else False,
        }
        return Response(PairwiseConflictsSerializer(body).data)
