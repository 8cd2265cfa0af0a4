"""Starting an estimation run: validate the request, store the run, dispatch its job."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import QuerySet as DjangoQuerySet

from core.engine.reliability import DEFAULT_ESTIMATOR, available_estimators
from core.models import EstimationRun, QuerySet
from core.services.engine_context import configured_generator
from core.services.jobs import dispatch_job
from sources.models import Source

DEFAULT_PARAMS: dict[str, Any] = {
    "alpha": 1.0,
    "beta": 1.0,
    "strict": False,
    "batch_size": 24,
    "estimator": DEFAULT_ESTIMATOR,
}
KNOWN_PARAMS = frozenset({"alpha", "beta", "strict", "batch_size", "k", "tau", "estimator"})


def default_query_set() -> QuerySet | None:
    named = QuerySet.objects.filter(name="demo").first()
    if named is not None:
        return named
    sets = list(QuerySet.objects.all()[:2])
    return sets[0] if len(sets) == 1 else None


def sources_for_names(names: Sequence[str]) -> DjangoQuerySet[Source]:
    found = Source.objects.filter(name__in=names)
    unknown = sorted(set(names) - set(found.values_list("name", flat=True)))
    if unknown:
        raise ValidationError({"sources": f"Unknown source(s): {', '.join(unknown)}."})
    return found


def _clean_params(params: dict[str, Any] | None) -> dict[str, Any]:
    params = dict(params or {})
    errors: dict[str, str] = {}
    unknown = set(params) - KNOWN_PARAMS
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
    if "estimator" in params and params["estimator"] not in available_estimators():
        errors["estimator"] = f"estimator must be one of: {', '.join(available_estimators())}."
    if errors:
        raise ValidationError(errors)
    return {**DEFAULT_PARAMS, "k": settings.RETRIEVAL_K, "tau": settings.ALIGN_TAU, **params}


def _dispatch(run: EstimationRun, user: Any) -> Any:
    return dispatch_job(
        kind="estimate", task_name="tasks.estimation_run", params={"run_id": run.pk}, user=user, queue="default"
    )


def start_estimation_run(
    *,
    query_set: QuerySet | None = None,
    sources: Iterable[Source] | None = None,
    params: dict[str, Any] | None = None,
    user: Any = None,
) -> EstimationRun:
    """Validate, store the run and its Job, enqueue `tasks.estimation_run` on "default"."""
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

    with transaction.atomic():
        run = EstimationRun.objects.create(
            query_set=query_set,
            params=cleaned,
            backend=configured_generator().name,
            created_by=user if getattr(user, "is_authenticated", False) else None,
        )
        run.sources.set(chosen)
        run.job = _dispatch(run, user)
        run.save(update_fields=["job"])
    return run


def resume_estimation_run(run: EstimationRun, *, user: Any = None) -> EstimationRun:
    """Run an existing run again under a new Job: stored responses are kept and skipped,
    only missing pairs are generated, then the estimate is recomputed."""
    with transaction.atomic():
        locked = EstimationRun.objects.select_for_update().get(pk=run.pk)
        if locked.job_id and not locked.job.finished:
            raise ValidationError({"run": f"Run #{run.pk} is still in progress (job {locked.job_id})."})
        job = _dispatch(run, user)
        EstimationRun.objects.filter(pk=run.pk).update(job=job, state=EstimationRun.State.PENDING, finished_at=None)
    run.refresh_from_db()
    return run
