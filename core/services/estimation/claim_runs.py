"""Claim-level estimation runs: resolve every (subject, attribute) of the stored claims to a
value with confidence, and estimate the sources' reliability from the claims, as a job.

A claim run is an ``EstimationRun`` of kind "claims": no query set, no responses. Its
``sources`` are the sources whose claims it reads, its ``params`` are ``{"estimator",
"attributes"}`` (attributes None: every attribute). How it executes:

1. ``start_claim_run()`` validates the request, stores the run and dispatches a Job (kind
   "estimate") for the task ``tasks.claim_estimation`` on the "default" queue.
2. That task calls ``run_claim_estimation(run, progress)``: it reads the claims (a values
   query: tens of thousands of rows in a second), resolves them with the engine's
   ``core.engine.claims.resolve.resolve_claims`` (the very function the benchmark's
   truth-discovery path uses, so both build the same matrix), and stores in one transaction
   one ``ClaimResolution`` per item, one ``ReliabilityScore`` per source, the pairwise
   ``SourceDependence`` when the estimator detects copying, and the sources' current
   reliability; the run ends succeeded. Anything raised fails the job, and the job's failure
   hook fails the run (as for full runs).

The engine sees the sources by *name*: ``resolve_claims`` orders its columns by the sources'
text, so with names the product's matrix is column for column the benchmark's (whose claims
carry the names read from the files); float sums, and so exact ties, come out the same.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence
from itertools import combinations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from core.engine.claims.resolve import ClaimResolution as EngineResolution
from core.engine.claims.resolve import ValueSupport, resolve_claims
from core.engine.claims.tolerance import Tolerance, common_tolerance, tolerance_of
from core.engine.reliability import available_estimators
from core.engine.types import JSONObject, JSONValue
from core.models import ClaimResolution, EstimationRun, ReliabilityScore, SourceDependence
from core.services.estimation.finish import DEPENDENT, MAX_EXAMPLES, UNFINISHED, RunEnded
from core.services.estimation.start import SUPERSEDED_MESSAGE, _check_concurrency, superseded
from runtime.jobs import JobRecord, NullProgress, Progress, dispatch_job
from runtime.users import Actor, signed_in
from sources.models import Claim, Source

CLAIM_TASK = "tasks.claim_estimation"  # the task a claim run's job runs (spelt out in _dispatch for the checks)
BATCH = 2000  # rows per INSERT when storing resolutions
STEPS = 3  # reading, estimating, storing: the job's progress total

NO_CLAIMS = "There are no claims to estimate: load structured data as claims first (manage.py ingest_claims, the admin or POST /api/claims/load/)."


def _clean_attributes(attributes: Sequence[str] | None, errors: dict[str, str]) -> list[str] | None:
    if attributes is None:
        return None
    if isinstance(attributes, str) or not all(isinstance(a, str) for a in attributes):
        errors["attributes"] = "attributes must be a list of attribute names."
        return None
    cleaned = list(dict.fromkeys(a.strip() for a in attributes if a.strip()))
    if not cleaned:
        errors["attributes"] = "Name at least one attribute, or leave attributes out for every attribute."
    return cleaned or None


def _chosen_sources(source_ids: Sequence[int] | None, claims: QuerySet[Claim], errors: dict[str, str]) -> list[int]:
    """The run's sources: the given ones (each must exist and hold claims), or every active
    source that holds claims (of the chosen attributes)."""
    if source_ids is None:
        found = sorted(
            set(claims.filter(source__active=True).order_by().values_list("source_id", flat=True).distinct())
        )
        if not found:
            errors["claims"] = NO_CLAIMS
        return found
    wanted = list(dict.fromkeys(int(s) for s in source_ids))
    if not wanted:
        errors["sources"] = "Choose at least one source, or leave sources out for every active source with claims."
        return []
    known = set(Source.objects.filter(pk__in=wanted).values_list("id", flat=True))
    unknown = [s for s in wanted if s not in known]
    if unknown:
        errors["sources"] = f"Unknown source id(s): {', '.join(map(str, unknown))}."
        return []
    holding = set(claims.filter(source_id__in=wanted).order_by().values_list("source_id", flat=True).distinct())
    if not holding:
        errors["claims"] = NO_CLAIMS if not Claim.objects.exists() else "The chosen sources hold no claims to estimate."
        return []
    empty = [s for s in wanted if s not in holding]
    if empty:
        names = Source.objects.filter(pk__in=empty).order_by("name").values_list("name", flat=True)
        errors["sources"] = f"These sources hold no claims: {', '.join(names)}."
    return wanted


def start_claim_run(
    *,
    source_ids: list[int] | None = None,
    estimator: str | None = None,
    attributes: list[str] | None = None,
    authorities: list[int] | None = None,
    user: Actor | None = None,
) -> EstimationRun:
    """Validate, store a claim-level run and its Job, enqueue ``tasks.claim_estimation``.

    ``authorities`` (optional, a curator's setting): ids of the run's sources whose values fix
    the items they agree on, as checked values do (``resolve_claims``'s ``authorities``;
    stored in the run's ``authorities`` param). Each must be one of the run's sources.

    ``source_ids`` default: every active source that holds claims; ``estimator`` default: the
    RELIABILITY_ESTIMATOR setting; ``attributes`` default: every attribute. ValidationError
    (naming "claims", "sources", "estimator" or "attributes") when there is nothing to
    estimate or a name is unknown; TooManyRuns past ESTIMATION_MAX_CONCURRENT_PER_USER."""
    errors: dict[str, str] = {}
    estimator = estimator or settings.RELIABILITY_ESTIMATOR
    if estimator not in available_estimators():
        errors["estimator"] = f"estimator must be one of: {', '.join(available_estimators())}."
    chosen_attributes = _clean_attributes(attributes, errors)
    claims = Claim.objects.all()
    if chosen_attributes is not None:
        claims = claims.filter(attribute__in=chosen_attributes)
        held = set(claims.order_by().values_list("attribute", flat=True).distinct())
        missing = [a for a in chosen_attributes if a not in held]
        if missing:
            errors["attributes"] = f"No claim has the attribute(s): {', '.join(missing)}."
    chosen = _chosen_sources(source_ids, claims, errors) if "attributes" not in errors else []
    chosen_authorities = list(dict.fromkeys(int(a) for a in authorities or []))
    outside = [a for a in chosen_authorities if a not in set(chosen)]
    if outside and not errors:
        errors["authorities"] = f"Not a source of this run: {', '.join(map(str, outside))}."
    if errors:
        raise ValidationError(errors)
    params: dict[str, object] = {"estimator": estimator, "attributes": chosen_attributes}
    if chosen_authorities:
        params["authorities"] = list(chosen_authorities)
    with transaction.atomic():
        _check_concurrency(user)
        run = EstimationRun.objects.create(
            kind=EstimationRun.Kind.CLAIMS,
            query_set=None,
            params=params,
            created_by=signed_in(user),
        )
        run.sources.set(chosen)
        run.job_id = _dispatch(run, user).id
        run.save(update_fields=["job"])
    return run


def _dispatch(run: EstimationRun, user: Actor | None) -> JobRecord:
    # Bulk work (hundreds of thousands of claims can take minutes): the bulk worker's queue,
    # never the question worker's ("default"), so questions never wait behind it.
    return dispatch_job(
        kind="estimate", task_name="tasks.claim_estimation", params={"run_id": run.pk}, user=user, queue="ingest"
    )


def resume_claim_run(run: EstimationRun, *, user: Actor | None = None, reestimate: bool = False) -> EstimationRun:
    """Estimate a failed (or, with ``reestimate``, a succeeded) claim run again, under a new
    Job, from the claims its sources hold now. Refused (ValidationError on "run") while its
    job has not ended, and for a run that succeeded unless ``reestimate``; TooManyRuns past
    ESTIMATION_MAX_CONCURRENT_PER_USER runs of ``user`` in progress."""
    with transaction.atomic():
        locked = EstimationRun.objects.select_for_update(of=("self",)).select_related("job").get(pk=run.pk)
        if locked.kind != EstimationRun.Kind.CLAIMS:
            raise ValidationError({"run": f"Run #{run.pk} is not a claim-level estimation run."})
        if locked.job is not None and not locked.job.finished:
            raise ValidationError(
                {"run": f"Run #{run.pk} is still running (job {locked.job_id}): resume it once its job has ended."}
            )
        if locked.state == EstimationRun.State.SUCCEEDED and not reestimate:
            raise ValidationError(
                {"run": f"Run #{run.pk} already succeeded: ask to re-estimate it to resolve its claims again."}
            )
        if reestimate and superseded(locked):
            raise ValidationError({"run": SUPERSEDED_MESSAGE})
        _check_concurrency(user, resuming=locked)
        job = _dispatch(run, user)
        EstimationRun.objects.filter(pk=run.pk).update(
            job_id=job.id, state=EstimationRun.State.PENDING, finished_at=None
        )
    run.refresh_from_db()
    return run


def refuse_gold_update(run: EstimationRun) -> None:
    """Gold updates add reference answers of fact-checking queries; a claim run has none."""
    if run.kind == EstimationRun.Kind.CLAIMS:
        raise ValidationError(
            {
                "run": f"Run #{run.pk} is a claim-level estimation: it answered no fact-checking queries, so there is "
                "no gold evidence to add to it. Start a new claim run instead."
            }
        )


# --- Running ---------------------------------------------------------------------------


Row = tuple[int, str, str, str]  # (source id, subject, attribute, value)


def _read_claims(run: EstimationRun) -> tuple[list[Row], dict[tuple[str, str], Tolerance]]:
    """The run's claims, and the tolerance of each item whose claims declare one (the
    claims pages read the same from an item's claims: ``tolerance.record_tolerance``)."""
    source_ids = list(run.sources.values_list("id", flat=True))
    claims = Claim.objects.filter(source_id__in=source_ids)
    attributes = run.params.get("attributes")
    if attributes:
        claims = claims.filter(attribute__in=attributes)
    rows: list[Row] = []
    declared: dict[tuple[str, str], set[tuple[str, str]]] = defaultdict(set)
    for source_id, subject, attribute, value, normalizer, spec in claims.order_by("id").values_list(
        "source_id", "subject", "attribute", "value", "normalizer", "tolerance"
    ):
        rows.append((source_id, subject, attribute, value))
        declared[(subject, attribute)].add((normalizer, spec))
    tolerances = {}
    for item, specs in declared.items():
        if any(spec for _normalizer, spec in specs):
            tolerance = common_tolerance([tolerance_of(normalizer, spec) for normalizer, spec in specs])
            if tolerance is not None:
                tolerances[item] = tolerance
    return rows, tolerances


def _resolution_rows(
    run: EstimationRun, resolution: EngineResolution[str], ids: dict[str, int]
) -> list[ClaimResolution]:
    return [
        ClaimResolution(
            run=run,
            subject=item.subject,
            attribute=item.attribute,
            value=item.value,
            confidence=float(item.confidence),
            claims=sum(len(v.sources) for v in item.values),
            conflicting=item.conflicting,
            values=[_value_row(v, ids) for v in item.values],
        )
        for item in resolution.items
    ]


def _value_row(support: ValueSupport[str], ids: dict[str, int]) -> JSONObject:
    """A value of a resolution as stored: the value, its sources' ids, its share and, for
    values within a tolerance of each other, every spelling claimed (the value first)."""
    sources: list[JSONValue] = [ids[s] for s in sorted(support.sources, key=lambda s: ids[s])]
    out: JSONObject = {
        "value": support.value,
        "sources": sources,
        "share": round(float(support.share), 6),
    }
    if support.spellings:
        out["spellings"] = list(support.spellings)
    return out


def _store_resolutions(run: EstimationRun, resolutions: list[ClaimResolution]) -> None:
    """Store the run's resolutions, keeping the row (and its id) of an item it had resolved
    before: a re-estimate after a check leaves the other checks on the page valid (a check
    names the resolution of its item). Items no longer claimed are deleted."""
    existing = dict(
        ((subject, attribute), pk)
        for pk, subject, attribute in ClaimResolution.objects.filter(run=run).values_list("pk", "subject", "attribute")
    )
    for row in resolutions:
        row.pk = existing.pop((row.subject, row.attribute), None)
    if existing:
        ClaimResolution.objects.filter(pk__in=existing.values()).delete()
    kept = [row for row in resolutions if row.pk is not None]
    ClaimResolution.objects.bulk_update(
        kept, ["value", "confidence", "claims", "conflicting", "values"], batch_size=BATCH
    )
    ClaimResolution.objects.bulk_create([row for row in resolutions if row.pk is None], batch_size=BATCH)


def checked_values(run: EstimationRun) -> dict[tuple[str, str], str]:
    """The values a curator checked for this claim run's items (its ``claim_gold`` param:
    [subject, attribute, value] triples), which fix those items' truth in the estimate."""
    return {
        (str(subject), str(attribute)): str(value) for subject, attribute, value in run.params.get("claim_gold") or []
    }


def _identification(
    resolution: EngineResolution[str], stored: list[ClaimResolution], ids: dict[str, int]
) -> JSONObject:
    """The run's identification as text runs store it: source ids for the two groups, and for
    the contested items and the proposed checks the ids of this run's stored resolutions (a
    check names the resolution of the item it asks about; a re-estimate stores new ones)."""
    found = resolution.identification
    if found is None:
        return {}
    columns = list(resolution.sources)
    pk = {(r.subject, r.attribute): r.pk for r in stored}
    return {
        "identified": found.identified,
        "reason": found.reason,
        "estimate_side": [ids[columns[j]] for j in found.estimate_side],
        "dissent_bloc": [ids[columns[j]] for j in found.dissent_bloc],
        "unsettled_blocs": [[ids[columns[j]] for j in bloc] for bloc in found.unsettled_blocs],
        "contested": [pk[item] for item in resolution.contested if item in pk],
        "checks": [pk[item] for item in resolution.checks if item in pk],
        "agreement": list(found.agreement),
        "settled_by_gold": found.settled_by_gold,
        "claims": True,
    }


def _score_rows(
    run: EstimationRun, resolution: EngineResolution[str], rows: list[Row], ids: dict[str, int]
) -> list[ReliabilityScore]:
    """One score per source: the estimator's accuracy, weight and interval; ``answers`` its
    claims and ``agreements`` those equal to the resolved value of their item (or within its tolerance)."""
    resolved = {(r.subject, r.attribute): r for r in resolution.items}
    answers: dict[int, int] = defaultdict(int)
    agreements: dict[int, int] = defaultdict(int)
    for source_id, subject, attribute, value in rows:  # one claim per (source, item): a unique constraint
        answers[source_id] += 1
        item = resolved.get((subject, attribute))
        agreements[source_id] += int(item is not None and item.agrees(value))  # within the tolerance counts
    scores = []
    for name, rel in resolution.sources.items():
        sid = ids[name]
        low, high = rel.interval
        scores.append(
            ReliabilityScore(
                run=run,
                source_id=sid,
                reliability=float(rel.accuracy),
                weight=float(rel.weight),
                low=float(low),
                high=float(high),
                answers=answers[sid],
                agreements=agreements[sid],
                gold_answers=rel.gold_answers,
                gold_agreements=rel.gold_agreements,
            )
        )
    return scores


def _dependence_rows(
    run: EstimationRun, resolution: EngineResolution[str], ids: dict[str, int]
) -> list[SourceDependence]:
    """One SourceDependence per pair of sources the estimator reports (none for estimators
    without copy detection), with up to MAX_EXAMPLES shared *false* values as evidence:
    items where both sources claim the same value and it is not the resolved one."""
    if not resolution.dependence:
        return []
    pairs = {tuple(sorted((ids[a], ids[b]))): dep for a, b, dep in resolution.dependence}
    examples: dict[tuple[int, int], list[dict[str, str]]] = defaultdict(list)
    wanted = {s for pair in pairs for s in pair}
    for item in resolution.items:
        for support in item.values[1:]:  # the resolved value comes first
            holders = sorted(ids[s] for s in support.sources if ids[s] in wanted)
            for pair in combinations(holders, 2):
                if pair in pairs and len(examples[pair]) < MAX_EXAMPLES:
                    examples[pair].append(
                        {"subject": item.subject, "attribute": item.attribute, "value": support.value}
                    )
    return [
        SourceDependence(
            run=run,
            source_a_id=a,
            source_b_id=b,
            probability=float(dep.probability),
            shared=dep.shared,
            same_true=float(dep.same_true),
            same_false=float(dep.same_false),
            different=dep.different,
            examples=examples.get((a, b), []),
        )
        for (a, b), dep in sorted(pairs.items())
    ]


def run_claim_estimation(run: EstimationRun, progress: Progress | None = None) -> JSONObject:
    """Resolve the run's claims and store the resolutions, scores, dependence and the
    sources' current reliability; marks the run succeeded and returns the job's summary.

    Raises ValueError when the run's sources hold no claims (any more), RunEnded when the run
    was failed meanwhile (its job reaped): nothing is stored then."""
    progress = progress or NullProgress()
    started = time.perf_counter()
    estimator = str(run.params.get("estimator") or settings.RELIABILITY_ESTIMATOR)
    progress.set_total(STEPS, "Reading the claims")
    if run.state == EstimationRun.State.PENDING:
        EstimationRun.objects.filter(pk=run.pk).update(state=EstimationRun.State.RUNNING)
        run.state = EstimationRun.State.RUNNING
    rows, tolerances = _read_claims(run)
    if not rows:
        raise ValueError(f"Run #{run.pk}: its sources hold no claims (any more). {NO_CLAIMS}")
    names = dict(Source.objects.filter(pk__in={r[0] for r in rows}).values_list("id", "name"))
    ids = {name: sid for sid, name in names.items()}
    progress.log(f"read {len(rows)} claims of {len(names)} sources")
    progress.set_progress(1, f"Estimating with {estimator}: {len(rows)} claims of {len(names)} sources")
    resolution = resolve_claims(
        [(names[sid], (subject, attribute), value) for sid, subject, attribute, value in rows],
        estimator,
        gold=checked_values(run),
        progress=progress.log,
        tolerances=tolerances.get,
        authorities={names[int(a)] for a in run.params.get("authorities") or [] if int(a) in names},
    )
    progress.set_progress(2, f"Storing {len(resolution.items)} resolved items")
    resolutions = _resolution_rows(run, resolution, ids)
    scores = _score_rows(run, resolution, rows, ids)
    dependences = _dependence_rows(run, resolution, ids)
    now = timezone.now()
    with transaction.atomic():
        state = EstimationRun.objects.select_for_update().filter(pk=run.pk).values_list("state", flat=True).first()
        if state not in UNFINISHED:
            raise RunEnded(f"Run #{run.pk} was marked {state} while its claims were resolved; resume it to finish.")
        _store_resolutions(run, resolutions)
        ReliabilityScore.objects.filter(run=run).delete()
        ReliabilityScore.objects.bulk_create(scores, batch_size=BATCH)
        SourceDependence.objects.filter(run=run).delete()
        SourceDependence.objects.bulk_create(dependences, batch_size=BATCH)
        identification = _identification(resolution, resolutions, ids)
        Source.objects.bulk_update(
            [
                Source(
                    pk=score.source_id,
                    reliability=score.reliability,
                    reliability_low=score.low,
                    reliability_high=score.high,
                    reliability_answers=score.answers,
                    reliability_updated_at=now,
                )
                for score in scores
            ],
            ["reliability", "reliability_low", "reliability_high", "reliability_answers", "reliability_updated_at"],
            batch_size=500,
        )
        EstimationRun.objects.filter(pk=run.pk).update(
            state=EstimationRun.State.SUCCEEDED,
            iterations=resolution.iterations,
            converged=resolution.converged,
            finished_at=now,
            identification=identification,
        )
    progress.set_progress(STEPS, f"Stored {len(resolutions)} resolved items")
    return {
        "run_id": run.pk,
        "estimator": estimator,
        "items": len(resolutions),
        "claims": len(rows),
        "sources": len(names),
        "conflicting": sum(1 for r in resolutions if r.conflicting),
        "iterations": resolution.iterations,
        "converged": resolution.converged,
        "dependent_pairs": sum(1 for d in dependences if d.probability >= DEPENDENT),
        "identified": resolution.identified,
        "seconds": round(time.perf_counter() - started, 3),
    }


def claim_run_message(summary: JSONObject) -> str:
    """The line a finished claim run's job shows."""
    return (
        f"Resolved {summary['items']} items ({summary['conflicting']} in conflict) from {summary['claims']} claims "
        f"of {summary['sources']} source(s) with {summary['estimator']}"
    )
