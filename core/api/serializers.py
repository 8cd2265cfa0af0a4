"""What the API reads and writes. Output shapes are explicit so the OpenAPI schema is exact."""

from __future__ import annotations

from typing import Any

from django.core.validators import URLValidator
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.api.fields import StrictModelSerializer, StrictSerializer, Text
from core.engine.strategies import available_strategies
from core.models import EstimationRun, QuerySet, Question, ReliabilityScore, Vote
from core.services.asking import MAX_KAPPA, MAX_QUESTION_CHARS
from sources.ingest import ADAPTERS
from sources.models import Document, Source
from tasks.models import Job

# --- Errors (documented on every operation) -------------------------------------------


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    fields = serializers.DictField(child=serializers.ListField(child=serializers.CharField()))


class ErrorSerializer(serializers.Serializer):
    error = ErrorDetailSerializer()


# --- Sources --------------------------------------------------------------------------


class ReliabilitySerializer(serializers.Serializer):
    value = serializers.FloatField(allow_null=True, help_text="Estimated accuracy in [0, 1]; null if never estimated.")
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)
    uncertainty = serializers.FloatField(allow_null=True, help_text="high - low")
    answers = serializers.IntegerField(help_text="Non-IDK answers the score rests on.")
    updated_at = serializers.DateTimeField(allow_null=True)


class SourceSerializer(StrictModelSerializer):
    # Blank is allowed, so not "format: uri" in the schema (an empty string is no URI).
    homepage = Text(required=False, allow_blank=True, max_length=200, validators=[URLValidator()])
    reliability = serializers.SerializerMethodField()
    document_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Source
        fields = [
            "id",
            "name",
            "kind",
            "homepage",
            "description",
            "active",
            "created_at",
            "updated_at",
            "chunk_count",
            "document_count",
            "reliability",
        ]
        read_only_fields = ["id", "created_at", "updated_at", "chunk_count", "document_count"]

    @extend_schema_field(ReliabilitySerializer)
    def get_reliability(self, source: Source) -> dict[str, Any]:
        low, high = source.reliability_low, source.reliability_high
        return {
            "value": source.reliability,
            "low": low,
            "high": high,
            "uncertainty": high - low if low is not None and high is not None else None,
            "answers": source.reliability_answers,
            "updated_at": source.reliability_updated_at,
        }


class ReliabilityPointSerializer(serializers.Serializer):
    run_id = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    reliability = serializers.FloatField()
    low = serializers.FloatField()
    high = serializers.FloatField()
    answers = serializers.IntegerField()
    agreements = serializers.IntegerField()
    weight = serializers.FloatField()


class ReliabilityHistorySerializer(serializers.Serializer):
    source = serializers.IntegerField()
    name = serializers.CharField()
    history = ReliabilityPointSerializer(many=True)


# --- Documents ------------------------------------------------------------------------


class DocumentSerializer(serializers.ModelSerializer):
    url = serializers.CharField(read_only=True)
    source_name = serializers.CharField(source="source.name", read_only=True)
    excerpt = serializers.SerializerMethodField()

    class Meta:
        model = Document
        fields = ["id", "source", "source_name", "title", "url", "published_at", "ingested_at", "job", "excerpt"]
        read_only_fields = fields

    def get_excerpt(self, document: Document) -> str:
        return document.text[:300]


class DocumentDetailSerializer(DocumentSerializer):
    chunk_count = serializers.IntegerField(read_only=True)

    class Meta(DocumentSerializer.Meta):
        fields = [*DocumentSerializer.Meta.fields, "text", "metadata", "chunk_count"]
        read_only_fields = fields


FORMATS = [adapter.name for adapter in ADAPTERS]


class DocumentItemSerializer(StrictSerializer):
    """One document of a JSON upload; its content is checked by the JSON ingestion adapter."""

    text = Text(allow_blank=True, trim_whitespace=False)
    title = Text(required=False, allow_blank=True, allow_null=True)
    url = Text(required=False, allow_blank=True, allow_null=True)
    published = Text(required=False, allow_blank=True, allow_null=True, help_text="ISO date or datetime")


class JsonUploadSerializer(StrictSerializer):
    source = serializers.PrimaryKeyRelatedField(queryset=Source.objects.all())
    documents = DocumentItemSerializer(many=True, allow_empty=False)


