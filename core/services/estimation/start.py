"""Starting an estimation run: validate the request, store the run, dispatch its job."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q, QuerySet

from core.engine.reliability import available_estimators
from core.engine.types import JSONObject, JSONValue
from core.models import EstimationRun, QueryCollection
from runtime.backends import configured_generator
from runtime.jobs import JobRecord, dispatch_job
from runtime.users import Actor, signed_in
from sources.models import Source

# What a run's params default to; the estimator a run names none of is the
# RELIABILITY_ESTIMATOR setting (default_params()), k and tau come from settings too.
DEFAULT_PARAMS: JSONObject = {
    "alpha": 1.0,
    "beta": 1.0,
    "strict": False,
    "batch_size": 24,
    "use_gold": True,  # queries with reference answers anchor the estimate; false: agreement only
}
KNOWN_PARAMS = frozenset(
    {"alpha", "beta", "strict", "batch_size", "k", "tau", "min_relevance", "estimator", "use_gold", "gold_query_ids"}
)
MAX_GOLD_QUERY_IDS = 10_000


def default_params() -> JSONObject:
    """Every parameter a run that names none gets, from DEFAULT_PARAMS and the settings."""
    return {
        **DEFAULT_PARAMS,
        "k": settings.RETRIEVAL_K,
        "tau": settings.ALIGN_TAU,
        "min_relevance": settings.MIN_RELEVANCE,
        "estimator": settings.RELIABILITY_ESTIMATOR,
    }


def default_query_set() -> QueryCollection | None:
    named = QueryCollection.objects.filter(name="demo").first()
    if named is not None:
        return named
    sets = list(QueryCollection.objects.all()[:2])
    return sets[0] if len(sets) == 1 else None


def sources_for_names(names: Sequence[str]) -> QuerySet[Source]:
    found = Source.objects.filter(name__in=names)
    unknown = sorted(set(names) - set(found.values_list("name", flat=True)))
    if unknown:
        raise ValidationError({"sources": f"Unknown source(s): {', '.join(unknown)}."})
    return found


# The Beta prior's pseudo-counts (alpha agreements, beta disagreements). A prior worth more
# than this many answers would drown any query set's evidence; far larger values (1e308)
# overflowed alpha + beta to infinity and set every source's reliability to its floor.
MAX_PRIOR = 1000.0


def _number(value: JSONValue) -> float | None:
    """A finite float from a number or numeric text, else None: "nan", "inf" and "1e400"
    (infinite once parsed) are refused, as are booleans."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def _clean_params(params: Mapping[str, JSONValue] | None) -> JSONObject:
    params = dict(params or {})
    errors: dict[str, str] = {}
    unknown = set(params) - KNOWN_PARAMS
    if unknown:
        errors["params"] = f"Unknown parameter(s): {', '.join(sorted(unknown))}."
    for name in ("alpha", "beta"):
        if name in params:
            value = _number(params[name])
            if value is None or not 0.0 <= value <= MAX_PRIOR:
                errors[name] = f"{name} must be a number from 0 to {MAX_PRIOR:g}."
            else:
                params[name] = value
    for name, low, high in (("batch_size", 1, 1000), ("k", 1, 50)):
        if name in params:
            given = params[name]
            if isinstance(given, bool) or not isinstance(given, int) or not low <= given <= high:
                errors[name] = f"{name} must be a whole number from {low} to {high}."
    for name in ("tau", "min_relevance"):
        if name in params:
            number = _number(params[name])
            if number is None or not 0.0 <= number <= 1.0:
                errors[name] = f"{name} must be a number from 0 to 1."
            else:
                params[name] = number
    for name in ("strict", "use_gold"):
        if name in params and not isinstance(params[name], bool):
            errors[name] = f"{name} must be true or false."
    if "gold_query_ids" in params:
        # Only these queries' reference answers anchor the run (the demo's: a few, so the run
        # shows reliability from agreement; checks a curator answers are added to the list).
        ids = params["gold_query_ids"]
        if (
            not isinstance(ids, list)
            or len(ids) > MAX_GOLD_QUERY_IDS
            or not all(isinstance(i, int) and not isinstance(i, bool) and 0 < i < 2**63 for i in ids)
        ):
            errors["gold_query_ids"] = f"gold_query_ids must be a list of at most {MAX_GOLD_QUERY_IDS} query ids."
        else:
            unique = sorted({i for i in ids if isinstance(i, int)})  # all of them: checked above
            params["gold_query_ids"] = [i for i in unique]  # a list of JSON values (list is invariant)
    if "estimator" in params and params["estimator"] not in available_estimators():
        errors["estimator"] = f"estimator must be one of: {', '.join(available_estimators())}."
    if errors:
        raise ValidationError(errors)
    return {**default_params(), **params}


