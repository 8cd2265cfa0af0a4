"""What the engine produces, persisted: fact-checking queries, estimation runs with every
(query, source) response and per-source reliability scores, and asked questions with
every source's vote. The engine itself (core/engine/) knows nothing of these models."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models.functions import Coalesce, Lower, NullIf, Trim

from core.engine.strategies.codec import ResultSchemaError, validate_evidence, validate_graph
from core.engine.text import is_idk
from sources.models import Document, Source


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


class QueryCollection(models.Model):
    """A query set: a curated collection of fact-checking queries (admins edit it; runs use
    it). Called a query set in the API (``query_set``, /api/query-sets/) and on the pages; the
    model's own name keeps clear of Django's QuerySet."""

    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "core_queryset"  # the table of the model's former name, QuerySet
        ordering = ["name"]
        verbose_name = "query set"

    def __str__(self) -> str:
        return self.name


class FactQuery(models.Model):
    class Origin(models.TextChoices):
        CURATED = "curated", "Curated"
        GENERATED = "generated", "Generated from a document"
        YES_NO = "yes-no", "Yes/no claim check"
        FEEDBACK = "feedback", "Analyst feedback confirmed by a curator"

    query_set = models.ForeignKey(QueryCollection, on_delete=models.CASCADE, related_name="queries")
    question = models.TextField()
    reference_answers = models.JSONField(default=list, blank=True)
    tags = models.JSONField(default=list, blank=True)
    origin = models.CharField(max_length=20, choices=Origin.choices, default=Origin.CURATED)
    document = models.ForeignKey(
        Document, null=True, blank=True, on_delete=models.SET_NULL, related_name="fact_queries"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["query_set_id", "id"]
        verbose_name_plural = "fact queries"
        constraints = [models.UniqueConstraint(fields=["query_set", "question"], name="fact_query_unique_per_set")]

    def __str__(self) -> str:
        return self.question[:80]


class EstimationRun(models.Model):
    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    class Kind(models.TextChoices):
        FULL = "full", "Full estimation"
        UPDATE = "update", "Incremental update"
        CLAIMS = "claims", "Claim-level estimation"

    query_set = models.ForeignKey(QueryCollection, null=True, on_delete=models.SET_NULL, related_name="runs")
    sources = models.ManyToManyField(Source, related_name="estimation_runs")
    job = models.OneToOneField(
        "tasks.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="estimation_run"
    )
    params = models.JSONField(default=dict, blank=True)  # k, tau, strict clustering, prior, tolerance
    state = models.CharField(max_length=20, choices=State.choices, default=State.PENDING, db_index=True)
    backend = models.CharField(max_length=200, blank=True)
    iterations = models.PositiveIntegerField(default=0)
    converged = models.BooleanField(default=False)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # "full": answered every (query, source) pair and estimated; "update": an incremental
    # update of ``parent`` (new gold evidence added to its scores, no responses of its own).
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.FULL, db_index=True)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="updates"
    )  # the run an update builds on
    # Ids of the fact queries whose reference answers anchored it (an update: its parent's and its own).
    gold_queries = models.JSONField(default=list, blank=True)
    # Whether agreement identified the estimate (core.engine.reliability.identify, as_dict with
    # source and query ids): {} for runs before it, claim runs and updates.
    identification = models.JSONField(default=dict, blank=True)
    # How answer probabilities relate to being right on the run's checked queries
    # (core.engine.steps.calibration.Calibration.as_dict): {} when it had none; answers asked
    # after it are calibrated with it (core.services.engine_context.latest_calibration).
    calibration = models.JSONField(default=dict, blank=True)
    # Reliability per topic (core.engine.reliability.topical): {"model": TopicModel.as_dict(),
    # "cells": {source id: [{key, accuracy, low, high, answers}]}, "unsettled": [keys]};
    # empty when the run's queries formed one topic.
    topics = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"Estimation run #{self.pk}"

    @property
    def is_update(self) -> bool:
        return self.kind == self.Kind.UPDATE

    @property
    def effective_state(self) -> str:
        """The state to show: a run never looks pending or running under a job that has
        ended (the worker marks such runs failed too; this covers the moment in between)."""
        unfinished = self.state in (self.State.PENDING, self.State.RUNNING)
        if unfinished and self.job_id is not None and self.job is not None and self.job.finished:
            return self.State.FAILED.value
        return str(self.state)


class RunResponse(models.Model):
    """One source's answer to one fact-checking query in one run (resumable unit)."""

    run = models.ForeignKey(EstimationRun, on_delete=models.CASCADE, related_name="responses")
    query = models.ForeignKey(FactQuery, on_delete=models.CASCADE, related_name="responses")
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="run_responses")
    raw_response = models.TextField(blank=True)
    response = models.TextField(blank=True)  # after f_align; IDK when filtered
    is_idk = models.BooleanField(default=False)
    filtered = models.BooleanField(default=False)
    align_score = models.FloatField(default=0.0)
    cluster = models.IntegerField(null=True, blank=True)  # per-query cluster id, set when the run estimates
    agrees = models.BooleanField(null=True)  # with the run's estimated answer (None for IDK)
    chunk_ids = models.JSONField(default=list, blank=True)
    # Digest of what the response depends on (generator, k, tau, question, the source's
    # documents): a later run with the same inputs reuses it (core.services.estimation.reuse).
    inputs = models.CharField(max_length=64, blank=True, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "query", "source"], name="run_response_unique")]
        indexes = [models.Index(fields=["run", "source"])]

    def __str__(self) -> str:
        return f"run {self.run_id}, query {self.query_id}, source {self.source_id}: {self.response[:60]}"


