"""Running an estimation run: which (query, source) pairs are missing, how they are split
into batches, how the run's job counts its progress, and the coordinator step that decides
which batches to send (a batch itself is answered by core.services.estimation.batch).

The coordinator keeps no state of its own: it is given the previous dispatch state and
returns the next one, which the task layer stores on the Job between steps. Its first step
writes the job's progress at once ("Preparing"), so a run shows it has started within the
time it takes a worker to pick the task up; the batches then raise the progress themselves
as they store their responses, whichever worker runs them.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypedDict

from django.conf import settings
from django.utils import timezone

from core.engine.types import JSONValue
from core.models import EstimationRun, FactQuery, RunResponse
from core.services.estimation.reuse import reuse_responses
from core.services.estimation.start import DEFAULT_PARAMS
from runtime.jobs import NullProgress, Progress

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


def run_pairs(run: EstimationRun) -> int:
    """How many (query, source) pairs the run answers (two COUNT queries)."""
    return FactQuery.objects.filter(query_set_id=run.query_set_id).count() * run.sources.count()


def batches(pairs: Sequence[tuple[int, int]], size: int) -> list[list[tuple[int, int]]]:
    """Batches of at most `size` pairs, in order; the pairs of one query stay in one batch
    where they fit (one retrieval and one query embedding per query), and a query with more
    sources than `size` fills batches of its own."""
    out: list[list[tuple[int, int]]] = []
    current: list[tuple[int, int]] = []
    start = 0
    while start < len(pairs):
        end = start
        while end < len(pairs) and pairs[end][0] == pairs[start][0]:
            end += 1
        group = list(pairs[start:end])
        if len(current) + len(group) > size and current:
            out.append(current)
            current = []
        while len(group) > size:
            out.append(group[:size])
            group = group[size:]
        current.extend(group)
        if len(current) == size:
            out.append(current)
            current = []
        start = end
    if current:
        out.append(current)
    return out


# The job's progress bar: a share for preparing (the coordinator's first step), one unit per
# (query, source) pair stored, and a share for estimating from the stored responses.
PHASE_SHARE = 0.05


@dataclass(frozen=True)
class RunProgress:
    """How a run's job counts: `phase` units preparing, one per pair, `phase` estimating."""

    pairs: int

    @property
    def phase(self) -> int:
        return max(1, math.ceil(self.pairs * PHASE_SHARE))

    @property
    def total(self) -> int:
        return self.pairs + 2 * self.phase

    def answering(self, stored: int) -> int:
        return self.phase + min(stored, self.pairs)

    def estimating(self) -> int:
        return self.phase + self.pairs


def answering_message(stored: int, total: int) -> str:
    return f"Answering: {stored} of {total} responses stored"


class DispatchState(TypedDict):
    """What a coordinator step hands the next one (stored on the Job as params["dispatch"]):
    the responses stored when it last looked, when (a timestamp), how many batches it sent,
    and how many times in a row it sent the missing batches again with nothing stored since."""

    stored: int
    at: float
    batches: int
    resends: int