ALL_SOURCES: Literal["all"] = "all"
SOURCES_REQUIRED = (
    'Choose the sources: a list of source ids, or "all" for every active source with documents '
    "(an estimation run is never started over everything by default)."
)
IN_PROGRESS = (EstimationRun.State.PENDING, EstimationRun.State.RUNNING)
# Reliability is estimated from how often a source agrees with the others: with one source it
# only agrees with itself (a single-source run once gave it 0.80), with two a disagreement
# cannot tell which of them is wrong. A third source is the least that can break the tie.
MIN_SOURCES = 3


def too_few_sources(count: int, *, every_active: bool = False) -> str:
    """Why a run over `count` sources is refused (the message every entry point shows);
    `every_active`: the sources were "all", the active sources that hold documents."""
    plural = "s" if count != 1 else ""
    given = (
        f"only {count} active source{plural} with documents {'exists' if count == 1 else 'exist'}"
        if every_active
        else f"{count} {'was' if count == 1 else 'were'} chosen"
    )
    return (
        f"An estimation run needs at least {MIN_SOURCES} sources ({given}): a source's reliability comes from "
        "how often it agrees with the other sources, so one source would only agree with itself and two cannot "
        "tell which of them is wrong."
    )


class TooManyRuns(ValidationError):
    """The user already has ESTIMATION_MAX_CONCURRENT_PER_USER runs pending or running."""


def _chosen_sources(sources: Iterable[Source] | Literal["all"] | None, errors: dict[str, str]) -> list[Source]:
    if sources is None:
        errors["sources"] = SOURCES_REQUIRED
        return []
    if isinstance(sources, str):
        if sources != ALL_SOURCES:
            errors["sources"] = SOURCES_REQUIRED
            return []
        chosen = list(Source.objects.filter(active=True, chunk_count__gt=0).order_by("id"))
        if not chosen:
            errors["sources"] = "No active source holds documents yet: there is nothing to estimate."
        elif len(chosen) < MIN_SOURCES:
            errors["sources"] = too_few_sources(len(chosen), every_active=True)
        return chosen
    chosen = list(sources)
    if not chosen:
        errors["sources"] = "Choose at least one source."
        return chosen
    empty = [s.name for s in chosen if not s.chunk_count]
    if empty:
        errors["sources"] = f"These sources hold no documents: {', '.join(empty)}."
    elif len({s.pk for s in chosen}) < MIN_SOURCES:
        errors["sources"] = too_few_sources(len({s.pk for s in chosen}))
    return chosen


def _check_concurrency(user: Actor | None, *, resuming: EstimationRun | None = None) -> None:
    """At most ESTIMATION_MAX_CONCURRENT_PER_USER runs of one user pending or running at once:
    those they started and those whose current job they started (a run they resumed), so
    starting and resuming (API, dashboard) share one cap; ``resuming``: the run about to be
    resumed, which does not count against itself.

    Runs in the caller's transaction with the user's row locked, so two requests at the same
    moment cannot both take the last slot. Runs started without a user (the CLI) are not capped."""
    account = signed_in(user)
    if account is None:
        return
    limit = int(settings.ESTIMATION_MAX_CONCURRENT_PER_USER)
    get_user_model().objects.select_for_update().filter(pk=account.pk).first()
    mine = EstimationRun.objects.filter(Q(created_by_id=account.pk) | Q(job__created_by_id=account.pk))
    if resuming is not None:
        mine = mine.exclude(pk=resuming.pk)
    running = mine.filter(state__in=IN_PROGRESS).count()
    if running >= limit:
        again = "Resume" if resuming is not None else "Start"
        raise TooManyRuns(
            {
                "runs": (
                    f"You already have {running} estimation run(s) in progress; at most {limit} at once "
                    f"(ESTIMATION_MAX_CONCURRENT_PER_USER). {again} this one when one of them has finished."
                )
            },
            code="too_many_runs",
        )


def _dispatch(run: EstimationRun, user: Actor | None) -> JobRecord:
    return dispatch_job(
        kind="estimate", task_name="tasks.estimation_run", params={"run_id": run.pk}, user=user, queue="default"
    )


SUPERSEDED_MESSAGE = (
    "A newer run has estimated these sources since: estimating this one again would put its older reliabilities "
    "back. Answer the checks of the latest run instead."
)


