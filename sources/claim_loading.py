"""Loading claims into the product: structured files through a mapping, free text through a model.

All or nothing: every file is parsed before anything is written (one bad line rejects the
whole load), then sources and claims are written in one transaction. A claim is keyed by
(source, subject, attribute); loading the same file again changes no row (the claims are
counted ``unchanged``), loading a corrected file updates the claims whose value or
provenance changed. Long loads run as jobs (``start_claim_load``); the claim keys are then
embedded by their own job (``start_claim_key_embedding``) for the multirag strategy.

Services never import ``tasks``: jobs are started through runtime.jobs.dispatch_job.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

from django.conf import settings
from django.db import transaction

from core.engine.backends.generation import GenerationRequest
from core.engine.backends.generation.base import Capability
from core.engine.chunking import chunk_text
from core.engine.claims.extraction import parse_triples, triple_prompt
from core.engine.claims.mapping import ClaimMapping
from core.engine.claims.normalize import normalize_text
from core.engine.claims.types import MAX_ATTRIBUTE_CHARS, MAX_SUBJECT_CHARS, ExtractedClaim
from core.engine.types import JSONObject, JSONValue
from runtime.backends import configured_generator
from runtime.jobs import JobRecord, KeepAlive, NullProgress, Progress, dispatch_job, heartbeat_interval
from runtime.users import Actor
from sources.ingest import IngestError
from sources.ingest.claim_formats import parse_claim_bytes
from sources.models import Chunk, Claim, Document, Source
from sources.uploads import keep_uploads

UPSERT_BATCH = 2000
# What a stored claim is compared on: equal in all of these, a reload leaves it untouched.
_COMPARED = ("value", "raw_value", "normalizer", "method", "provenance", "document_id", "tolerance")


@dataclass
class ClaimLoadResult:
    files: int = 0
    claims: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    sources_created: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass
class TextClaimResult:
    documents: int = 0
    rejected: int = 0  # documents whose model output was refused (see the job log)
    claims: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


class ClaimExtractionUnavailable(RuntimeError):
    """Free text yields claims only through a language model; the configured generator is none."""


@dataclass(frozen=True)
class _Row:
    source_id: int
    claim: ExtractedClaim
    normalizer: str
    document_id: int | None = None
    tolerance: str = ""  # the mapping's tolerance for the attribute (Tolerance.spec; empty: exact)


def _job_id(job: int | JobRecord | None) -> int | None:
    if job is None or isinstance(job, int):
        return job
    return int(job.pk)


# --- structured files -----------------------------------------------------------------


def parse_claim_files(
    files: Sequence[tuple[str, bytes]],
    mapping: ClaimMapping,
    *,
    format_name: str | None = None,
    progress: Progress | None = None,
) -> list[list[ExtractedClaim]]:
    """Every file's claims, or IngestError (naming the file, line and field) for the first bad one."""
    parsed = []
    for name, data in files:
        parsed.append(parse_claim_bytes(data, name, mapping, format_name or None))
        if progress is not None:
            progress.advance(1, f"Parsed {name}: {len(parsed[-1])} claims")
    return parsed


def check_source(mapping: ClaimMapping, source: Source | str | None) -> None:
    """A mapping names each record's source, or the load names the one source of its files: never both, never neither."""
    if mapping.source is None and not source:
        raise IngestError('the mapping has no "source" field, so give the source the claims belong to', field="source")
    if mapping.source is not None and source:
        raise IngestError(
            f"the mapping reads each record's source from the field {mapping.source!r}; do not also give a source",
            field="source",
        )


def validate_claim_uploads(
    files: Sequence[tuple[str, bytes]],
    mapping: ClaimMapping,
    *,
    source: Source | str | None = None,
    format_name: str | None = None,
) -> list[int]:
    """Parse every file now (cheap, no model) so a form, the CLI or the API can refuse bad
    input at once; returns the claims per file, or raises IngestError."""
    check_source(mapping, source)
    if not files:
        raise IngestError("no files given")
    return [len(claims) for claims in parse_claim_files(files, mapping, format_name=format_name)]


