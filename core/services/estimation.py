"""Estimation runs: answer every fact-checking query with every source, then IWMV.

How a run executes (robust with one worker of concurrency 1 on the filesystem broker):
1. start_estimation_run() stores the run and a Job (kind ESTIMATE) and enqueues
   `tasks.estimation_run` on "default".
2. The coordinator (`advance_run`) never waits on subtasks. On each visit it counts the
   stored responses; if some (query, source) pairs are missing and no batch is in flight, it
   enqueues `tasks.generate_batch` tasks (queue "gpu") for them, then re-enqueues itself
   with a short countdown and returns, freeing its worker slot for the batches.
3. A batch answers its pairs (core.engine.estimation.answer_pairs) and stores RunResponse rows
   with ON CONFLICT DO NOTHING: the unique (run, query, source) constraint makes every
   batch idempotent and a run resumable: re-running it skips what exists.
4. When every pair has a response, `finish_run` clusters each query's responses, runs
   IWMV (Beta(1,1) prior) and stores RunAnswer, RunResponse.cluster/agrees, one
   ReliabilityScore per source, and the sources' current reliability.

Reliability: Source.reliability / ReliabilityScore.reliability is the estimated accuracy
w_i in [0, 1] (shown to users); ReliabilityScore.weight is the IWMV voting weight
v_i = N * w_i - 1 (floored), used by WMV. See core/services/engine_context.py.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import QuerySet as DjangoQuerySet
from django.utils import timezone

from core.models import EstimationRun, FactQuery, QuerySet, ReliabilityScore, RunAnswer, RunResponse
from sources.models import Document, Source

DEFAULT_PARAMS: dict[str, Any] = {"alpha": 1.0, "beta": 1.0, "strict": False, "batch_size": 24}
# A dispatched batch that shows no new response for this long is considered lost and re-sent.
STALL_SECONDS = 600
POLL_SECONDS = 1.0


def _setting(name: str, default: Any) -> Any:
    return getattr(settings, name, default)


# --- starting -----------------------------------------------------------------------------


def default_query_set() -> QuerySet | None:
    named = QuerySet.objects.filter(name="demo").first()
    if named is not None:
        return named
    sets = list(QuerySet.objects.all()[:2])
    return sets[0] if len(sets) == 1 else None


def _clean_params(params: dict[str, Any] | None) -> dict[str, Any]:
    params = dict(params or {})
    errors: dict[str, str] = {}
    unknown = set(params) - {"alpha", "beta", "strict", "batch_size", "k", "tau"}
    if unknown:
        errors["params"] = f"Unknown parameter(s): {', '.join(sorted(unknown))}."
    for name in ("alpha", "beta"):
        if name in params:
            try:
                params[name] = float(params[name])
                if params[name] < 0:
                    raise ValueError
            except (TypeError, ValueError):
                errors[name] = f"{name} must be a non-negative number."
    for name, low, high in (("batch_size", 1, 1000), ("k", 1, 50)):
        if name in params:
            value = params[name]
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                errors[name] = f"{name} must be a whole number from {low} to {high}."
    if "tau" in params:
        try:
            params["tau"] = float(params["tau"])
            if not 0.0 <= params["tau"] <= 1.0:
                raise ValueError
        except (TypeError, ValueError):
            errors["tau"] = "tau must be a number from 0 to 1."
    if "strict" in params and not isinstance(params["strict"], bool):
        errors["strict"] = "strict must be true or false."
    if errors:
        raise ValidationError(errors)
    return {**DEFAULT_PARAMS, "k": settings.RETRIEVAL_K, "tau": settings.ALIGN_TAU, **params}


def start_estimation_run(
    *,
    query_set: QuerySet | None = None,
    sources: Iterable[Source] | None = None,
    params: dict[str, Any] | None = None,
    user: Any = None,
) -> EstimationRun:
    """Validate, store the run and its Job, enqueue `tasks.estimation_run` on "default"."""
    from tasks.engine_tasks import estimation_run as run_task
    from tasks.jobs import start_job
    from tasks.models import Job

    errors: dict[str, str] = {}
    query_set = query_set or default_query_set()
    if query_set is None:
        errors["query_set"] = "Choose a query set: there is no set named 'demo' and not exactly one set."
    elif not query_set.queries.exists():
        errors["query_set"] = f"The query set {query_set.name!r} holds no queries."
    if sources is None:
        chosen = list(Source.objects.filter(active=True, chunk_count__gt=0).order_by("id"))
    else:
        chosen = list(sources)
    if not chosen:
        errors["sources"] = "Choose at least one source (no active source holds documents)."
    elif sources is not None:
        empty = [s.name for s in chosen if not s.chunk_count]
        if empty:
            errors["sources"] = f"These sources hold no documents: {', '.join(empty)}."
    try:
        cleaned = _clean_params(params)
    except ValidationError as exc:
        errors.update({k: v[0] for k, v in exc.message_dict.items()})
    if errors:
        raise ValidationError(errors)
    from core.services.engine_context import configured_generator

    with transaction.atomic():
        run = EstimationRun.objects.create(
            query_set=query_set,
            params=cleaned,
            backend=configured_generator().name,
            created_by=user if getattr(user, "is_authenticated", False) else None,
        )
        run.sources.set(chosen)
        job = start_job(Job.Kind.ESTIMATE, run_task, {"run_id": run.pk}, user=user, queue="default")
        run.job = job
        run.save(update_fields=["job"])
    return run


def resume_estimation_run(run: EstimationRun, *, user: Any = None) -> EstimationRun:
    """Run an existing run again under a new Job: stored responses are kept and skipped,
    only missing pairs are generated, then the estimate is recomputed."""
    from tasks.engine_tasks import estimation_run as run_task
    from tasks.jobs import start_job
    from tasks.models import Job

    with transaction.atomic():
        locked = EstimationRun.objects.select_for_update().get(pk=run.pk)
        if locked.job_id and not locked.job.finished:
            raise ValidationError({"run": f"Run #{run.pk} is still in progress (job {locked.job_id})."})
        job = start_job(Job.Kind.ESTIMATE, run_task, {"run_id": run.pk}, user=user, queue="default")
        EstimationRun.objects.filter(pk=run.pk).update(job=job, state=EstimationRun.State.PENDING, finished_at=None)
    run.refresh_from_db()
    return run


# --- generating ---------------------------------------------------------------------------


def run_layout(run: EstimationRun) -> tuple[list[FactQuery], list[int]]:
    queries = list(FactQuery.objects.filter(query_set_id=run.query_set_id).order_by("id"))
    source_ids = sorted(run.sources.values_list("id", flat=True))
    return queries, source_ids


def missing_pairs(run: EstimationRun) -> list[tuple[int, int]]:
    """(query id, source id) pairs of the run with no stored response, query-major."""
    queries, source_ids = run_layout(run)
    done = set(RunResponse.objects.filter(run=run).values_list("query_id", "source_id"))
    return [(q.pk, s) for q in queries for s in source_ids if (q.pk, s) not in done]


def batches(pairs: Sequence[tuple[int, int]], size: int) -> list[list[tuple[int, int]]]:
    """Chunks of `size` pairs; pairs of one query stay together where they fit (one retrieval)."""
    return [list(pairs[i : i + size]) for i in range(0, len(pairs), size)]


def generate_batch(run_id: int, pairs: Sequence[Sequence[int]]) -> int:
    """Answer (query id, source id) pairs of a run and store them; returns rows stored."""
    from core.engine.estimation import answer_pairs
    from core.services.engine_context import build_context

    run = EstimationRun.objects.filter(pk=run_id).first()
    if run is None or run.state in (EstimationRun.State.SUCCEEDED, EstimationRun.State.FAILED):
        return 0
    done = set(RunResponse.objects.filter(run=run).values_list("query_id", "source_id"))
    todo = [(int(q), int(s)) for q, s in pairs if (int(q), int(s)) not in done]
    if not todo:
        return 0
    texts = dict(FactQuery.objects.filter(pk__in={q for q, _ in todo}).values_list("id", "question"))
    todo = [(q, s) for q, s in todo if q in texts]
    query_ids = sorted({q for q, _ in todo})
    index = {q: i for i, q in enumerate(query_ids)}
    ctx = build_context(source_ids=sorted({s for _, s in todo}), k=run.params.get("k"), tau=run.params.get("tau"))
    records = answer_pairs([texts[q] for q in query_ids], [(index[q], s) for q, s in todo], ctx)
    from core.engine.text import is_idk

    rows = [
        RunResponse(
            run=run,
            query_id=query_ids[r.query_index],
            source_id=r.source_id,
            raw_response=r.raw_response,
            response=r.response,
            is_idk=is_idk(r.response),
            filtered=r.filtered,
            align_score=float(r.score),
        )
        for r in records
    ]
    RunResponse.objects.bulk_create(rows, ignore_conflicts=True)
    return len(rows)


# --- coordinating -------------------------------------------------------------------------


def _progress_of(run: EstimationRun) -> Any:
    from tasks.progress import JobProgress

    return JobProgress(run.job_id) if run.job_id else None


def advance_run(run: EstimationRun, *, dispatch: Any, reschedule: Any, now: dt.datetime | None = None) -> str:
    """One coordinator step. dispatch(pairs) enqueues a generate_batch; reschedule() enqueues
    the next coordinator step. Returns "waiting", "finished" or "failed"."""
    now = now or timezone.now()
    progress = _progress_of(run)
    queries, source_ids = run_layout(run)
    total = len(queries) * len(source_ids)
    stored = RunResponse.objects.filter(run=run).count()
    if progress is not None:
        progress.set_total(total)
        progress.set_progress(stored, f"{stored} of {total} responses stored")
    if run.state == EstimationRun.State.PENDING:
        EstimationRun.objects.filter(pk=run.pk).update(state=EstimationRun.State.RUNNING)
        run.state = EstimationRun.State.RUNNING
    missing = missing_pairs(run)
    if not missing:
        finish_run(run)
        return "finished"
    job_params = dict(run.job.params) if run.job_id else {}
    last = job_params.get("dispatch")
    stall = float(_setting("ESTIMATION_STALL_SECONDS", STALL_SECONDS))
    if last is not None and stored != last.get("stored"):
        job_params["dispatch"] = {**last, "stored": stored, "at": now.timestamp()}  # batches are moving
    elif last is None or now.timestamp() - float(last.get("at", 0)) > stall:
        # First visit, or nothing stored for `stall` seconds (a batch was lost): (re)send.
        size = int(run.params.get("batch_size", DEFAULT_PARAMS["batch_size"]))
        sent = batches(missing, size)
        for batch in sent:
            dispatch([list(p) for p in batch])
        job_params["dispatch"] = {"stored": stored, "at": now.timestamp(), "batches": len(sent)}
        if progress is not None:
            progress.log(f"dispatched {len(sent)} batch(es) for {len(missing)} missing response(s)")
    if run.job_id:
        from tasks.models import Job

        Job.objects.filter(pk=run.job_id).update(params=job_params)
    reschedule()
    return "waiting"


def _representative(responses: list[str]) -> str:
    counts = Counter(r.strip() for r in responses)
    return max(counts, key=lambda text: (counts[text], -responses.index(text) if text in responses else 0))


def finish_run(run: EstimationRun) -> dict[str, Any]:
    """Cluster, IWMV, and store answers, scores and the sources' current reliability."""
    from core.engine.estimation import ResponseRecord, estimate_from_records
    from core.services.engine_context import configured_nli

    queries, source_ids = run_layout(run)
    index = {q.pk: i for i, q in enumerate(queries)}
    responses = list(RunResponse.objects.filter(run=run).order_by("query_id", "source_id"))
    records = [
        ResponseRecord(index[r.query_id], r.source_id, r.raw_response, r.response, r.filtered, r.align_score)
        for r in responses
        if r.query_id in index
    ]
    by_record = {
        id(rec): resp for rec, resp in zip(records, [r for r in responses if r.query_id in index], strict=False)
    }
    alpha = float(run.params.get("alpha", 1.0))
    beta = float(run.params.get("beta", 1.0))
    result, records = estimate_from_records(
        [q.question for q in queries],
        source_ids,
        records,
        configured_nli(),
        strict=bool(run.params.get("strict", False)),
        alpha=alpha,
        beta=beta,
    )
    weight = dict(zip(source_ids, result.weights, strict=False))
    answers = []
    for q, query in enumerate(queries):
        winner = result.answers[q]
        members = [rec for rec in records if rec.query_index == q and rec.cluster is not None and rec.cluster == winner]
        answers.append(
            RunAnswer(
                run=run,
                query=query,
                cluster=winner,
                answer=_representative([m.response for m in members]) if members else "",
                support=float(sum(weight[m.source_id] for m in members)),
            )
        )
    for rec in records:
        resp = by_record[id(rec)]
        resp.cluster = rec.cluster
        winner = result.answers[rec.query_index]
        resp.agrees = None if rec.cluster is None else (winner is not None and rec.cluster == winner)
    now = timezone.now()
    with transaction.atomic():
        RunResponse.objects.bulk_update(list(by_record.values()), ["cluster", "agrees"], batch_size=1000)
        RunAnswer.objects.filter(run=run).delete()
        RunAnswer.objects.bulk_create(answers)
        ReliabilityScore.objects.filter(run=run).delete()
        scores = []
        for sid, rel in zip(source_ids, result.sources, strict=False):
            low, high = rel.interval
            scores.append(
                ReliabilityScore(
                    run=run,
                    source_id=sid,
                    reliability=rel.accuracy,
                    weight=rel.weight,
                    low=low,
                    high=high,
                    answers=rel.answers,
                    agreements=rel.agreements,
                )
            )
            Source.objects.filter(pk=sid).update(
                reliability=rel.accuracy,
                reliability_low=low,
                reliability_high=high,
                reliability_answers=rel.answers,
                reliability_updated_at=now,
            )
        ReliabilityScore.objects.bulk_create(scores)
        EstimationRun.objects.filter(pk=run.pk).update(
            state=EstimationRun.State.SUCCEEDED,
            iterations=result.iterations,
            converged=result.converged,
            finished_at=now,
        )
    names = dict(Source.objects.filter(pk__in=source_ids).values_list("id", "name"))
    summary = {
        "run_id": run.pk,
        "queries": len(queries),
        "sources": len(source_ids),
        "responses": len(responses),
        "iterations": result.iterations,
        "converged": result.converged,
        "scores": [
            {
                "source": names[sid],
                "source_id": sid,
                "reliability": round(rel.accuracy, 4),
                "weight": round(rel.weight, 4),
                "low": round(rel.interval[0], 4),
                "high": round(rel.interval[1], 4),
                "answers": rel.answers,
                "agreements": rel.agreements,
            }
            for sid, rel in zip(source_ids, result.sources, strict=False)
        ],
    }
    progress = _progress_of(run)
    if progress is not None:
        progress.succeed(summary, message=f"Estimated {len(source_ids)} source(s) over {len(queries)} queries")
    return summary