def superseded(run: EstimationRun) -> bool:
    """Whether a newer run (text or claims) has estimated any of this run's sources since it
    finished: re-estimating it would put its older reliabilities back over the newer ones."""
    if run.finished_at is None:
        return False
    # Text runs and claim runs both write the sources' reliability: either kind supersedes.
    return EstimationRun.objects.filter(
        kind__in=(EstimationRun.Kind.FULL, EstimationRun.Kind.CLAIMS),
        state=EstimationRun.State.SUCCEEDED,
        finished_at__gt=run.finished_at,
        sources__in=run.sources.all(),
    ).exists()


def start_estimation_run(
    *,
    query_set: QueryCollection | None = None,
    sources: Iterable[Source] | Literal["all"] | None = None,
    params: Mapping[str, JSONValue] | None = None,
    user: Actor | None = None,
) -> EstimationRun:
    """Validate, store the run and its Job, enqueue `tasks.estimation_run` on "default".

    `sources` is required: the sources to estimate, or "all" (every active source that holds
    documents); at least MIN_SOURCES of them, since reliability comes from agreement between
    sources. A user may have ESTIMATION_MAX_CONCURRENT_PER_USER runs in progress at once
    (TooManyRuns, a ValidationError, past that)."""
    errors: dict[str, str] = {}
    query_set = query_set or default_query_set()
    if query_set is None:
        errors["query_set"] = "Choose a query set: there is no set named 'demo' and not exactly one set."
    elif not query_set.queries.exists():
        errors["query_set"] = f"The query set {query_set.name!r} holds no queries."
    chosen = _chosen_sources(sources, errors)
    try:
        cleaned = _clean_params(params)
    except ValidationError as exc:
        errors.update({k: v[0] for k, v in exc.message_dict.items()})
    if errors:
        raise ValidationError(errors)

    with transaction.atomic():
        _check_concurrency(user)
        run = EstimationRun.objects.create(
            query_set=query_set,
            params=cleaned,
            backend=configured_generator().name,
            created_by=signed_in(user),
        )
        run.sources.set(chosen)
        run.job_id = _dispatch(run, user).id
        run.save(update_fields=["job"])
    return run


def resume_estimation_run(run: EstimationRun, *, user: Actor | None = None, reestimate: bool = False) -> EstimationRun:
    """Run a failed or interrupted run again under a new Job: stored responses are kept and
    skipped, only missing pairs are generated, then the estimate is computed.

    Refused (ValidationError on "run") while the run's job has not ended, and for a run that
    succeeded unless `reestimate` (compute its estimate again from its stored responses);
    TooManyRuns when `user` already has ESTIMATION_MAX_CONCURRENT_PER_USER runs in progress."""
    with transaction.atomic():
        locked = EstimationRun.objects.select_for_update(of=("self",)).select_related("job").get(pk=run.pk)
        if locked.kind == EstimationRun.Kind.CLAIMS:
            raise ValidationError(
                {"run": f"Run #{run.pk} is a claim-level run: resume it with resume_claim_run (it has no responses)."}
            )
        if locked.kind == EstimationRun.Kind.UPDATE:
            raise ValidationError(
                {
                    "run": f"Run #{run.pk} is an incremental update of run #{locked.parent_id}: it has no responses "
                    "of its own to resume. Re-estimate its parent run instead."
                }
            )
        if locked.job is not None and not locked.job.finished:
            raise ValidationError(
                {
                    "run": f"Run #{run.pk} is still running (job {locked.job_id}): it cannot be resumed until "
                    "its job ends. If its worker died, the job is marked failed once it has been silent for "
                    f"{settings.JOB_STALE_SECONDS} s (JOB_STALE_SECONDS); resume it then."
                }
            )
        if locked.state == EstimationRun.State.SUCCEEDED and not reestimate:
            raise ValidationError(
                {
                    "run": f"Run #{run.pk} already succeeded: there is nothing to resume. Ask to re-estimate "
                    "it to compute its estimate again from its stored responses."
                }
            )
        if reestimate and superseded(locked):
            raise ValidationError({"run": SUPERSEDED_MESSAGE})
        if locked.query_set_id is None:
            raise ValidationError({"run": f"Run #{run.pk} cannot be resumed: its query set was deleted."})
        _check_concurrency(user, resuming=locked)
        job = _dispatch(run, user)
        EstimationRun.objects.filter(pk=run.pk).update(
            job_id=job.id, state=EstimationRun.State.PENDING, finished_at=None
        )
    run.refresh_from_db()
    return run