def _first_per_key(rows: Iterable[_Row]) -> list[_Row]:
    """One row per (source, subject, attribute): the first (over files, as within one)."""
    seen: set[tuple[int, str, str]] = set()
    out = []
    for row in rows:
        key = (row.source_id, row.claim.subject, row.claim.attribute)
        if key not in seen:
            seen.add(key)
            out.append(row)
    return out


def _upsert(rows: list[_Row], job_id: int | None) -> tuple[int, int, int]:
    """Write claims keyed by (source, subject, attribute): (created, updated, unchanged).

    Rows already stored with the same value, raw value, normaliser, tolerance, method,
    provenance and document are not written at all (a reload is a no-op); the rest go through one
    INSERT ... ON CONFLICT DO UPDATE per batch. Call inside a transaction."""
    if not rows:
        return 0, 0, 0
    source_ids = sorted({r.source_id for r in rows})
    attributes = sorted({r.claim.attribute for r in rows})
    stored = Claim.objects.filter(source_id__in=source_ids, attribute__in=attributes)
    subjects = {r.claim.subject for r in rows}
    if len(subjects) <= 5000:
        stored = stored.filter(subject__in=sorted(subjects))
    existing = {
        (s, subj, attr): rest
        for s, subj, attr, *rest in stored.values_list("source_id", "subject", "attribute", *_COMPARED).iterator(
            chunk_size=5000
        )
    }
    created = updated = unchanged = 0
    objects: list[Claim] = []
    for row in rows:
        c = row.claim
        values = [c.value, c.raw_value, row.normalizer, c.method, c.provenance, row.document_id, row.tolerance]
        before = existing.get((row.source_id, c.subject, c.attribute))
        if before is None:
            created += 1
        elif list(before) == values:
            unchanged += 1
            continue
        else:
            updated += 1
        objects.append(
            Claim(
                source_id=row.source_id,
                document_id=row.document_id,
                subject=c.subject,
                attribute=c.attribute,
                value=c.value,
                raw_value=c.raw_value,
                normalizer=row.normalizer,
                tolerance=row.tolerance,
                method=c.method,
                provenance=c.provenance,
                job_id=job_id,
            )
        )
    Claim.objects.bulk_create(
        objects,
        batch_size=UPSERT_BATCH,
        update_conflicts=True,
        unique_fields=["source", "subject", "attribute"],
        update_fields=[
            "value",
            "raw_value",
            "normalizer",
            "tolerance",
            "method",
            "provenance",
            "document",
            "job",
            "updated_at",
        ],
    )
    return created, updated, unchanged


def _resolve_sources(names: set[str], fallback: Source | str | None) -> tuple[dict[str | None, int], int]:
    """Source ids by name (None: the load's own source), creating missing ones (kind "dataset")."""
    ids: dict[str | None, int] = {}
    created = 0
    if isinstance(fallback, Source):
        ids[None] = fallback.pk
    elif fallback:
        names = names | {fallback}
    if names:
        found = dict(Source.objects.filter(name__in=names).values_list("name", "id"))
        for name in sorted(names - set(found)):
            # One at a time, so `created` counts what this load created: two loads naming the
            # same new sources at once both used to report them (the second's insert waits
            # for the first's commit, then finds the row).
            entry, new = Source.objects.get_or_create(name=name, defaults={"kind": Source.Kind.DATASET})
            found[name] = entry.pk
            created += int(new)
        ids.update(found)
    if isinstance(fallback, str) and fallback:
        ids[None] = ids[fallback]
    return ids, created


