"""Estimation runs, their reliability scores and changes, and conflicts between sources."""

from __future__ import annotations

from typing import cast

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.api.fields import MAX_ID, IdRelatedField, StrictSerializer
from core.models import EstimationRun, QueryCollection, ReliabilityScore
from core.services.estimation import ALL_SOURCES
from core.services.estimation.checks import unsettled_blocs
from core.services.pages.runs import RunChanges, run_changes
from sources.models import Source

# --- Estimation runs ------------------------------------------------------------------


@extend_schema_field(
    {
        "oneOf": [
            {"type": "array", "items": {"type": "integer"}, "minItems": 1},
            {"type": "string", "enum": [ALL_SOURCES]},
        ]
    }
)
class RunSourcesField(serializers.Field[list[Source] | str, object, list[int] | str, object]):
    """The sources of a run: a non-empty list of source ids, or "all" (every active source
    with documents). Required: an empty request never starts a run over everything."""

    default_error_messages = {"invalid": 'Expected a list of source ids, or "all" for every active source.'}

    def __init__(self, *, help_text: str) -> None:
        super().__init__(help_text=help_text)
        self.ids = IdRelatedField(queryset=Source.objects.all(), many=True, allow_empty=False)

    def bind(self, field_name: str, parent: serializers.BaseSerializer[object]) -> None:
        super().bind(field_name, parent)
        self.ids.bind(field_name, parent)

    def to_internal_value(self, data: object) -> list[Source] | str:
        if data == ALL_SOURCES:
            return ALL_SOURCES
        if not isinstance(data, list):
            self.fail("invalid")
        # many=True made self.ids a ManyRelatedField, whose value is the list (the stubs say one).
        return cast("list[Source]", self.ids.to_internal_value(data))

    def to_representation(self, value: list[Source] | str) -> list[int] | str:
        return value if isinstance(value, str) else [s.pk for s in value]


class StartRunSerializer(StrictSerializer):
    query_set = IdRelatedField(queryset=QueryCollection.objects.all(), required=False, allow_null=True)
    sources = RunSourcesField(help_text='Source ids, or "all" for every active source with documents.')
    params = serializers.DictField(required=False, help_text="k, tau, strict clustering, prior, tolerance")


class ScoreSerializer(serializers.ModelSerializer[ReliabilityScore]):
    source_name = serializers.CharField(source="source.name", read_only=True)
    gold_accuracy = serializers.FloatField(
        read_only=True,
        allow_null=True,
        help_text="gold_agreements / gold_answers: the share of its gold-checked answers that were right "
        "(null without any), next to the estimated accuracy `reliability`.",
    )

    class Meta:
        model = ReliabilityScore
        fields = [
            "source",
            "source_name",
            "reliability",
            "weight",
            "low",
            "high",
            "answers",
            "agreements",
            "gold_answers",
            "gold_agreements",
            "gold_accuracy",
        ]
        read_only_fields = fields


class RunSerializer(serializers.ModelSerializer[EstimationRun]):
    query_set_name = serializers.CharField(source="query_set.name", read_only=True, allow_null=True, default=None)
    # Never "running" under a job that has ended (EstimationRun.effective_state).
    state = serializers.ChoiceField(choices=EstimationRun.State.choices, source="effective_state", read_only=True)
    created_by = serializers.CharField(source="created_by.username", read_only=True, allow_null=True, default=None)
    sources: serializers.PrimaryKeyRelatedField[Source] = serializers.PrimaryKeyRelatedField(many=True, read_only=True)
    unsettled_blocs = serializers.SerializerMethodField(
        help_text="Every group of sources the run's estimate leaves unsettled (its `identification`: agreement "
        "does not say whether the group or the sources outvoting it are right), largest first, each a list of "
        "{id, name}; [] when the run is identified. Text and claim runs alike."
    )

    @extend_schema_field(
        {
            "type": "array",
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"id": {"type": "integer"}, "name": {"type": "string"}},
                    "required": ["id", "name"],
                },
            },
        }
    )
    def get_unsettled_blocs(self, run: EstimationRun) -> list[list[dict[str, object]]]:
        return [[dict(s) for s in bloc] for bloc in unsettled_blocs(run.identification or {})]

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
            "kind",
            "parent",
            "gold_queries",
            "identification",
            "unsettled_blocs",
            # How answer probabilities relate to being right on the run's checked queries
            # (slope, intercept, queries, examples, ece_before, ece_after, diagram); {} without checks.
            "calibration",
            # Reliability per topic: {"model": {topics: [{key, name, size, ...}]}, "cells":
            # {source id: [{key, accuracy, low, high, answers}]}, "unsettled": [keys], "copy_groups":
            # {key: [[source ids]]}, per settled topic the groups found copying on its queries}; {}
            # without topics.
            "topics",
        ]
        read_only_fields = fields


class RunChangeSerializer(serializers.Serializer[object]):
    source_id = serializers.IntegerField()
    source_name = serializers.CharField()
    status = serializers.ChoiceField(choices=["new", "changed", "dropped"])
    reliability = serializers.FloatField(allow_null=True)
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)
    answers = serializers.IntegerField(allow_null=True)
    agreements = serializers.IntegerField(allow_null=True)
    gold_answers = serializers.IntegerField(allow_null=True)
    gold_agreements = serializers.IntegerField(allow_null=True)
    gold_accuracy = serializers.FloatField(allow_null=True)
    previous_reliability = serializers.FloatField(allow_null=True)
    previous_answers = serializers.IntegerField(allow_null=True)
    delta = serializers.FloatField(allow_null=True)


