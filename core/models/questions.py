"""Asking, persisted: questions with every source's vote, the source groups an analyst
asks, and the feedback on answers. The vote's evidence and graph are checked against the
strategy result schema (core.engine.strategies.codec) when stored."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models.functions import Coalesce, Lower, NullIf, Trim

from core.engine.strategies.codec import ResultSchemaError, validate_evidence, validate_graph
from core.engine.text import is_idk
from core.models.estimation import FactQuery
from sources.models import Source


def _checked(check: Callable[[object], None], value: object) -> None:
    try:
        check(value)
    except ResultSchemaError as exc:
        raise ValidationError(str(exc)) from None


def evidence_field_validator(value: object) -> None:
    """Question.evidence has the schema of core.engine.strategies.codec."""
    _checked(validate_evidence, value)


def graph_field_validator(value: object) -> None:
    """Question.graph has the schema of core.engine.strategies.codec."""
    _checked(validate_graph, value)


LOW_EVIDENCE_CONFIDENCE = 0.5  # an answer no more likely than this to be right is flagged as low evidence


class SourceGroup(models.Model):
    """A saved choice of sources an analyst can ask instead of every active source (edited
    in the admin). Shared groups are offered to everyone; others only to their owner."""

    name = models.CharField(max_length=200)
    description = models.CharField(max_length=500, blank=True)
    sources = models.ManyToManyField(Source, related_name="source_groups")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="source_groups"
    )
    shared = models.BooleanField(default=True, help_text="Offered to every analyst, not only to its owner.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["name", "owner"], name="source_group_unique_name_per_owner", nulls_distinct=False
            )
        ]

    def __str__(self) -> str:
        return self.name


def asked_as_norm() -> Lower:
    """A question as answered (a follow-up's standalone rewrite, else its text), case and
    surrounding spaces aside: what "the same question asked again" compares (indexed)."""
    return Lower(Trim(Coalesce(NullIf("standalone", models.Value("", output_field=models.TextField())), "text")))


class Question(models.Model):
    """A question an analyst (or a tool) asked, with the answer and how it was reached."""

    text = models.TextField()
    strategy = models.CharField(max_length=50, db_index=True)
    params = models.JSONField(default=dict, blank=True)  # the strategy's parameters (its Params dataclass)
    answer = models.TextField(blank=True)
    confidence = models.FloatField(null=True, blank=True)
    backend = models.CharField(max_length=200, blank=True)
    clusters = models.JSONField(default=list, blank=True)  # [{id, label, members, weight}]
    calls = models.PositiveIntegerField(default=0)
    tokens = models.PositiveIntegerField(default=0)
    seconds = models.FloatField(null=True, blank=True)
    notes = models.JSONField(default=list, blank=True)  # plain-language remarks for the reader
    # The strategy result's typed parts (schema: core.engine.strategies.codec), checked on save.
    evidence = models.JSONField(default=list, blank=True, validators=[evidence_field_validator])
    graph = models.JSONField(null=True, blank=True, validators=[graph_field_validator])
    trace = models.JSONField(default=dict, blank=True)  # how the answer was reached (visit order, keywords)
    # The sources the asker allowed (core.services.source_selection): {} for every active
    # source; else {"include": [{id, name}], "exclude": [{id, name}], "group": {id, name} | None,
    # "allowed": [{id, name}]}, resolved when asked, so the permalink shows what was allowed.
    source_selection = models.JSONField(default=dict, blank=True)
    # A follow-up: the question it follows (the conversation is the chain of these), and the
    # follow-up rewritten into a standalone question, which retrieval and answering use
    # (core.engine.steps.followup). "" for a question that follows none.
    follows = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="follow_ups")
    standalone = models.TextField(blank=True)
    job = models.OneToOneField("tasks.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="question")
    asked_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    answered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        # The same question asked again, case and spaces aside: the history groups by it and
        # an answer looks up its earlier answer by it (core.services.pages.earlier_answers), so neither scans the table.
        # A follow-up is the same question as another when it was asked as the same: two "When
        # was he born?" about different people are not; "When was Bram Stoker born?" asked
        # plainly and as a follow-up are. The lookups use question_norm_asked_as (asked_as_norm);
        # question_norm_text, on the text alone, is what they used before follow-ups.
        indexes = [
            models.Index(Lower(Trim("text")), name="question_norm_text"),
            models.Index(asked_as_norm(), name="question_norm_asked_as"),
        ]

    def __str__(self) -> str:
        return self.text[:80]

    @property
    def asked_as(self) -> str:
        """The question the strategy answers: a follow-up's standalone rewrite, else the text."""
        return self.standalone or self.text

    @property
    def rewritten(self) -> bool:
        """A follow-up whose standalone form differs from what was typed (the page shows it)."""
        return bool(self.standalone) and self.standalone.strip() != self.text.strip()

    @property
    def low_evidence(self) -> bool:
        """An answered question whose answer rests on little evidence: its confidence is
        at most LOW_EVIDENCE_CONFIDENCE (or unknown), or it carries a plain-language caveat
        (``notes``: the sources behind it were never checked, or on few answers)."""
        if self.answered_at is None or is_idk(self.answer):
            return False  # nothing answered, nothing to warn about
        return self.confidence is None or self.low_confidence or bool(self.notes)

    @property
    def low_confidence(self) -> bool:
        """The answer's confidence is known and at most LOW_EVIDENCE_CONFIDENCE: the answer is
        no more likely right than wrong (an answer from one unchecked source, or from two
        sources estimated no better than chance, sits at exactly 0.50)."""
        return self.confidence is not None and self.confidence <= LOW_EVIDENCE_CONFIDENCE


class Vote(models.Model):
    """One source's part in answering a question."""

    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="votes")
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="votes")
    rank = models.PositiveIntegerField(default=0)  # visiting order (kappa-RRSS) or listing order
    raw_response = models.TextField(blank=True)
    response = models.TextField(blank=True)
    filtered = models.BooleanField(default=False)
    align_score = models.FloatField(default=0.0)
    cluster = models.IntegerField(null=True, blank=True)
    weight = models.FloatField(default=0.0)
    reliability = models.FloatField(null=True, blank=True)  # the source's reliability when asked
    passages = models.JSONField(default=list, blank=True)  # [{chunk_id, document_id, title, url, text, distance}]
    # The backend that wrote raw_response ("" when none was asked: no passage about the question)
    backend = models.CharField(max_length=200, blank=True, default="")

    class Meta:
        ordering = ["question_id", "rank"]
        constraints = [models.UniqueConstraint(fields=["question", "source"], name="vote_unique_per_source")]

    def __str__(self) -> str:
        return f"question {self.question_id}, source {self.source_id}: {self.response[:60]}"


