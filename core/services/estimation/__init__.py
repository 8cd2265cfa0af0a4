"""Estimation runs: answer every fact-checking query with every source, then estimate the
sources' reliability (with the RELIABILITY_ESTIMATOR setting's estimator by default).

How a run executes (robust with one worker of concurrency 1 on the filesystem broker, and
with many workers on several machines sharing PostgreSQL and Redis or RabbitMQ):
1. start.start_estimation_run() stores the run and dispatches a Job (kind "estimate") for
   the task `tasks.estimation_run` on the "default" queue.
2. That task calls coordinate.coordinate_run() and never waits on subtasks. Its first step
   writes the job's progress at once ("Preparing"), splits the missing (query, source) pairs
   into batches (a query's pairs together where they fit) for the task to send as
   `tasks.generate_batch` (queue "gpu"), and returns the dispatch state, which the task
   stores on the Job as it reschedules itself with a short countdown
   (ESTIMATION_POLL_SECONDS), freeing its worker slot for the batches. Later steps only
   count the stored responses; a dispatch that shows no new response for
   ESTIMATION_STALL_SECONDS is considered lost and its missing pairs are re-sent.
3. A batch (batch.generate_batch), on any worker, claims itself (locks: a PostgreSQL advisory
   lock, dropped with a dead worker's connection), answers its pairs
   (core.engine.estimation.answer_pairs, the passages' stored vectors handed to the offline
   NLI instead of encoding them again) and stores RunResponse rows in one bulk INSERT with
   ON CONFLICT DO NOTHING: the unique (run, query, source) constraint makes every batch
   idempotent and a run resumable: re-running it skips what exists. It then raises the job's
   progress to the run's stored count (never lowering it: batches report in any order).
4. When every pair has a response, finish.finish_once() (one process at a time, under the
   run's finishing claim) runs finish.finish_run(): it clusters each query's responses, runs
   the run's estimator (Beta(alpha, beta) prior) and stores RunAnswer, RunResponse.cluster/agrees,
   one ReliabilityScore per source, and the sources' current reliability; it returns the
   summary the job succeeds with.

Reliability: Source.reliability / ReliabilityScore.reliability is the estimated accuracy
w_i in [0, 1] (shown to users); ReliabilityScore.weight is the voting weight v_i under the
estimator's weight scheme, used by WMV. See core/services/engine_context.py. The estimator
is the run's ``params.estimator``, by default settings.RELIABILITY_ESTIMATOR; queries with
reference answers anchor the estimate unless ``params.use_gold`` is false.

Modules: start (validate, start, resume), coordinate (missing pairs, batches, progress units,
the coordinator step), batch (answer and store one batch), locks (advisory-lock claims), finish (estimate and store: scores with gold evidence, pairwise dependence; run_scores),
update (online updates: new gold evidence added to a finished run as a run of kind "update"),
queries (LLM-written fact-checking queries), claims (claim-level runs, kind "claims": resolve
every (subject, attribute) of the stored claims and estimate the sources from them, as the job
`tasks.claim_estimation`; no query set, no responses).
"""

from __future__ import annotations

from core.services.estimation.batch import generate_batch
from core.services.estimation.claim_runs import (
    claim_run_message,
    refuse_gold_update,
    resume_claim_run,
    run_claim_estimation,
    start_claim_run,
)
from core.services.estimation.coordinate import (
    CoordinatorStep,
    DispatchState,
    RunProgress,
    batches,
    coordinate_run,
    dispatch_json,
    dispatch_state,
    missing_pairs,
    run_layout,
    run_pairs,
)
from core.services.estimation.finish import (
    RunEnded,
    fail_run,
    fail_runs_of_ended_jobs,
    finish_once,
    finish_run,
    finished_message,
    run_scores,
)
from core.services.estimation.queries import QueryGenerationUnavailable, generate_queries
from core.services.estimation.start import (
    ALL_SOURCES,
    DEFAULT_PARAMS,
    TooManyRuns,
    default_params,
    default_query_set,
    resume_estimation_run,
    sources_for_names,
    start_estimation_run,
)
from core.services.estimation.update import apply_gold_update, full_run_of

__all__ = [
    "ALL_SOURCES",
    "apply_gold_update",
    "full_run_of",
    "DEFAULT_PARAMS",
    "CoordinatorStep",
    "DispatchState",
    "QueryGenerationUnavailable",
    "RunProgress",
    "RunEnded",
    "TooManyRuns",
    "batches",
    "claim_run_message",
    "coordinate_run",
    "default_params",
    "dispatch_json",
    "dispatch_state",
    "default_query_set",
    "fail_run",
    "fail_runs_of_ended_jobs",
    "finish_once",
    "finish_run",
    "finished_message",
    "generate_batch",
    "generate_queries",
    "missing_pairs",
    "refuse_gold_update",
    "resume_claim_run",
    "resume_estimation_run",
    "run_claim_estimation",
    "run_layout",
    "run_pairs",
    "run_scores",
    "sources_for_names",
    "start_claim_run",
    "start_estimation_run",
]