def load_claims(
    files: Sequence[tuple[str, bytes]],
    mapping: ClaimMapping,
    *,
    source: Source | str | None = None,
    format_name: str | None = None,
    job: int | JobRecord | None = None,
    progress: Progress | None = None,
) -> ClaimLoadResult:
    """Parse every file, then store all their claims in one transaction (or nothing at all).

    ``source`` (a Source, or the name of one, created if new) is the source of every claim
    when the mapping has no ``source`` field; with one, each record names its source and
    missing sources are created (kind "dataset"). Raises IngestError, storing nothing, when
    any file is rejected."""
    check_source(mapping, source)
    if not files:
        raise IngestError("no files given")
    progress = progress or NullProgress()
    progress.set_total(len(files) + 1, f"Parsing {len(files)} file(s)")
    parsed = parse_claim_files(files, mapping, format_name=format_name, progress=progress)
    normalizers = {spec.name: spec.normalizer for spec in mapping.attributes}
    tolerances = {spec.name: spec.tolerance.spec for spec in mapping.attributes if spec.tolerance is not None}
    result = ClaimLoadResult(files=len(files))
    parsed_count = sum(len(claims) for claims in parsed)
    message = f"Storing {parsed_count} claims from {len(files)} file(s)"
    # Nothing writes to the job row inside the transaction (its row lock would hold the
    # heartbeat back until the commit); a thread of its own beats meanwhile, so a long store
    # (800k claims: minutes) is never taken for a dead worker.
    progress.log(message)
    with KeepAlive(progress.heartbeat, message, every=heartbeat_interval()), transaction.atomic():
        ids, result.sources_created = _resolve_sources(
            {c.source for claims in parsed for c in claims if c.source}, source
        )
        rows = _first_per_key(
            _Row(ids[c.source], c, normalizers.get(c.attribute, "raw"), tolerance=tolerances.get(c.attribute, ""))
            for claims in parsed
            for c in claims
        )
        result.claims = len(rows)
        result.created, result.updated, result.unchanged = _upsert(rows, _job_id(job))
    progress.advance(
        1,
        f"Stored {result.claims} claims: {result.created} new, {result.updated} updated, {result.unchanged} unchanged",
    )
    return result


def start_claim_load(
    files: Sequence[tuple[str, bytes]],
    mapping: ClaimMapping,
    *,
    source: Source | str | None = None,
    format_name: str | None = None,
    user: Actor | None = None,
    validate: bool = True,
) -> JobRecord:
    """Keep the uploaded files in UPLOAD_DIR until the worker has loaded them, and start the
    job (tasks.load_claims); returns the Job at once. With ``validate`` the files are parsed
    first, so bad input is refused (IngestError) before any job exists."""
    if validate:
        validate_claim_uploads(files, mapping, source=source, format_name=format_name)
    else:
        check_source(mapping, source)
    folder, kept = keep_uploads(files)
    stored: list[JSONValue] = [{"path": str(path), "name": name} for path, name in kept]
    params: JSONObject = {
        "files": stored,
        "mapping": mapping.to_json(),
        "format": format_name or "",
        "upload_dir": str(folder.resolve()),
    }
    if isinstance(source, Source):
        params["source_id"] = source.pk
        params["source"] = source.name
    elif source:
        params["source"] = source
    return dispatch_job(kind="ingest", task_name="tasks.load_claims", params=params, user=user, queue="ingest")


def start_claim_key_embedding(*, user: Actor | None = None) -> JobRecord:
    """Embed the (subject, attribute) keys that have no embedding yet (tasks.embed_claim_keys)."""
    return dispatch_job(kind="ingest", task_name="tasks.embed_claim_keys", params={}, user=user, queue="ingest")


# --- free text ------------------------------------------------------------------------