def dispatch_state(value: JSONValue) -> DispatchState | None:
    """The dispatch state as the job stored it (None: the job's first step); ValueError for
    anything that is not one (the job fails rather than dispatching on a guess)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError(f"dispatch: expected an object, got {value!r}"[:200])
    stored, at, sent = value.get("stored"), value.get("at", 0), value.get("batches", 0)
    resends = value.get("resends", 0)  # absent in a state stored before it was counted
    if not all(isinstance(number, int) for number in (stored, sent, resends)) or not isinstance(at, int | float):
        raise ValueError(f"dispatch: expected stored, at, batches and resends as numbers, got {value!r}"[:200])
    assert isinstance(stored, int) and isinstance(sent, int) and isinstance(resends, int)
    return {"stored": stored, "at": float(at), "batches": sent, "resends": resends}


def dispatch_json(state: DispatchState | None) -> JSONValue:
    """The dispatch state as the job stores it."""
    if state is None:
        return None
    return {"stored": state["stored"], "at": state["at"], "batches": state["batches"], "resends": state["resends"]}


@dataclass(frozen=True)
class CoordinatorStep:
    """What one coordinator step decided.

    finished: every pair has a response (finish the run now); "stalled": nothing was stored
    although the missing batches were sent ESTIMATION_MAX_RESENDS times again (no worker takes
    them: fail the job with `reason`, so the run can be resumed once a worker does); otherwise
    "waiting".
    dispatch: the dispatch state to pass to the next step.
    send: batches of [query id, source id] pairs to enqueue as `tasks.generate_batch` now.
    """

    status: Literal["finished", "waiting", "stalled"]
    dispatch: DispatchState | None = None
    send: list[list[Pair]] = field(default_factory=list)
    reason: str = ""

    @property
    def finished(self) -> bool:
        return self.status == "finished"

    @property
    def stalled(self) -> bool:
        return self.status == "stalled"


def coordinate_run(
    run: EstimationRun,
    dispatch: DispatchState | None,
    progress: Progress | None = None,
    *,
    now: dt.datetime | None = None,
    bulk_work_reporting: Callable[[], bool] | None = None,
) -> CoordinatorStep:
    """One coordinator step, given the dispatch state the previous step returned (None at first).

    Batches are (re)sent on the first step, and when nothing was stored for
    ESTIMATION_STALL_SECONDS since the last dispatch (a batch was lost). Other steps only
    count the stored responses (and so keep the job's heartbeat). This step's heartbeat is
    not a sign that the batches are being answered: when nothing is stored after the batches
    were sent ESTIMATION_MAX_RESENDS times again, the step says "stalled" (no worker takes
    them), unless `bulk_work_reporting()` says the bulk worker is busy with other work that
    reports its progress (an ingestion): then the batches wait behind it, not sent again."""
    progress = progress or NullProgress()
    now = now or timezone.now()
    total = run_pairs(run)
    units = RunProgress(total)
    if dispatch is None:  # the job's first step: say so before any other work
        progress.set_total(units.total, f"Preparing: {total} (query, source) pairs to answer")
    if run.state == EstimationRun.State.PENDING:
        EstimationRun.objects.filter(pk=run.pk).update(state=EstimationRun.State.RUNNING)
        run.state = EstimationRun.State.RUNNING
    if dispatch is None:
        # Responses an earlier run stored with the same inputs are copied, not generated again.
        reused = reuse_responses(run, missing_pairs(run))
        if reused:
            progress.log(f"reused {reused} stored response(s) whose inputs are unchanged")
            params = {**run.params, "reused_responses": int(run.params.get("reused_responses", 0)) + reused}
            EstimationRun.objects.filter(pk=run.pk).update(params=params)
            run.params = params
    stored = RunResponse.objects.filter(run=run).count()
    if stored >= total and not missing_pairs(run):
        return CoordinatorStep("finished")
    stall = float(settings.ESTIMATION_STALL_SECONDS)
    if dispatch is not None:
        progress.advance_to(units.answering(stored), answering_message(stored, total))
        if stored != dispatch["stored"]:  # batches move
            return CoordinatorStep("waiting", {**dispatch, "stored": stored, "at": now.timestamp(), "resends": 0})
        if now.timestamp() - dispatch["at"] <= stall:
            return CoordinatorStep("waiting", dispatch)
        if bulk_work_reporting is not None and bulk_work_reporting():
            # The bulk worker is alive and busy (an ingestion reports): the batches wait in its
            # queue behind that work; sending them again would only pile up copies.
            return CoordinatorStep("waiting", {**dispatch, "at": now.timestamp()})
        limit = int(settings.ESTIMATION_MAX_RESENDS)
        if dispatch["resends"] >= limit:
            waited = round((now.timestamp() - dispatch["at"] + stall * limit) / 60)
            return CoordinatorStep(
                "stalled",
                dispatch,
                reason=(
                    f"No response was stored for about {waited} min although the missing batches were sent "
                    f"{limit + 1} times ({stored} of {total} stored): no worker is taking them (queue gpu). Check "
                    "that the bulk worker runs and consumes (its log: log/worker.log in the data folder; restart "
                    "it if it stopped taking tasks), then resume this run: its stored responses are kept."
                ),
            )
    # First step, or nothing stored for `stall` seconds (a batch was lost): (re)send.
    missing = missing_pairs(run)
    size = int(run.params.get("batch_size", DEFAULT_PARAMS["batch_size"]))
    send = [[list(pair) for pair in batch] for batch in batches(missing, size)]
    progress.advance_to(
        units.answering(stored), f"{answering_message(stored, total)}; {len(send)} batch(es) sent to the workers"
    )
    progress.log(f"dispatched {len(send)} batch(es) for {len(missing)} missing response(s)")
    resends = 0 if dispatch is None else dispatch["resends"] + 1
    return CoordinatorStep(
        "waiting", {"stored": stored, "at": now.timestamp(), "batches": len(send), "resends": resends}, send
    )