class MultipartUploadSerializer(StrictSerializer):
    source = serializers.PrimaryKeyRelatedField(queryset=Source.objects.all())
    files = serializers.ListField(child=serializers.FileField(allow_empty_file=True), allow_empty=False)
    format = serializers.ChoiceField(
        choices=FORMATS, required=False, help_text="Overrides detection by file extension."
    )


class UploadAcceptedSerializer(serializers.Serializer):
    job = serializers.IntegerField()
    status_url = serializers.CharField()
    source = serializers.IntegerField()
    files = serializers.IntegerField()
    documents = serializers.IntegerField(help_text="Documents parsed (before de-duplication).")


# --- Jobs -----------------------------------------------------------------------------


class ProgressSerializer(serializers.Serializer):
    current = serializers.IntegerField()
    total = serializers.IntegerField()
    percent = serializers.IntegerField()


class JobSerializer(serializers.ModelSerializer):
    progress = serializers.SerializerMethodField()

    class Meta:
        model = Job
        fields = [
            "id",
            "kind",
            "state",
            "progress",
            "message",
            "error",
            "result",
            "log",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields

    @extend_schema_field(ProgressSerializer)
    def get_progress(self, job: Job) -> dict[str, int]:
        return {"current": job.progress_current, "total": job.progress_total, "percent": job.percent}


# --- Questions ------------------------------------------------------------------------


class AskSerializer(StrictSerializer):
    text = Text(max_length=MAX_QUESTION_CHARS)
    strategy = serializers.ChoiceField(choices=available_strategies(), default="ra-rag")
    kappa = serializers.IntegerField(min_value=1, max_value=MAX_KAPPA, required=False, allow_null=True)
    wait = serializers.FloatField(
        min_value=0, max_value=30, default=0, help_text="Seconds to wait for the answer before answering 202."
    )


class PassageSerializer(serializers.Serializer):
    chunk_id = serializers.IntegerField(required=False, allow_null=True)
    document_id = serializers.IntegerField(required=False, allow_null=True)
    title = serializers.CharField(required=False, allow_blank=True)
    url = serializers.CharField(required=False, allow_blank=True)
    text = serializers.CharField(required=False, allow_blank=True)
    distance = serializers.FloatField(required=False, allow_null=True)


class VoteSerializer(serializers.ModelSerializer):
    source_name = serializers.CharField(source="source.name", read_only=True)
    passages = PassageSerializer(many=True, read_only=True)

    class Meta:
        model = Vote
        fields = [
            "source",
            "source_name",
            "rank",
            "raw_response",
            "response",
            "filtered",
            "align_score",
            "cluster",
            "weight",
            "reliability",
            "passages",
        ]
        read_only_fields = fields


class ClusterSerializer(serializers.Serializer):
    id = serializers.IntegerField(allow_null=True, required=False)
    label = serializers.CharField(required=False, allow_blank=True)
    members = serializers.ListField(child=serializers.JSONField(), required=False)
    weight = serializers.FloatField(required=False, allow_null=True)


class QuestionSerializer(serializers.ModelSerializer):
    state = serializers.SerializerMethodField()
    error = serializers.SerializerMethodField()
    asked_by = serializers.CharField(source="asked_by.username", read_only=True, allow_null=True, default=None)
    clusters = ClusterSerializer(many=True, read_only=True)

    class Meta:
        model = Question
        fields = [
            "id",
            "text",
            "strategy",
            "params",
            "state",
            "error",
            "answer",
            "confidence",
            "backend",
            "clusters",
            "calls",
            "tokens",
            "seconds",
            "notes",
            "job",
            "asked_by",
            "created_at",
            "answered_at",
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.ChoiceField(choices=Job.State.choices))
    def get_state(self, question: Question) -> str:
        if question.job is not None:
            return question.job.state
        return Job.State.SUCCEEDED if question.answered_at else Job.State.PENDING

    def get_error(self, question: Question) -> str:
        return question.job.error if question.job is not None else ""


class QuestionDetailSerializer(QuestionSerializer):
    votes = VoteSerializer(many=True, read_only=True)

    class Meta(QuestionSerializer.Meta):
        fields = [*QuestionSerializer.Meta.fields, "votes"]
        read_only_fields = fields


class QuestionAcceptedSerializer(serializers.Serializer):
    question = QuestionSerializer()
    job = serializers.IntegerField()
    status_url = serializers.CharField()
    result_url = serializers.CharField()


# --- Estimation runs ------------------------------------------------------------------


class StartRunSerializer(StrictSerializer):
    query_set = serializers.PrimaryKeyRelatedField(queryset=QuerySet.objects.all(), required=False, allow_null=True)
    sources = serializers.PrimaryKeyRelatedField(queryset=Source.objects.all(), many=True, required=False)
    params = serializers.DictField(required=False, help_text="k, tau, strict clustering, prior, tolerance")


class ScoreSerializer(serializers.ModelSerializer):
    source_name = serializers.CharField(source="source.name", read_only=True)

    class Meta:
        model = ReliabilityScore
        fields = ["source", "source_name", "reliability", "weight", "low", "high", "answers", "agreements"]
        read_only_fields = fields


class RunSerializer(serializers.ModelSerializer):
    query_set_name = serializers.CharField(source="query_set.name", read_only=True, allow_null=True, default=None)
    created_by = serializers.CharField(source="created_by.username", read_only=True, allow_null=True, default=None)
    sources = serializers.PrimaryKeyRelatedField(many=True, read_only=True)

    class Meta:
        model = EstimationRun
        fields = [
            "id",
            "query_set",
            "query_set_name",
            "sources",
            "params",
            "state",
            "backend",
            "iterations",
            "converged",
            "job",
            "created_by",
            "created_at",
            "finished_at",
        ]
        read_only_fields = fields


class RunChangeSerializer(serializers.Serializer):
    source_id = serializers.IntegerField()
    source_name = serializers.CharField()
    status = serializers.ChoiceField(choices=["new", "changed", "dropped"])
    reliability = serializers.FloatField(allow_null=True)
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)
    answers = serializers.IntegerField(allow_null=True)
    previous_reliability = serializers.FloatField(allow_null=True)
    previous_answers = serializers.IntegerField(allow_null=True)
    delta = serializers.FloatField(allow_null=True)