def fail_run(run_id: int, error: BaseException | str) -> None:
    run = EstimationRun.objects.filter(pk=run_id).first()
    if run is None:
        return
    EstimationRun.objects.filter(pk=run_id).update(state=EstimationRun.State.FAILED, finished_at=timezone.now())
    progress = _progress_of(run)
    if progress is not None:
        progress.fail(error)


def run_scores(run: EstimationRun) -> list[dict[str, Any]]:
    return [
        {
            "source": s.source.name,
            "source_id": s.source_id,
            "reliability": round(s.reliability, 4),
            "weight": round(s.weight, 4),
            "low": round(s.low, 4),
            "high": round(s.high, 4),
            "answers": s.answers,
            "agreements": s.agreements,
        }
        for s in run.scores.select_related("source").order_by("source__name")
    ]


# --- fact-checking queries from documents ------------------------------------------------


class QueryGenerationUnavailable(RuntimeError):
    """Generating queries needs an LLM backend; offline, curated query sets are used."""


_QUESTION_PROMPT = (
    "Read the passage and write ONE short factual question that the passage answers, "
    "and its answer in a few words.\nFormat exactly:\nQuestion: <question>\nAnswer: <answer>\n\n"
    "Passage: {passage}\n"
)
_CLAIM_PROMPT = (
    "State the main factual claim of the passage as one short declarative sentence, "
    "without a trailing period.\n\nPassage: {passage}\nClaim:"
)


