"""Sources, their documents, and the embedded chunks that retrieval searches."""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.db import models
from pgvector.django import HnswIndex, VectorField

from sources.validators import validate_homepage


class Source(models.Model):
    class Kind(models.TextChoices):
        NEWS = "news", "News outlet"
        SOCIAL = "social", "Social account"
        REFERENCE = "reference", "Reference work"
        VENDOR = "vendor", "Vendor"
        DATASET = "dataset", "Data set"
        OTHER = "other", "Other"

    name = models.CharField(max_length=200, unique=True)
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.OTHER)
    homepage = models.URLField(blank=True, validators=[validate_homepage])
    description = models.TextField(blank=True)
    active = models.BooleanField(default=True, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # Kept denormalised: retrieval picks exact search for small sources from it.
    chunk_count = models.PositiveIntegerField(default=0, editable=False)

    # Current reliability, written when an estimation run finishes (None: never estimated).
    reliability = models.FloatField(null=True, blank=True, editable=False)
    reliability_low = models.FloatField(null=True, blank=True, editable=False)
    reliability_high = models.FloatField(null=True, blank=True, editable=False)
    reliability_answers = models.PositiveIntegerField(default=0, editable=False)
    reliability_updated_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


def content_hash(text: str) -> str:
    """Hash of the text with whitespace collapsed: re-ingesting the same text is a no-op."""
    normalised = " ".join(text.split())
    return hashlib.sha256(normalised.encode("utf-8")).hexdigest()


class Document(models.Model):
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="documents")
    title = models.CharField(max_length=500, blank=True)
    text = models.TextField()
    url = models.URLField(max_length=2000, blank=True)
    published_at = models.DateTimeField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    content_hash = models.CharField(max_length=64, editable=False)
    ingested_at = models.DateTimeField(auto_now_add=True)
    job = models.ForeignKey("tasks.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="documents")

    class Meta:
        ordering = ["-ingested_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["source", "content_hash"], name="document_unique_text_per_source")
        ]
        indexes = [models.Index(fields=["source", "published_at"])]

    def __str__(self) -> str:
        return self.title or f"Document {self.pk}"


class Chunk(models.Model):
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks")
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="chunks")
    ordinal = models.PositiveIntegerField()
    text = models.TextField()
    embedding = VectorField(dimensions=settings.EMBEDDING_DIMENSION)

    class Meta:
        ordering = ["document_id", "ordinal"]
        constraints = [models.UniqueConstraint(fields=["document", "ordinal"], name="chunk_unique_ordinal")]
        indexes = [
            HnswIndex(
                name="chunk_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            ),
        ]

    def __str__(self) -> str:
        return f"{self.document_id}#{self.ordinal}"


class SourceVectorIndex(models.Model):
    """The HNSW graph of one source's chunks (sources/vector_index.py).

    Its vectors live in a table ``sources_chunkvec_<source id>`` (chunk id, halfvec) with an
    HNSW index of its own, kept in step with sources_chunk by triggers and dropped with the
    source (migration 0004). Per-source retrieval walks it once ``ready``; until then, and
    for sources too small to have one, it searches the source's chunks exactly."""

    class State(models.TextChoices):
        QUEUED = "queued", "Queued"
        BUILDING = "building", "Building"
        READY = "ready", "Ready"
        FAILED = "failed", "Failed"

    source = models.OneToOneField(Source, primary_key=True, on_delete=models.CASCADE, related_name="vector_index")
    state = models.CharField(max_length=10, choices=State.choices, default=State.QUEUED)
    chunks = models.PositiveIntegerField(default=0)  # copied into the table when it was built
    build_seconds = models.FloatField(null=True, blank=True)
    size_bytes = models.BigIntegerField(null=True, blank=True)  # table and indexes, when built
    error = models.TextField(blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"vector index of source {self.source_id} ({self.state})"


class Claim(models.Model):
    """One source's value for one (subject, attribute): a fact it asserts.

    Structured and semi-structured files yield claims through a declarative mapping
    (core.engine.claims.mapping); free text through a language model (method "model").
    ``provenance`` says where it came from ({"file", "line" | "record" | "path", "field"})."""

    class Method(models.TextChoices):
        MAPPING = "mapping", "Mapping (structured data)"
        MODEL = "model", "Language model (text)"

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="claims")
    document = models.ForeignKey(
        Document, null=True, blank=True, on_delete=models.SET_NULL, related_name="claims"
    )  # the document a text claim was extracted from
    subject = models.CharField(max_length=500)
    attribute = models.CharField(max_length=200)
    value = models.TextField()  # normalised: what agreement is judged on
    raw_value = models.TextField(blank=True)
    normalizer = models.CharField(max_length=20, default="raw")
    # The mapping's tolerance for the attribute ("1", "0.5", "1%"; empty: exact): values of an
    # item this close are one value (core.engine.claims.tolerance).
    tolerance = models.CharField(max_length=20, blank=True, default="")
    method = models.CharField(max_length=10, choices=Method.choices, default=Method.MAPPING)
    provenance = models.JSONField(default=dict, blank=True)
    job = models.ForeignKey("tasks.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="claims")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["subject", "attribute", "source_id"]
        constraints = [
            models.UniqueConstraint(fields=["source", "subject", "attribute"], name="claim_unique_item_per_source")
        ]
        indexes = [
            models.Index(fields=["subject", "attribute"], name="claim_item"),
            models.Index(fields=["attribute"], name="claim_attribute"),
        ]

    def __str__(self) -> str:
        return f"{self.subject} / {self.attribute} = {self.value}"


class ClaimKey(models.Model):
    """The embedding of one (subject, attribute) key, computed only when a feature needs it
    (the multirag strategy matches questions to keys)."""

    subject = models.CharField(max_length=500)
    attribute = models.CharField(max_length=200)
    text = models.TextField()  # what was embedded
    embedding = VectorField(dimensions=settings.EMBEDDING_DIMENSION)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["subject", "attribute"], name="claimkey_unique_item")]
        indexes = [
            HnswIndex(
                name="claimkey_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            ),
        ]

    def __str__(self) -> str:
        return f"{self.subject} / {self.attribute}"