class RunAnswer(models.Model):
    """The estimated true answer of one query in one run."""

    run = models.ForeignKey(EstimationRun, on_delete=models.CASCADE, related_name="answers")
    query = models.ForeignKey(FactQuery, on_delete=models.CASCADE, related_name="run_answers")
    answer = models.TextField(blank=True)  # empty when every source said IDK
    cluster = models.IntegerField(null=True, blank=True)
    support = models.FloatField(default=0.0)  # summed weight of the winning cluster

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "query"], name="run_answer_unique")]

    def __str__(self) -> str:
        return f"run {self.run_id}, query {self.query_id}: {self.answer[:60]}"


class ReliabilityScore(models.Model):
    """A source's reliability as estimated by one run: the trend is the series over runs."""

    run = models.ForeignKey(EstimationRun, on_delete=models.CASCADE, related_name="scores")
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="reliability_scores")
    reliability = models.FloatField()  # estimated accuracy w_i in [0, 1]
    weight = models.FloatField()  # voting weight v_i
    low = models.FloatField()
    high = models.FloatField()
    answers = models.PositiveIntegerField(default=0)  # non-IDK answers the score rests on
    agreements = models.PositiveIntegerField(default=0)
    gold_answers = models.PositiveIntegerField(default=0)  # non-IDK answers to gold-checked queries
    gold_agreements = models.PositiveIntegerField(default=0)  # of those, how many match the reference answer
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]
        constraints = [models.UniqueConstraint(fields=["run", "source"], name="reliability_score_unique")]

    def __str__(self) -> str:
        return f"run {self.run_id}, source {self.source_id}: accuracy {self.reliability:.2f}"

    @property
    def gold_accuracy(self) -> float | None:
        """The share of the source's gold-checked answers that were right (None without any)."""
        return self.gold_agreements / self.gold_answers if self.gold_answers else None


class SourceDependence(models.Model):
    """How likely two sources of a run copy each other (or both copy a third, or collude),
    from the answers they share: the estimator's posterior probability of dependence and
    its evidence. ``source_a`` has the smaller id. Written by runs whose estimator detects
    copying (accucopy)."""

    run = models.ForeignKey(EstimationRun, on_delete=models.CASCADE, related_name="dependences")
    source_a = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="+")
    source_b = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="+")
    probability = models.FloatField()  # posterior probability that the two are dependent
    shared = models.PositiveIntegerField(default=0)  # queries both answered (non-IDK)
    same_true = models.FloatField(default=0.0)  # expected shared answers that are true
    same_false = models.FloatField(default=0.0)  # expected shared answers that are false: the evidence of copying
    different = models.PositiveIntegerField(default=0)  # shared queries where they answered differently
    examples = models.JSONField(default=list, blank=True)  # up to 5 shared false answers: [{query_id, query, answer}]

    class Meta:
        ordering = ["-probability", "source_a_id", "source_b_id"]
        constraints = [models.UniqueConstraint(fields=["run", "source_a", "source_b"], name="source_dependence_unique")]

    def __str__(self) -> str:
        return (
            f"run {self.run_id}: sources {self.source_a_id} and {self.source_b_id} dependent at {self.probability:.2f}"
        )


LOW_EVIDENCE_CONFIDENCE = 0.5  # an answer no more likely than this to be right is flagged as low evidence


class ClaimResolution(models.Model):
    """A claim-level run's verdict on one (subject, attribute): the value it resolves to,
    with confidence, and every value claimed with the sources behind it."""

    run = models.ForeignKey(EstimationRun, on_delete=models.CASCADE, related_name="resolutions")
    subject = models.CharField(max_length=500)
    attribute = models.CharField(max_length=200)
    value = models.TextField()
    confidence = models.FloatField()
    claims = models.PositiveIntegerField(default=0)  # claims on the item
    conflicting = models.BooleanField(default=False, db_index=True)  # more than one value claimed
    # [{"value": str, "sources": [source ids], "share": float}], the resolved value first
    values = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["subject", "attribute"]
        constraints = [
            models.UniqueConstraint(fields=["run", "subject", "attribute"], name="resolution_unique_item_per_run")
        ]
        indexes = [models.Index(fields=["subject", "attribute"], name="resolution_item")]

    def __str__(self) -> str:
        return f"{self.subject} / {self.attribute} = {self.value}"


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
