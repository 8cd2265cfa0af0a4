"""Running an estimation run: which (query, source) pairs are missing, answering a batch of
them, and the coordinator step that decides which batches to send.

The coordinator keeps no state of its own: it is given the previous dispatch state and
returns the next one, which the task layer stores on the Job between steps.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from django.conf import settings
from django.utils import timezone

from core.engine.estimation import answer_pairs
from core.engine.text import is_idk
from core.models import EstimationRun, FactQuery, RunResponse
from core.services.engine_context import build_context
from core.services.estimation.start import DEFAULT_PARAMS
from core.services.jobs import NullProgress, Progress

Pair = list[int]  # [query id, source id], as sent to `tasks.generate_batch`


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


def generate_batch(run_id: int, pairs: Sequence[Sequence[int]], heartbeat: Callable[[], object] | None = None) -> int:
    """Answer (query id, source id) pairs of a run and store them; returns rows stored.

    `heartbeat()` (the run's job's) is called when the batch starts and once it is stored, so
    a run whose batches take long is not taken for dead by the stale-job reaper."""
    run = EstimationRun.objects.filter(pk=run_id).first()
    if run is None or run.state in (EstimationRun.State.SUCCEEDED, EstimationRun.State.FAILED):
        return 0
    if heartbeat is not None:
        heartbeat()
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
            chunk_ids=r.chunk_ids,
        )
        for r in records
    ]
    RunResponse.objects.bulk_create(rows, ignore_conflicts=True)
    if heartbeat is not None:
        heartbeat()
    return len(rows)


@dataclass(frozen=True)
class CoordinatorStep:
    """What one coordinator step decided.

    finished: every pair has a response (finish the run now); otherwise "waiting".
    dispatch: the dispatch state to pass to the next step ({"stored", "at", "batches"}).
    send: batches of [query id, source id] pairs to enqueue as `tasks.generate_batch` now.
    """

    status: Literal["finished", "waiting"]
    dispatch: dict[str, Any] | None = None
    send: list[list[Pair]] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        return self.status == "finished"


def coordinate_run(
    run: EstimationRun,
    dispatch: dict[str, Any] | None,
    progress: Progress | None = None,
    *,
    now: dt.datetime | None = None,
) -> CoordinatorStep:
    """One coordinator step, given the dispatch state the previous step returned (None at first).

    Batches are (re)sent on the first step, and when nothing was stored for
    ESTIMATION_STALL_SECONDS since the last dispatch (a batch was lost)."""
    progress = progress or NullProgress()
    now = now or timezone.now()
    queries, source_ids = run_layout(run)
    total = len(queries) * len(source_ids)
    stored = RunResponse.objects.filter(run=run).count()
    progress.set_total(total)
    progress.set_progress(stored, f"{stored} of {total} responses stored")
    if run.state == EstimationRun.State.PENDING:
        EstimationRun.objects.filter(pk=run.pk).update(state=EstimationRun.State.RUNNING)
        run.state = EstimationRun.State.RUNNING
    missing = missing_pairs(run)
    if not missing:
        return CoordinatorStep("finished")
    stall = float(settings.ESTIMATION_STALL_SECONDS)
    if dispatch is not None and stored != dispatch.get("stored"):
        return CoordinatorStep("waiting", {**dispatch, "stored": stored, "at": now.timestamp()})  # batches are moving
    if dispatch is None or now.timestamp() - float(dispatch.get("at", 0)) > stall:
        # First step, or nothing stored for `stall` seconds (a batch was lost): (re)send.
        size = int(run.params.get("batch_size", DEFAULT_PARAMS["batch_size"]))
        send = [[list(pair) for pair in batch] for batch in batches(missing, size)]
        progress.log(f"dispatched {len(send)} batch(es) for {len(missing)} missing response(s)")
        return CoordinatorStep("waiting", {"stored": stored, "at": now.timestamp(), "batches": len(send)}, send)
    return CoordinatorStep("waiting", dispatch)