class RunChangesSerializer(serializers.Serializer[object]):
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
    def get_changes(self, run: EstimationRun) -> RunChanges:
        return run_changes(run)


class ResumeRunSerializer(StrictSerializer):
    reestimate = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Also accept a run that succeeded: compute its estimate again from its stored responses.",
    )


class GoldUpdateSerializer(StrictSerializer):
    queries = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_ID),
        required=False,
        allow_empty=False,
        max_length=10000,
        help_text="Fact-query ids whose reference answers to add; default: every query of the run's set with "
        "reference answers the run has not used yet.",
    )


class DependenceExampleSerializer(serializers.Serializer[object]):
    """A run over fact-checking queries names the query and the answer; a claim-level run the
    item (subject, attribute) and the value."""

    query_id = serializers.IntegerField(required=False)
    query = serializers.CharField(allow_blank=True, required=False)
    answer = serializers.CharField(allow_blank=True, required=False, help_text="The false answer both sources gave.")
    subject = serializers.CharField(allow_blank=True, required=False)
    attribute = serializers.CharField(allow_blank=True, required=False)
    value = serializers.CharField(allow_blank=True, required=False, help_text="The false value both sources claim.")


class DependencePairSerializer(serializers.Serializer[object]):
    run_id = serializers.IntegerField()
    source_a = serializers.IntegerField()
    source_a_name = serializers.CharField()
    source_b = serializers.IntegerField()
    source_b_name = serializers.CharField()
    probability = serializers.FloatField(help_text="Posterior probability that the two sources are dependent.")
    shared = serializers.IntegerField(help_text="Queries both answered.")
    same_true = serializers.FloatField(help_text="Expected shared answers that are true.")
    same_false = serializers.FloatField(help_text="Expected shared answers that are false: the evidence of copying.")
    different = serializers.IntegerField(help_text="Shared queries where their answers differ.")
    examples = DependenceExampleSerializer(many=True, help_text="Up to 5 false answers both gave.")


class RunDependenceSerializer(serializers.Serializer[object]):
    run_id = serializers.IntegerField()
    copy_detection = serializers.BooleanField(help_text="Whether the run's estimator detects copying.")
    threshold = serializers.FloatField(help_text="Pairs at or above this probability are reported as dependent.")
    unsettled = serializers.BooleanField(
        help_text="The run's estimate is not identified by agreement (its `identification`): the answers called "
        "false are false only if the estimate's group of sources is right, so a dependent pair may be honest "
        "sources that a larger group outvotes. Not evidence of copying until checks settle the run."
    )
    pairs = DependencePairSerializer(many=True)


class RunAcceptedSerializer(serializers.Serializer[object]):
    run = RunSerializer()
    job = serializers.IntegerField(allow_null=True)
    status_url = serializers.CharField(allow_null=True)


# --- Conflicts ------------------------------------------------------------------------


class DisagreementSerializer(serializers.Serializer[object]):
    run_id = serializers.IntegerField()
    source_a = serializers.IntegerField()
    source_a_name = serializers.CharField()
    source_b = serializers.IntegerField()
    source_b_name = serializers.CharField()
    shared = serializers.IntegerField()
    disagreements = serializers.IntegerField()
    rate = serializers.FloatField()


class PairwiseConflictsSerializer(serializers.Serializer[object]):
    run_id = serializers.IntegerField(allow_null=True)
    pairs = DisagreementSerializer(many=True)
    copy_detection = serializers.BooleanField(
        help_text="Whether the run stored pairwise dependence (its estimator detects copying)."
    )
    dependent_pairs = DependencePairSerializer(
        many=True, help_text="Pairs detected as copying or colluding (probability >= 0.5), most likely first."
    )
    unsettled = serializers.BooleanField(
        help_text="The run's estimate is not identified by agreement: its dependent pairs may be honest sources "
        "that a larger group outvotes, so they are not evidence of copying until checks settle the run."
    )


class ClusterMemberSerializer(serializers.Serializer[object]):
    source_id = serializers.IntegerField()
    source_name = serializers.CharField()
    response = serializers.CharField(allow_blank=True)
    weight = serializers.FloatField()
    reliability = serializers.FloatField(allow_null=True)
    filtered = serializers.BooleanField()


class AnswerClusterSerializer(serializers.Serializer[object]):
    id = serializers.IntegerField()
    label = serializers.CharField(allow_blank=True)  # type: ignore[assignment]  # a declared field (DRF's metaclass collects it), not Field.label
    weight = serializers.FloatField()
    share = serializers.FloatField(
        allow_null=True, help_text="Its share of the summed vote weight; null when the votes carry (almost) no weight."
    )
    chosen = serializers.BooleanField()
    sources = ClusterMemberSerializer(many=True)


class QuestionConflictsSerializer(serializers.Serializer[object]):
    question_id = serializers.IntegerField()
    answer = serializers.CharField(allow_blank=True)
    clusters = AnswerClusterSerializer(many=True)
    abstained = ClusterMemberSerializer(many=True)