class RunChangesSerializer(serializers.Serializer):
    run_id = serializers.IntegerField()
    previous_run_id = serializers.IntegerField(allow_null=True)
    sources = RunChangeSerializer(many=True)


class RunDetailSerializer(RunSerializer):
    scores = ScoreSerializer(many=True, read_only=True)
    changes = serializers.SerializerMethodField()

    class Meta(RunSerializer.Meta):
        fields = [*RunSerializer.Meta.fields, "scores", "changes"]
        read_only_fields = fields

    @extend_schema_field(RunChangesSerializer)
    def get_changes(self, run: EstimationRun) -> dict[str, Any]:
        from core.services.insights import run_changes

        return run_changes(run)


class RunAcceptedSerializer(serializers.Serializer):
    run = RunSerializer()
    job = serializers.IntegerField(allow_null=True)
    status_url = serializers.CharField(allow_null=True)


# --- Conflicts ------------------------------------------------------------------------


class DisagreementSerializer(serializers.Serializer):
    run_id = serializers.IntegerField()
    source_a = serializers.IntegerField()
    source_a_name = serializers.CharField()
    source_b = serializers.IntegerField()
    source_b_name = serializers.CharField()
    shared = serializers.IntegerField()
    disagreements = serializers.IntegerField()
    rate = serializers.FloatField()


class PairwiseConflictsSerializer(serializers.Serializer):
    run_id = serializers.IntegerField(allow_null=True)
    pairs = DisagreementSerializer(many=True)


class ClusterMemberSerializer(serializers.Serializer):
    source_id = serializers.IntegerField()
    source_name = serializers.CharField()
    response = serializers.CharField(allow_blank=True)
    weight = serializers.FloatField()
    reliability = serializers.FloatField(allow_null=True)
    filtered = serializers.BooleanField()


class AnswerClusterSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    label = serializers.CharField(allow_blank=True)
    weight = serializers.FloatField()
    share = serializers.FloatField()
    chosen = serializers.BooleanField()
    sources = ClusterMemberSerializer(many=True)


class QuestionConflictsSerializer(serializers.Serializer):
    question_id = serializers.IntegerField()
    answer = serializers.CharField(allow_blank=True)
    clusters = AnswerClusterSerializer(many=True)
    abstained = ClusterMemberSerializer(many=True)


class TokenRequestSerializer(serializers.Serializer):
    username = serializers.CharField()
    password = serializers.CharField()


class TokenSerializer(serializers.Serializer):
    token = serializers.CharField()
