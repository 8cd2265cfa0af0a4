"""Sources, their reliability history, documents and document uploads."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.api.fields import IdRelatedField, StrictModelSerializer, StrictSerializer, Text
from core.models import EstimationRun
from core.services.topics import NamedTopicCell, latest_topic_run, topic_cells
from sources.ingest import DOCUMENT_FORMATS
from sources.models import Document, Source
from sources.validators import validate_homepage

# --- Sources --------------------------------------------------------------------------


class ReliabilitySerializer(serializers.Serializer[object]):
    value = serializers.FloatField(allow_null=True, help_text="Estimated accuracy in [0, 1]; null if never estimated.")
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)
    uncertainty = serializers.FloatField(allow_null=True, help_text="high - low")
    answers = serializers.IntegerField(help_text="Non-IDK answers the score rests on.")
    updated_at = serializers.DateTimeField(allow_null=True)


class TopicReliabilitySerializer(serializers.Serializer[object]):
    key = serializers.CharField(help_text="The topic's key in the latest estimation run.")
    name = serializers.CharField()
    accuracy = serializers.FloatField(help_text="Estimated accuracy on the topic's questions, in [0, 1].")
    low = serializers.FloatField()
    high = serializers.FloatField()
    answers = serializers.FloatField(
        help_text="Answers on the topic the number rests on (a query counts by its share)."
    )
    unsettled = serializers.BooleanField(help_text="Agreement does not settle this topic's estimate.")


class SourceSerializer(StrictModelSerializer[Source]):
    # Blank is allowed, so not "format: uri" in the schema (an empty string is no URI).
    # http(s) only, and a valid URI as written (no quotes, angle brackets or spaces).
    homepage = Text(required=False, allow_blank=True, max_length=200, validators=[validate_homepage])
    reliability = serializers.SerializerMethodField()
    topics = serializers.SerializerMethodField(
        help_text="Reliability per topic in the latest estimation run; empty when it found one topic."
    )
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
            "topics",
        ]
        read_only_fields = ["id", "created_at", "updated_at", "chunk_count", "document_count"]

    @extend_schema_field(TopicReliabilitySerializer(many=True))
    def get_topics(self, source: Source) -> list[NamedTopicCell]:
        # One lookup of the latest run per response (a list shares the context).
        if "topic_run" not in self.context:
            self.context["topic_run"] = latest_topic_run()
        return topic_cells(self.context["topic_run"], source.pk)

    @extend_schema_field(ReliabilitySerializer)
    def get_reliability(self, source: Source) -> dict[str, object]:
        low, high = source.reliability_low, source.reliability_high
        return {
            "value": source.reliability,
            "low": low,
            "high": high,
            "uncertainty": high - low if low is not None and high is not None else None,
            "answers": source.reliability_answers,
            "updated_at": source.reliability_updated_at,
        }


class ReliabilityPointSerializer(serializers.Serializer[object]):
    run_id = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    kind = serializers.ChoiceField(
        choices=EstimationRun.Kind.values,
        help_text='"full" estimation, an incremental "update" of `parent_run_id`, or a claim-level run ("claims").',
    )
    parent_run_id = serializers.IntegerField(allow_null=True)
    reliability = serializers.FloatField(help_text="Estimated accuracy (from agreement, anchored by gold).")
    low = serializers.FloatField()
    high = serializers.FloatField()
    answers = serializers.IntegerField()
    agreements = serializers.IntegerField()
    weight = serializers.FloatField()
    gold_answers = serializers.IntegerField(help_text="Non-IDK answers to gold-checked queries.")
    gold_agreements = serializers.IntegerField(help_text="Of those, how many match the reference answer.")
    gold_accuracy = serializers.FloatField(
        allow_null=True, help_text="gold_agreements / gold_answers; null without any."
    )


class ReliabilityHistorySerializer(serializers.Serializer[object]):
    source = serializers.IntegerField()  # type: ignore[assignment]  # a declared field (DRF's metaclass collects it), not Field.source
    name = serializers.CharField()
    history = ReliabilityPointSerializer(many=True)


# --- Documents ------------------------------------------------------------------------


class DocumentSerializer(serializers.ModelSerializer[Document]):
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


# --- Uploads --------------------------------------------------------------------------


FORMATS = list(DOCUMENT_FORMATS)


class DocumentItemSerializer(StrictSerializer):
    """One document of a JSON upload; its content is checked by the JSON ingestion adapter."""

    text = Text(allow_blank=True, trim_whitespace=False)
    title = Text(required=False, allow_blank=True, allow_null=True)
    url = Text(required=False, allow_blank=True, allow_null=True)
    published = Text(required=False, allow_blank=True, allow_null=True, help_text="ISO date or datetime")


class JsonUploadSerializer(StrictSerializer):
    source = IdRelatedField(queryset=Source.objects.all())  # type: ignore[assignment]  # a declared field (DRF's metaclass collects it), not Field.source
    documents = DocumentItemSerializer(many=True, allow_empty=False)


class MultipartUploadSerializer(StrictSerializer):
    source = IdRelatedField(queryset=Source.objects.all())  # type: ignore[assignment]  # a declared field (DRF's metaclass collects it), not Field.source
    files = serializers.ListField(child=serializers.FileField(allow_empty_file=True), allow_empty=False)
    format = serializers.ChoiceField(
        choices=FORMATS, required=False, help_text="Overrides detection by file extension."
    )


class UploadAcceptedSerializer(serializers.Serializer[object]):
    job = serializers.IntegerField()
    status_url = serializers.CharField()
    source = serializers.IntegerField()  # type: ignore[assignment]  # a declared field (DRF's metaclass collects it), not Field.source
    files = serializers.IntegerField()
    documents = serializers.IntegerField(help_text="Documents parsed (before de-duplication).")
