"""Asking questions, and the answered questions with their votes and clusters."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.api.fields import MAX_ID, StrictSerializer, Text
from core.engine.strategies import available_strategies
from core.engine.types import JSONObject
from core.models import Question, Vote
from core.services.asking import MAX_KAPPA, MAX_QUESTION_CHARS
from core.services.source_selection import MAX_CHOSEN, selection_seen_by, visible_groups
from tasks.models import Job


class AskSerializer(StrictSerializer):
    text = Text(max_length=MAX_QUESTION_CHARS)
    strategy = serializers.ChoiceField(choices=available_strategies(), default="ra-rag")
    kappa = serializers.IntegerField(
        min_value=1,
        max_value=MAX_KAPPA,
        required=False,
        allow_null=True,
        help_text="Shortcut for params.kappa; ignored by strategies that take no kappa.",
    )
    params = serializers.DictField(
        required=False,
        help_text="The strategy's own parameters (GET /api/strategies/ lists them); unknown names are refused.",
    )
    include_sources = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_ID),
        required=False,
        max_length=MAX_CHOSEN,
        help_text="Ask only these sources (ids of active sources), plus those of `source_group`.",
    )
    exclude_sources = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_ID),
        required=False,
        max_length=MAX_CHOSEN,
        help_text="Never ask these sources (ids); with neither `include_sources` nor `source_group`: "
        "every active source but these.",
    )
    source_group = serializers.IntegerField(
        min_value=1,
        max_value=MAX_ID,
        required=False,
        allow_null=True,
        help_text="Ask the sources of this saved group (GET /api/source-groups/ lists those open to you).",
    )
    follows = serializers.IntegerField(
        min_value=1,
        max_value=MAX_ID,
        required=False,
        allow_null=True,
        help_text="Ask this as a follow-up of that answered question (its id): the text may say he, it, there... "
        "and is rewritten into a standalone question (`standalone` in the answer) before retrieval.",
    )
    wait = serializers.FloatField(
        min_value=0, max_value=30, default=0, help_text="Seconds to wait for the answer before answering 202."
    )


class PassageSerializer(serializers.Serializer[object]):
    chunk_id = serializers.IntegerField(required=False, allow_null=True)
    document_id = serializers.IntegerField(required=False, allow_null=True)
    title = serializers.CharField(required=False, allow_blank=True)
    url = serializers.CharField(required=False, allow_blank=True)
    text = serializers.CharField(required=False, allow_blank=True)
    distance = serializers.FloatField(required=False, allow_null=True)


class VoteSerializer(serializers.ModelSerializer[Vote]):
    source_name = serializers.CharField(source="source.name", read_only=True)
    passages = PassageSerializer(many=True, read_only=True)

    class Meta:
        model = Vote
        fields = [
            "source",
            "source_name",
            "rank",
            "raw_response",
            "backend",
            "response",
            "filtered",
            "align_score",
            "cluster",
            "weight",
            "reliability",
            "passages",
        ]
        read_only_fields = fields


class ClusterSerializer(serializers.Serializer[object]):
    id = serializers.IntegerField(allow_null=True, required=False)
    label = serializers.CharField(required=False, allow_blank=True)  # type: ignore[assignment]  # a declared field (DRF's metaclass collects it), not Field.label
    members = serializers.ListField(child=serializers.JSONField(), required=False)
    weight = serializers.FloatField(required=False, allow_null=True)


class EvidenceSerializer(serializers.Serializer[object]):
    chunk_id = serializers.IntegerField(help_text="The chunk read (0 for a claim: see claim_id).")
    claim_id = serializers.IntegerField(
        required=False, allow_null=True, help_text="The claim this evidence is (claim strategies, e.g. multirag)."
    )
    source_id = serializers.IntegerField()
    document_id = serializers.IntegerField(allow_null=True)
    distance = serializers.FloatField()
    used = serializers.BooleanField(help_text="The answer rests on this chunk.")
    credibility = serializers.FloatField(allow_null=True, help_text="Per-document credibility in [0, 1], if estimated.")


class GraphNodeSerializer(serializers.Serializer[object]):
    id = serializers.CharField()
    kind = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]  # a declared field (DRF's metaclass collects it), not Field.label
    source_id = serializers.IntegerField(allow_null=True)
    confidence = serializers.FloatField(allow_null=True)


class GraphEdgeSerializer(serializers.Serializer[object]):
    a = serializers.CharField()
    b = serializers.CharField()
    kind = serializers.CharField()
    weight = serializers.FloatField()


class AnswerGraphSerializer(serializers.Serializer[object]):
    nodes = GraphNodeSerializer(many=True)
    edges = GraphEdgeSerializer(many=True)
    confidence = serializers.FloatField(allow_null=True)


class NamedSourceSerializer(serializers.Serializer[object]):
    id = serializers.IntegerField()
    name = serializers.CharField()


class SourceSelectionSerializer(serializers.Serializer[object]):
    include = NamedSourceSerializer(many=True, required=False, help_text="The sources the asker included.")
    exclude = NamedSourceSerializer(many=True, required=False, help_text="The sources the asker excluded.")
    group = NamedSourceSerializer(required=False, allow_null=True, help_text="The saved group asked, if any.")
    allowed = NamedSourceSerializer(
        many=True,
        required=False,
        help_text="The active sources the question could read, resolved when asked (left out with `private_group`).",
    )
    private_group = serializers.BooleanField(
        required=False,
        help_text="True when the asker chose another analyst's private group: its name and sources are not shown "
        "(`group` is null and `allowed` left out).",
    )
    _visible_group_ids: set[int] | None = None

    def get_attribute(self, instance: object) -> JSONObject:
        """The question's selection as the requesting user may see it (selection_seen_by)."""
        record: JSONObject = super().get_attribute(instance) or {}  # the question's stored JSON
        if not record.get("group"):
            return record
        user = getattr(self.context.get("request"), "user", None)
        if self._visible_group_ids is None:  # once per response, however many questions it lists
            self._visible_group_ids = set(visible_groups(user).values_list("pk", flat=True))
        return selection_seen_by(
            record,
            user,
            asked_by_id=instance.asked_by_id if isinstance(instance, Question) else None,
            visible_group_ids=self._visible_group_ids,
        )

    def to_representation(self, instance: object) -> dict[str, object]:
        return super().to_representation(instance) if instance else {}  # {}: every active source