def _document_texts(document: Document) -> list[tuple[int, str]]:
    """(ordinal, text) of a document's chunks; chunked now when it has none stored."""
    chunks = list(Chunk.objects.filter(document=document).order_by("ordinal").values_list("ordinal", "text"))
    if chunks:
        return chunks
    pieces = chunk_text(
        document.text, settings.CHUNK_SIZE_WORDS, settings.CHUNK_OVERLAP_WORDS, settings.CHUNK_MAX_CHARS
    )
    return [(piece.ordinal, piece.text) for piece in pieces]


def _text_claims(document: Document, outputs: list[tuple[int, str]]) -> list[ExtractedClaim]:
    """The claims of one document from its chunks' model outputs; ValueError if any is refused."""
    claims = []
    for ordinal, output in outputs:
        try:
            triples = parse_triples(output)
        except ValueError as exc:
            raise ValueError(f"chunk {ordinal}: {exc}") from None
        for subject, attribute, value in triples:
            name = normalize_text(attribute)
            normalised = normalize_text(value)
            if name is None or normalised is None:
                continue
            claims.append(
                ExtractedClaim(
                    subject=subject[:MAX_SUBJECT_CHARS],
                    attribute=name[:MAX_ATTRIBUTE_CHARS],
                    value=normalised,
                    raw_value=value,
                    provenance={"document": document.pk, "chunk": ordinal},
                    method=Claim.Method.MODEL,
                )
            )
    return claims


def extract_text_claims(
    source: Source, *, job: int | JobRecord | None = None, progress: Progress | None = None
) -> TextClaimResult:
    """Claims from the source's documents by the configured language model (method "model").

    Each chunk is sent with the extraction prompt; a document whose output for any chunk is
    not a valid triple list yields nothing (the job log says why) and the next is tried. The
    offline extractive reader writes no free text: ClaimExtractionUnavailable."""
    generator = configured_generator()
    if Capability.FREE_TEXT not in generator.capabilities:
        raise ClaimExtractionUnavailable(
            f"Text yields no claims without a language model: the configured generator ({generator.name}) only "
            "copies spans of passages. Set GENERATOR_BACKEND=openai (with LLM_BASE_URL and LLM_MODEL) or "
            "GENERATOR_BACKEND=transformers (with LLM_MODEL) to extract claims from text."
        )
    progress = progress or NullProgress()
    documents = list(Document.objects.filter(source=source).order_by("id").only("id", "text", "title"))
    progress.set_total(len(documents), f"Extracting claims from {len(documents)} document(s) of {source.name}")
    result = TextClaimResult()
    rows: list[_Row] = []
    for document in documents:
        texts = _document_texts(document)
        generations = generator.generate([GenerationRequest("", (), prompt=triple_prompt(text)) for _, text in texts])
        outputs = [(ordinal, g.text) for (ordinal, _), g in zip(texts, generations, strict=True)]
        try:
            claims = _text_claims(document, outputs)
        except ValueError as exc:
            result.rejected += 1
            progress.log(f"document {document.pk} ({document.title[:60]}): model output refused, no claims: {exc}")
        else:
            result.documents += 1
            rows.extend(_Row(source.pk, c, "text", document.pk) for c in claims)
        progress.advance(1, f"Read document {document.pk}")
    rows = _first_per_key(rows)
    result.claims = len(rows)
    with transaction.atomic():
        result.created, result.updated, result.unchanged = _upsert(rows, _job_id(job))
    return result


def start_text_claim_extraction(source: Source, *, user: Actor | None = None) -> JobRecord:
    """Start claim extraction from a source's documents (tasks.extract_text_claims); refuses at
    once, without a job, when no language model is configured."""
    generator = configured_generator()
    if Capability.FREE_TEXT not in generator.capabilities:
        raise ClaimExtractionUnavailable(
            "Text yields no claims without a language model (GENERATOR_BACKEND=openai or transformers); "
            f"the configured generator is {generator.name}."
        )
    return dispatch_job(
        kind="ingest",
        task_name="tasks.extract_text_claims",
        params={"source_id": source.pk, "source": source.name},
        user=user,
        queue="gpu",
    )
