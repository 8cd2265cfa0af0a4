"""Claims, homologous groups with their confidence, claim-level resolutions, loading claims
and starting claim-level runs."""

from __future__ import annotations

from rest_framework import serializers

from core.api.fields import MAX_ID, StrictSerializer, Text
from core.api.serializers.runs import RunSerializer
from core.engine.reliability import available_estimators
from core.models import ClaimResolution
from sources.ingest.claim_formats import CLAIM_FORMATS
from sources.models import Claim

# --- Claims ---------------------------------------------------------------------------


class ClaimSerializer(serializers.ModelSerializer[Claim]):
    source_name = serializers.CharField(source="source.name", read_only=True)
    provenance = serializers.DictField(
        read_only=True, help_text='Where the claim came from: {"file", "line" | "record" | "path", "field"}.'
    )

    class Meta:
        model = Claim
        fields = [
            "id",
            "source",
            "source_name",
            "subject",
            "attribute",
            "value",
            "raw_value",
            "normalizer",
            "method",
            "provenance",
            "document",
            "job",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields
        extra_kwargs = {
            "value": {"help_text": "The normalised value: what agreement between sources is judged on."},
            "raw_value": {"help_text": "The value as the source wrote it."},
        }


# --- Homologous groups ----------------------------------------------------------------


class GroupSourceSerializer(serializers.Serializer[object]):
    id = serializers.IntegerField()
    name = serializers.CharField()
    claim_id = serializers.IntegerField()
    reliability = serializers.FloatField(allow_null=True, help_text="The source's current estimated accuracy.")
    value = serializers.CharField(
        allow_blank=True, help_text="The value this source claims (within the attribute's tolerance of the group's)."
    )


class GroupValueSerializer(serializers.Serializer[object]):
    value = serializers.CharField(
        allow_blank=True,
        help_text="The value; values within the tolerance the mapping declares are one, shown as the run shows it.",
    )
    claims = serializers.IntegerField(help_text="Claims (one per source) asserting this value.")
    sources = GroupSourceSerializer(many=True)


class ResolutionValueSerializer(serializers.Serializer[object]):
    value = serializers.CharField(allow_blank=True)
    sources = serializers.ListField(child=serializers.IntegerField(), help_text="Ids of the sources claiming it.")
    share = serializers.FloatField(help_text="Its share of the item's positive voting weight.")
    spellings = serializers.ListField(
        child=serializers.CharField(allow_blank=True),
        required=False,
        help_text="The values claimed within the attribute's tolerance of this one (it first); absent for a value alone.",
    )


class GroupResolutionSerializer(serializers.Serializer[object]):
    run_id = serializers.IntegerField()
    value = serializers.CharField(allow_blank=True)
    confidence = serializers.FloatField()
    conflicting = serializers.BooleanField()
    claims = serializers.IntegerField()
    values = ResolutionValueSerializer(many=True)


class NodeConfidenceSerializer(serializers.Serializer[object]):
    claim_id = serializers.IntegerField()
    source_id = serializers.IntegerField()
    value = serializers.CharField(allow_blank=True)
    consistency = serializers.FloatField(help_text="Mean similarity to the group's other claims, in [0, 1].")
    authority = serializers.FloatField(help_text="alpha * LLM authority + (1 - alpha) * historical authority.")
    llm_authority = serializers.FloatField(allow_null=True, help_text="Null when no language model scored the claim.")
    historical_authority = serializers.FloatField()
    confidence = serializers.FloatField(help_text="consistency + authority, in [0, 2].")
    kept = serializers.BooleanField(help_text="confidence >= the node threshold (0.7).")


class GroupConfidenceSerializer(serializers.Serializer[object]):
    confidence = serializers.FloatField(help_text="Graph-level confidence: the mean agreement of pairs of claims.")
    entropy_agreement = serializers.FloatField(help_text="1 - H(values) / log(claims).")
    kept = serializers.BooleanField(help_text="confidence >= the graph threshold (0.5).")
    isolated = serializers.BooleanField(help_text="A group of one claim: no evidence either way.")
    llm_used = serializers.BooleanField()
    answer = serializers.CharField(
        allow_blank=True,
        help_text="MultiRAG's answer: the value the kept claims back with the most source voting weight.",
    )
    answer_share = serializers.FloatField(help_text="The answer's share of the group's voting weight.")
    nodes = NodeConfidenceSerializer(many=True)


class ClaimGroupSerializer(serializers.Serializer[object]):
    subject = serializers.CharField()
    attribute = serializers.CharField()
    claims = serializers.IntegerField()
    sources = serializers.IntegerField()
    values = GroupValueSerializer(many=True, help_text="Every value claimed, most claimed first.")
    resolution = GroupResolutionSerializer(
        allow_null=True, help_text="The latest succeeded claim-level run's verdict on the item (null without one)."
    )
    confidence = GroupConfidenceSerializer(
        allow_null=True, help_text="MultiRAG's graph- and node-level confidence (null when unavailable)."
    )


# --- Resolutions ----------------------------------------------------------------------


class ClaimResolutionSerializer(serializers.ModelSerializer[ClaimResolution]):
    values = ResolutionValueSerializer(many=True, read_only=True, help_text="Every value claimed, the resolved first.")

    class Meta:
        model = ClaimResolution
        fields = ["id", "run", "subject", "attribute", "value", "confidence", "claims", "conflicting", "values"]
        read_only_fields = fields


# --- Loading claims and starting runs -------------------------------------------------


class ClaimLoadSerializer(StrictSerializer):
    files = serializers.ListField(child=serializers.FileField(allow_empty_file=True), allow_empty=False)
    mapping = Text(
        help_text='The claim mapping as a JSON string: {"subject", "attributes", "source"?, "subject_normalizer"?, '
        '"columns"?, "records"?} (see docs/claims.md).'
    )
    source = Text(  # type: ignore[assignment]  # a declared field (DRF's metaclass collects it), not Field.source
        required=False,
        allow_blank=True,
        max_length=200,
        help_text="The source's name, for a file of one source (a mapping with a `source` field names each "
        "record's source instead).",
    )
    format = serializers.ChoiceField(
        choices=CLAIM_FORMATS,
        required=False,
        help_text="Overrides detection by file extension (a headerless TSV named .txt: tsv).",
    )


class ClaimLoadAcceptedSerializer(serializers.Serializer[object]):
    job = serializers.IntegerField()
    status_url = serializers.CharField()
    files = serializers.IntegerField()


class StartClaimRunSerializer(StrictSerializer):
    estimator = serializers.ChoiceField(
        choices=available_estimators(), required=False, help_text="Default: the RELIABILITY_ESTIMATOR setting."
    )
    sources = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_ID),
        required=False,
        allow_empty=False,
        max_length=10000,
        help_text="Source ids; default: every active source that holds claims.",
    )
    attributes = serializers.ListField(
        child=Text(max_length=200),
        required=False,
        allow_empty=False,
        max_length=200,
        help_text="Attributes to resolve; default: every attribute.",
    )
    authorities = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_ID),
        required=False,
        max_length=10000,
        help_text=(
            "Optional curator's setting: ids of the run's sources declared authoritative for what they list; "
            "the items they agree on are fixed as checked items are. Default: none."
        ),
    )


class ClaimRunAcceptedSerializer(serializers.Serializer[object]):
    run = RunSerializer()
    job = serializers.IntegerField(allow_null=True)
    status_url = serializers.CharField(allow_null=True)