class QuestionSerializer(serializers.ModelSerializer[Question]):
    state = serializers.SerializerMethodField()
    error = serializers.SerializerMethodField()
    asked_by = serializers.CharField(source="asked_by.username", read_only=True, allow_null=True, default=None)
    clusters = ClusterSerializer(many=True, read_only=True)
    evidence = EvidenceSerializer(many=True, read_only=True)
    graph = AnswerGraphSerializer(read_only=True, allow_null=True)
    trace = serializers.JSONField(read_only=True, help_text="How the strategy reached the answer (visit order, ...).")
    source_selection = SourceSelectionSerializer(
        read_only=True,
        help_text="The sources the asker allowed ({} when every active source was allowed).",
    )
    chunk_ids = serializers.SerializerMethodField(help_text="Every chunk the strategy read, in first-read order.")
    follows: serializers.PrimaryKeyRelatedField[Question] = serializers.PrimaryKeyRelatedField(
        read_only=True, allow_null=True, help_text="The question this one follows up (null for none)."
    )
    standalone = serializers.CharField(
        read_only=True,
        help_text="A follow-up rewritten into a standalone question, which retrieval and answering use "
        "(rewritten by rules when asked; by the language model, if one is configured, when answered); "
        "empty for a question that follows none.",
    )
    low_evidence = serializers.BooleanField(
        read_only=True,
        help_text="The answer rests on little evidence: confidence below 0.5, or a caveat in `notes` "
        "(its sources were never checked, or on few answers). False until answered, and for no answer.",
    )

    class Meta:
        model = Question
        fields = [
            "id",
            "text",
            "follows",
            "standalone",
            "strategy",
            "params",
            "state",
            "error",
            "answer",
            "confidence",
            "backend",
            "clusters",
            "evidence",
            "chunk_ids",
            "graph",
            "trace",
            "source_selection",
            "calls",
            "tokens",
            "seconds",
            "notes",
            "low_evidence",
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

    def get_chunk_ids(self, question: Question) -> list[int]:
        return list(dict.fromkeys(int(e["chunk_id"]) for e in question.evidence or [] if e.get("claim_id") is None))

    def get_error(self, question: Question) -> str:
        return question.job.error if question.job is not None else ""


class QuestionDetailSerializer(QuestionSerializer):
    votes = VoteSerializer(many=True, read_only=True)

    class Meta(QuestionSerializer.Meta):
        fields = [*QuestionSerializer.Meta.fields, "votes"]
        read_only_fields = fields


class QuestionAcceptedSerializer(serializers.Serializer[object]):
    question = QuestionSerializer()
    job = serializers.IntegerField()
    status_url = serializers.CharField()
    result_url = serializers.CharField()
