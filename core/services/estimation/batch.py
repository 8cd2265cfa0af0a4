"""Answering one batch of an estimation run's (query, source) pairs, on whichever worker
takes it.

A batch is safe to run on several workers at once, and more than once:
- the worker claims the batch (an advisory lock on the run and its pairs, locks.claim); a
  second worker given the same batch while the first is on it returns at once;
- pairs that already have a response are skipped, and responses are stored in one bulk
  INSERT ... ON CONFLICT DO NOTHING against the unique (run, query, source) constraint, so a
  pair answered twice (a batch re-sent after a stall, two runs of a redelivered message)
  still has exactly one row, the first one stored;
- progress is reported as an absolute count of stored responses, raised and never lowered
  (Progress.advance_to), so concurrent batches may report in any order.

The passages a source reads are chunks whose vectors were stored at ingestion: they are
handed to the offline NLI with the passages (PgRetriever's vector sink, set by
build_context), so the alignment filter encodes only the short declarative answers, not the
passages again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from core.engine.estimation import answer_pairs
from core.engine.text import is_idk
from core.models import EstimationRun, FactQuery, RunResponse
from core.services.engine_context import build_context
from core.services.estimation.coordinate import RunProgress, answering_message, run_pairs
from core.services.estimation.locks import batch_claim_name
from core.services.estimation.reuse import pair_digests
from runtime.jobs import NullProgress, Progress
from runtime.locks import claim

ENDED = (EstimationRun.State.SUCCEEDED, EstimationRun.State.FAILED)


def generate_batch(
    run_id: int,
    pairs: Sequence[Sequence[int]],
    progress: Progress | None = None,
    *,
    heartbeat: Callable[[], object] | None = None,
) -> int:
    """Answer (query id, source id) pairs of a run and store them; returns the responses
    answered here (0 when the run has ended, every pair has a response, or another worker
    holds this batch).

    `heartbeat()` (the run's job's) is called when the batch starts, so a run whose batches
    take long is not taken for dead by the stale-job reaper; `progress` hears the run's
    stored responses once this batch's are stored."""
    progress = progress or NullProgress()
    run = EstimationRun.objects.filter(pk=run_id).first()
    if run is None or run.state in ENDED:
        return 0
    wanted = [(int(q), int(s)) for q, s in pairs]
    with claim(batch_claim_name(run.pk, wanted)) as held:
        if not held:
            return 0  # the same batch is being answered by another worker right now
        if heartbeat is not None:
            heartbeat()
        stored = _answer_and_store(run, wanted)
    if stored:
        total = run_pairs(run)
        count = RunResponse.objects.filter(run=run).count()
        progress.advance_to(RunProgress(total).answering(count), answering_message(count, total))
    return stored


def _answer_and_store(run: EstimationRun, wanted: list[tuple[int, int]]) -> int:
    queries = {q for q, _ in wanted}
    done = set(RunResponse.objects.filter(run=run, query_id__in=queries).values_list("query_id", "source_id"))
    texts = dict(FactQuery.objects.filter(pk__in=queries, query_set_id=run.query_set_id).values_list("id", "question"))
    todo = [(q, s) for q, s in wanted if (q, s) not in done and q in texts]
    if not todo:
        return 0
    query_ids = sorted({q for q, _ in todo})
    index = {q: i for i, q in enumerate(query_ids)}
    ctx = build_context(
        source_ids=sorted({s for _, s in todo}),
        k=run.params.get("k"),
        tau=run.params.get("tau"),
        min_relevance=run.params.get("min_relevance"),  # runs started before issue 36: the setting
    )
    records = answer_pairs([texts[q] for q in query_ids], [(index[q], s) for q, s in todo], ctx)
    digests = pair_digests(run, todo)
    rows = [
        RunResponse(
            run=run,
            query_id=query_ids[r.query_index],
            source_id=r.source_id,
            inputs=digests.get((query_ids[r.query_index], r.source_id), ""),
            raw_response=r.raw_response,
            response=r.response,
            is_idk=is_idk(r.response),
            filtered=r.filtered,
            align_score=float(r.score),
            chunk_ids=r.chunk_ids,
        )
        for r in records
    ]
    RunResponse.objects.bulk_create(rows, ignore_conflicts=True)
    return len(rows)
