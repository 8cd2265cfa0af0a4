"""Estimation, persisted: fact-checking queries in their collections, estimation runs with
every (query, source) response, the answers and per-source reliability scores they reach,
the dependence between pairs of sources, and claim-level resolutions."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models

from sources.models import Document, Source


class QueryCollection(models.Model):
    """A query set: a curated collection of fact-checking queries (admins edit it; runs use
    it). One rule for its two names: "query set" is the product's word, so every field,
    parameter, URL, label and API name says it (``query_set``, /api/query-sets/,
    ``--query-set``); only the classes named after the model say QueryCollection (this model,
    QueryCollectionAdmin, QueryCollectionFactory), because QuerySet is Django's."""

    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "core_queryset"  # the table of the model's former name, QuerySet
        ordering = ["name"]
        verbose_name = "query set"

    def __str__(self) -> str:
        return self.name


# A fact-checking query's question is a key of the unique (query set, question) btree index,
# whose rows hold at most 2704 bytes: 2000 characters of a 3- or 4-byte script overflowed it
# (a 500 from the API, the admin and a confirmed feedback's question alike).
MAX_QUESTION_BYTES = 2400


def validate_question_bytes(value: str, *, what: str = "A question") -> None:
    """ValidationError when a fact query's question (or a text stored beside it, ``what``) is
    too long in UTF-8 for its unique index (the admin, the API, feedback and checks call it)."""
    if len(value.encode("utf-8", "surrogatepass")) > MAX_QUESTION_BYTES:
        raise ValidationError(
            f"{what} is at most {MAX_QUESTION_BYTES} bytes of UTF-8 (about 600 characters of a "
            "script such as Chinese or emoji).",
            code="too_many_bytes",
        )


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
