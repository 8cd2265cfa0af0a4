"""Estimation runs: answer every fact-checking query with every source, then estimate the
sources' reliability (with the RELIABILITY_ESTIMATOR setting's estimator by default).

How a run executes (robust with one worker of concurrency 1 on the filesystem broker):
1. start.start_estimation_run() stores the run and dispatches a Job (kind "estimate") for
   the task `tasks.estimation_run` on the "default" queue.
2. That task calls coordinate.coordinate_run() and never waits on subtasks. Each step counts
   the stored responses; if some (query, source) pairs are missing and no batch is in flight,
   it returns batches for the task to send as `tasks.generate_batch` (queue "gpu"), and the new
   dispatch state, which the task stores on the Job as it reschedules itself with a short
   countdown (ESTIMATION_POLL_SECONDS), freeing its worker slot for the batches. A dispatch
   that shows no new response for ESTIMATION_STALL_SECONDS is considered lost and re-sent.
3. A batch (coordinate.generate_batch) answers its pairs (core.engine.estimation.answer_pairs)
   and stores RunResponse rows with ON CONFLICT DO NOTHING: the unique (run, query, source)
   constraint makes every batch idempotent and a run resumable: re-running it skips what exists.
4. When every pair has a response, finish.finish_run() clusters each query's responses, runs
   the run's estimator (Beta(alpha, beta) prior) and stores RunAnswer, RunResponse.cluster/agrees,
   one ReliabilityScore per source, and the sources' current reliability; it returns the
   summary the job succeeds with.

Reliability: Source.reliability / ReliabilityScore.reliability is the estimated accuracy
w_i in [0, 1] (shown to users); ReliabilityScore.weight is the voting weight v_i under the
estimator's weight scheme, used by WMV. See core/services/engine_context.py. The estimator
is the run's ``params.estimator``, by default settings.RELIABILITY_ESTIMATOR; queries with
reference answers anchor the estimate unless ``params.use_gold`` is false.

Modules: start (validate, start, resume), coordinate (missing pairs, batches, the coordinator
step), finish (estimate and store: scores with gold evidence, pairwise dependence; run_scores),
update (online updates: new gold evidence added to a finished run as a run of kind "update"),
queries (LLM-written fact-checking queries), claims (claim-level runs, kind "claims": resolve
every (subject, attribute) of the stored claims and estimate the sources from them, as the job
`tasks.claim_estimation`; no query set, no responses).
"""

from __future__ import annotations

from core.services.estimation.claims import (
    claim_run_message,
    refuse_gold_update,
    resume_claim_run,
    run_claim_estimation,
    start_claim_run,
)
from core.services.estimation.coordinate import (
    CoordinatorStep,
    batches,
    coordinate_run,
    generate_batch,
    missing_pairs,
    run_layout,
)
from core.services.estimation.finish import (
    RunEnded,
    fail_run,
    fail_runs_of_ended_jobs,
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
    "QueryGenerationUnavailable",
    "RunEnded",
    "TooManyRuns",
    "batches",
    "claim_run_message",
    "coordinate_run",
    "default_params",
    "default_query_set",
    "fail_run",
    "fail_runs_of_ended_jobs",
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
    "run_scores",
    "sources_for_names",
    "start_claim_run",
    "start_estimation_run",
]
