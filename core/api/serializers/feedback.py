"""Analysts' feedback on answers (core.services.feedback) and its review by curators."""

from __future__ import annotations

from rest_framework import serializers

from core.api.fields import IdRelatedField, StrictSerializer, Text
from core.models import MAX_CORRECTED_ANSWER_CHARS, MAX_FEEDBACK_COMMENT_CHARS, AnswerFeedback, Question
from sources.models import Source


class NewFeedbackSerializer(StrictSerializer):
    question = IdRelatedField(queryset=Question.objects.all(), help_text="An answered question.")
    kind = serializers.ChoiceField(
        choices=AnswerFeedback.Kind.choices,
        help_text="`answer_right`, `answer_wrong`, or `source_wrong` (with `source`).",
    )
    source = IdRelatedField(  # type: ignore[assignment]  # a declared field (DRF's metaclass collects it), not Field.source
        queryset=Source.objects.all(),
        required=False,
        allow_null=True,
        help_text="`source_wrong` only: the source whose response to the question is wrong.",
    )
    corrected_answer = Text(
        max_length=MAX_CORRECTED_ANSWER_CHARS,
        required=False,
        allow_blank=True,
        help_text="`answer_wrong` or `source_wrong`: the right answer, if known (it can then become gold). "
        "Left out: an earlier one is kept.",
    )
    comment = Text(
        max_length=MAX_FEEDBACK_COMMENT_CHARS,
        required=False,
        allow_blank=True,
        help_text="Anything for the curator. Left out: an earlier one is kept.",
    )


class FeedbackSerializer(serializers.ModelSerializer[AnswerFeedback]):
    user = serializers.CharField(source="user.username", read_only=True)
    source_name = serializers.SerializerMethodField()
    reviewed_by = serializers.SerializerMethodField()
    known_wrong = serializers.SerializerMethodField(
        help_text="Confirmed without a right answer: kept as a known wrong answer, not used by estimation."
    )

    class Meta:
        model = AnswerFeedback
        fields = [
            "id",
            "question",
            "kind",
            "source",
            "source_name",
            "answer",
            "corrected_answer",
            "comment",
            "user",
            "status",
            "reviewed_by",
            "reviewed_at",
            "gold_query",
            "gold_answer",
            "known_wrong",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields
        extra_kwargs: dict[str, dict[str, str]] = {
            "answer": {"help_text": "What was judged: the question's answer, or the source's response."},
            "gold_query": {
                "help_text": "Set once confirmed with a right answer: the gold-checked query of the "
                "“Analyst feedback” query set whose reference answer it gave."
            },
        }

    def get_source_name(self, feedback: AnswerFeedback) -> str | None:
        return feedback.source.name if feedback.source is not None else None

    def get_reviewed_by(self, feedback: AnswerFeedback) -> str | None:
        return feedback.reviewed_by.username if feedback.reviewed_by is not None else None

    def get_known_wrong(self, feedback: AnswerFeedback) -> bool:
        return feedback.status == AnswerFeedback.Status.CONFIRMED and feedback.gold_query_id is None


class ReviewSerializer(StrictSerializer):
    """No options: the body may be empty."""