MAX_CORRECTED_ANSWER_CHARS = 500  # as long as a reference answer may be (the API's MAX_REFERENCE_CHARS)
MAX_FEEDBACK_COMMENT_CHARS = 2000


class AnswerFeedback(models.Model):
    """An analyst's verdict on an answered question: its answer is right, or wrong (optionally
    with the right answer), or one source's response is wrong here. A curator confirms or
    rejects it; a confirmed verdict with a known right answer becomes a gold-checked query of
    the "Analyst feedback" query set (core.services.feedback). One row per (user, question,
    kind, source): giving the same feedback again updates it."""

    class Kind(models.TextChoices):
        ANSWER_RIGHT = "answer_right", "The answer is right"
        ANSWER_WRONG = "answer_wrong", "The answer is wrong"
        SOURCE_WRONG = "source_wrong", "This source is wrong here"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending review"
        CONFIRMED = "confirmed", "Confirmed"
        REJECTED = "rejected", "Rejected"

    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="feedback")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="answer_feedback")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    source = models.ForeignKey(
        Source, null=True, blank=True, on_delete=models.CASCADE, related_name="feedback"
    )  # source_wrong only: the source whose response is wrong
    answer = models.TextField(blank=True)  # what was judged: the question's answer, or the source's response
    corrected_answer = models.CharField(max_length=MAX_CORRECTED_ANSWER_CHARS, blank=True)
    comment = models.TextField(max_length=MAX_FEEDBACK_COMMENT_CHARS, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING, db_index=True)
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)
    # Set when confirming made a gold-checked query: the query and the reference answer it added.
    gold_query = models.ForeignKey(FactQuery, null=True, blank=True, on_delete=models.SET_NULL, related_name="feedback")
    gold_answer = models.CharField(max_length=MAX_CORRECTED_ANSWER_CHARS, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at", "-id"]
        verbose_name = "answer feedback"
        verbose_name_plural = "answer feedback"
        constraints = [
            # One feedback per (user, question, kind, source); NULL sources are equal here.
            models.UniqueConstraint(
                fields=["user", "question", "kind"],
                condition=models.Q(source__isnull=True),
                name="answer_feedback_unique_without_source",
            ),
            models.UniqueConstraint(
                fields=["user", "question", "kind", "source"],
                condition=models.Q(source__isnull=False),
                name="answer_feedback_unique_with_source",
            ),
            models.CheckConstraint(
                condition=models.Q(kind="source_wrong", source__isnull=False)
                | (~models.Q(kind="source_wrong") & models.Q(source__isnull=True)),
                name="answer_feedback_source_iff_source_wrong",
            ),
        ]
        indexes = [models.Index(fields=["question", "user"], name="answer_feedback_mine")]

    def __str__(self) -> str:
        where = f" ({self.source})" if self.source_id else ""
        return f"{self.get_kind_display()}{where}: question #{self.question_id}"