def _first_sentence(text: str) -> str:
    return re.split(r"(?<=[.!?])\s+", text.strip(), maxsplit=1)[0].rstrip(".!? ")


def generate_queries(documents: Iterable[Document], query_set: QuerySet, generator: Any) -> list[FactQuery]:
    """Fact-checking queries from documents, as in the RA-RAG paper: a question whose answer
    the document states ("What causes COVID-19?") and a yes/no claim check ("Is it true that
    {claim}?"). Needs an LLM backend; the offline extractive reader cannot write questions."""
    from core.engine.backends.generation.base import GenerationRequest
    from core.engine.text import is_idk

    if getattr(generator, "name", "").startswith("extractive"):
        raise QueryGenerationUnavailable(
            "Generating fact-checking queries needs an LLM backend (GENERATOR_BACKEND=openai or transformers); "
            "with the offline extractive reader, use a curated query set (admin: Query sets, or load_demo)."
        )
    docs = list(documents)
    if not docs:
        return []
    requests = []
    for doc in docs:
        passage = doc.text[:2000]
        requests.append(GenerationRequest(doc.title or "", [], prompt=_QUESTION_PROMPT.format(passage=passage)))
        requests.append(GenerationRequest(doc.title or "", [], prompt=_CLAIM_PROMPT.format(passage=passage)))
    outputs = generator.generate(requests)
    created: list[FactQuery] = []
    for i, doc in enumerate(docs):
        qa, claim = outputs[2 * i].text, outputs[2 * i + 1].text.strip().strip('"').rstrip(".")
        match = re.search(r"question:\s*(.+?)\s*(?:\n|$)(?:.*?answer:\s*(.+))?", qa, re.IGNORECASE | re.DOTALL)
        if match and match.group(1).strip():
            question = match.group(1).strip()
            answer = (match.group(2) or "").strip().splitlines()[0] if match.group(2) else ""
            query, made = FactQuery.objects.get_or_create(
                query_set=query_set,
                question=question[:2000],
                defaults={
                    "origin": FactQuery.Origin.GENERATED,
                    "document": doc,
                    "reference_answers": [answer] if answer and not is_idk(answer) else [],
                },
            )
            if made:
                created.append(query)
        claim = claim if claim and not is_idk(claim) else (doc.metadata.get("claim") or _first_sentence(doc.text))
        if claim:
            claim = claim[0].lower() + claim[1:] if len(claim) > 1 and not claim[:2].isupper() else claim
            query, made = FactQuery.objects.get_or_create(
                query_set=query_set,
                question=f"Is it true that {claim}?"[:2000],
                defaults={"origin": FactQuery.Origin.YES_NO, "document": doc, "reference_answers": ["yes"]},
            )
            if made:
                created.append(query)
    return created


def sources_for_names(names: Sequence[str]) -> DjangoQuerySet[Source]:
    found = Source.objects.filter(name__in=names)
    unknown = sorted(set(names) - set(found.values_list("name", flat=True)))
    if unknown:
        raise ValidationError({"sources": f"Unknown source(s): {', '.join(unknown)}."})
    return found
