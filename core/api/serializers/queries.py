"""Query sets and their fact-checking queries, with the reference answers curators set."""

from __future__ import annotations

from typing import Any, TypedDict

from django.db import transaction
from rest_framework import serializers

from core.api.fields import StrictModelSerializer, StrictSerializer, Text
from core.models import FactQuery, QueryCollection, validate_question_bytes

MAX_QUESTION_CHARS = 2000
MAX_REFERENCE_CHARS = 500
MAX_REFERENCES = 50
MAX_TAGS = 50
MAX_QUERIES = 5000


def reference_answers_field(**kwargs: Any) -> serializers.ListField:
    return serializers.ListField(
        child=Text(max_length=MAX_REFERENCE_CHARS),
        max_length=MAX_REFERENCES,
        help_text="Accepted answers: a response containing one of them (normalised) is right. "
        "A query with reference answers is gold-checked: estimation runs take its truth from them.",
        **kwargs,
    )


def tags_field(**kwargs: Any) -> serializers.ListField:
    return serializers.ListField(child=Text(max_length=100), max_length=MAX_TAGS, **kwargs)


class FactQuerySerializer(StrictModelSerializer[FactQuery]):
    """A query; its reference answers and tags can be changed, its question cannot (past runs answered it)."""

    reference_answers = reference_answers_field(required=False)
    tags = tags_field(required=False)

    class Meta:
        model = FactQuery
        fields = ["id", "query_set", "question", "reference_answers", "tags", "origin", "document", "created_at"]
        read_only_fields = ["id", "query_set", "question", "origin", "document", "created_at"]


class NewQuery(TypedDict):
    """A query of a new set, as NewFactQuerySerializer validated it."""

    question: str
    reference_answers: list[str]
    tags: list[str]


class NewFactQuerySerializer(StrictSerializer):
    question = Text(max_length=MAX_QUESTION_CHARS, validators=[validate_question_bytes])
    reference_answers = reference_answers_field(required=False, default=list)
    tags = tags_field(required=False, default=list)


class QuerySetSerializer(StrictModelSerializer[QueryCollection]):
    query_count = serializers.IntegerField(read_only=True, help_text="Fact-checking queries in the set.")
    gold_count = serializers.IntegerField(read_only=True, help_text="Of those, how many have reference answers.")
    queries = NewFactQuerySerializer(  # type: ignore[call-arg]  # many=True makes a ListSerializer, which takes max_length
        many=True, write_only=True, required=False, max_length=MAX_QUERIES, help_text="The set's queries (create only)."
    )

    class Meta:
        model = QueryCollection
        fields = ["id", "name", "description", "created_at", "query_count", "gold_count", "queries"]
        read_only_fields = ["id", "created_at", "query_count", "gold_count"]

    def validate_queries(self, queries: list[NewQuery]) -> list[NewQuery]:
        seen: set[str] = set()
        for i, item in enumerate(queries):
            if item["question"] in seen:
                raise serializers.ValidationError(f"Query {i} repeats an earlier question: each question once per set.")
            seen.add(item["question"])
        return queries

    def create(self, validated_data: dict[str, Any]) -> QueryCollection:  # DRF's validated data
        queries: list[NewQuery] = validated_data.pop("queries", [])
        with transaction.atomic():
            query_set = QueryCollection.objects.create(**validated_data)
            FactQuery.objects.bulk_create(
                FactQuery(
                    query_set=query_set,
                    question=item["question"],
                    reference_answers=[r for r in item["reference_answers"] if r.strip()],
                    tags=item["tags"],
                )
                for item in queries
            )
        query_set.query_count = len(queries)  # type: ignore[attr-defined]  # what the list's annotate() adds
        query_set.gold_count = sum(  # type: ignore[attr-defined]  # what the list's annotate() adds
            1 for item in queries if any(r.strip() for r in item["reference_answers"])
        )
        return query_set
