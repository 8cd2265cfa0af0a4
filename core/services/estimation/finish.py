"""Ending an estimation run: cluster and estimate from the stored responses, and store the
answers, the scores (with each source's gold evidence), the pairwise dependence between
sources (estimators that detect copying) and the sources' current reliability; or mark the
run failed.

Gold-checked queries: unless the run's params say ``use_gold: false``, every query of the
run's set that carries reference answers is passed to the estimator as gold
(core.engine.estimation.estimate_from_records: the cluster most of whose members contain a
reference answer is the truth, or none of them) and the run records their ids
(``EstimationRun.gold_queries``)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from itertools import combinations
from typing import TypedDict

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.engine.estimation import ResponseRecord, TopicInput, calibration_from_records, estimate_from_records
from core.engine.json_values import as_list, as_object
from core.engine.params import parse_params
from core.engine.reliability import ReliabilityResult, get_estimator
from core.engine.reliability.base import Identification
from core.engine.reliability.identify import proposed_checks
from core.engine.reliability.topical import TopicalReliability
from core.engine.steps.dependence import groups_from_dependence
from core.engine.strategies import get_strategy
from core.engine.strategies.codec import jsonable
from core.engine.types import JSONObject, JSONValue
from core.models import EstimationRun, FactQuery, ReliabilityScore, RunAnswer, RunResponse, SourceDependence
from core.services.estimation.coordinate import RunProgress, run_layout, run_pairs
from core.services.estimation.locks import finish_claim_name
from core.services.topics import latest_topics
from runtime.backends import configured_nli
from runtime.jobs import NullProgress, Progress
from runtime.locks import claim
from sources.models import Source


class RunEnded(Exception):
    """The run ended (failed by its job's reaping) before its estimate could be stored."""


def _representative(responses: list[str]) -> str:
    counts = Counter(r.strip() for r in responses)
    return max(counts, key=lambda text: (counts[text], -responses.index(text) if text in responses else 0))


def default_kappa() -> int:
    """How many sources an answer consults by default (RA-RAG's kappa): the size of the source
    groups whose votes the calibration on checked queries looks at."""
    strategy = get_strategy("ra-rag")
    return int(getattr(parse_params(strategy.Params, {}), "kappa", 4))


def topic_input(queries: list[FactQuery]) -> TopicInput:
    """What per-topic estimation needs: the queries' vectors (the configured embedder), a
    curator's topic per query (a tag written "topic:<name>"), and the latest run's topics (keys
    and names carry over)."""
    from runtime.backends import configured_embedder

    return TopicInput(
        list(configured_embedder().encode([q.question for q in queries])) if queries else [],
        [topic_tag(q.tags) for q in queries],
        latest_topics(),
    )


TOPIC_TAG = "topic:"


def topic_tag(tags: object) -> str | None:
    """The topic a curator tagged a query with ("topic:sport" -> "sport"), None without one."""
    for tag in tags if isinstance(tags, list) else []:
        if isinstance(tag, str) and tag.startswith(TOPIC_TAG) and tag[len(TOPIC_TAG) :].strip():
            return tag[len(TOPIC_TAG) :].strip()
    return None


def stored_topics(
    topical: TopicalReliability | None, source_ids: list[int], query_ids: list[int] | None = None
) -> JSONObject:
    """The run's topics and per-topic reliabilities as EstimationRun.topics stores them, with
    each query's topic (what an online update moves)."""
    if topical is None or topical.model is None:
        return {}
    unsettled = topical.unsettled()
    return {
        "queries": {str(qid): topical.keys[t] for qid, t in zip(query_ids or [], topical.query_topics, strict=False)},
        "model": jsonable(topical.model.as_dict()),
        "cells": {
            str(sid): [
                {
                    "key": key,
                    "accuracy": round(row[j].accuracy, 4),
                    "low": round(row[j].interval[0], 4),
                    "high": round(row[j].interval[1], 4),
                    "answers": round(row[j].answers, 2),
                }
                for key, row in zip(topical.keys, topical.cells, strict=True)
            ]
            for j, sid in enumerate(source_ids)
        },
        "unsettled": [topical.keys[t] for t in unsettled],
        # Per settled topic, the copy groups found on its queries alone (source ids): what an
        # answer on that topic counts once (core.engine.steps.dependence.topic_copy_groups).
        "copy_groups": jsonable(
            {
                topical.keys[t]: [sorted(g) for g in groups_from_dependence(pairs, source_ids)]
                for t, pairs in enumerate(topical.dependence)
                if t not in unsettled
            }
        ),
    }


def stored_identification(
    result: ReliabilityResult, source_ids: list[int], query_ids: list[int], gold: Collection[int] = ()
) -> JSONObject:
    """The run's identification as EstimationRun.identification stores it (sources and queries
    by id): the overall verdict, its ``checks`` the checks a curator should answer first, all
    of them, in the order identify.proposed_checks gives (every open verdict, the overall one
    and each topic's, in turn; the gold queries left out), and under ``topics`` each topic
    whose verdict is open (unsettled, or settled only by its larger side outnumbering a bloc)
    and has a check left to propose, with its own groups and checks: a colluding bloc can be
    the larger side on one topic only, where the overall verdict does not see it. {} without an
    identification. (Claim runs store theirs in claim_runs; runs finished before 2026-11-29
    have neither "topics" nor "outnumbered".)"""
    found = result.identification
    if found is None:
        return {}

    def verdict(found: Identification) -> JSONObject:
        return as_object(jsonable(found.as_dict(ids=source_ids, query_ids=query_ids)))

    stored = verdict(found)
    stored["checks"] = [query_ids[q] for q in proposed_checks(result, len(query_ids), exclude=gold)]
    topical = result.topical
    skip = set(gold)
    stored["topics"] = [
        # A topic's checks leave out the gold queries as the overall list does (a reference
        # that matches no answer still leaves its query disputed inside the topic).
        {"key": key, **verdict(replace(v, checks=checks))}
        for key, v in (zip(topical.keys, topical.identification, strict=True) if topical is not None else [])
        if v is not None and (not v.identified or v.outnumbered) and (checks := [q for q in v.checks if q not in skip])
    ]
    return stored


def finish_run(run: EstimationRun) -> JSONObject:
    """Cluster, estimate, and store answers, scores and the sources' current reliability.
    Marks the run succeeded and returns the summary (its job's result)."""
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
    allowed = gold_allowed(run)
    alpha = float(run.params.get("alpha", 1.0))
    beta = float(run.params.get("beta", 1.0))
    gold = (
        {index[q.pk]: refs for q in queries if (refs := reference_answers(q)) and allowed(q.pk)}
        if run.params.get("use_gold", True)
        else {}
    )
    result, records = estimate_from_records(
        [q.question for q in queries],
        source_ids,
        records,
        configured_nli(),
        strict=bool(run.params.get("strict", False)),
        alpha=alpha,
        beta=beta,
        estimator=str(run.params.get("estimator", settings.RELIABILITY_ESTIMATOR)),
        gold=gold,
        topics=topic_input(queries),
    )
    # Answers weigh votes as the configured estimator does (engine_context.weight_scheme, not
    # imported: the engine context reads this module's copy groups through the pages).
    scheme = get_estimator(settings.RELIABILITY_ESTIMATOR).weight_scheme
    calibration = calibration_from_records(
        records, source_ids, result, gold, default_kappa(), seed=run.pk or 0, scheme=scheme
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
    dependences = dependence_rows(run, queries, source_ids, records, result)
    now = timezone.now()
    with transaction.atomic():
        state = EstimationRun.objects.select_for_update().filter(pk=run.pk).values_list("state", flat=True).first()
        if state not in UNFINISHED:
            # Its job was failed meanwhile (reaped, say) and the run with it: store nothing.
            raise RunEnded(f"Run #{run.pk} was marked {state} while its estimate was computed; resume it to finish.")
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
                    gold_answers=rel.gold_answers,
                    gold_agreements=rel.gold_agreements,
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
        SourceDependence.objects.filter(run=run).delete()
        SourceDependence.objects.bulk_create(dependences, batch_size=1000)
        EstimationRun.objects.filter(pk=run.pk).update(
            state=EstimationRun.State.SUCCEEDED,
            iterations=result.iterations,
            converged=result.converged,
            finished_at=now,
            gold_queries=[queries[q].pk for q in sorted(gold)],
            identification=stored_identification(result, list(source_ids), [q.pk for q in queries], gold),
            calibration=calibration.as_dict() if calibration.fitted else {},
            topics=stored_topics(result.topical, source_ids, [q.pk for q in queries]),
        )
    names = dict(Source.objects.filter(pk__in=source_ids).values_list("id", "name"))
    return {
        "run_id": run.pk,
        "queries": len(queries),
        "sources": len(source_ids),
        "responses": len(responses),
        "iterations": result.iterations,
        "converged": result.converged,
        "gold_queries": len(gold),
        "identified": result.identification.identified if result.identification is not None else True,
        "dependent_pairs": sum(1 for d in dependences if d.probability >= DEPENDENT),
        "calibrated_on": calibration.queries,
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
                "gold_answers": rel.gold_answers,
                "gold_agreements": rel.gold_agreements,
            }
            for sid, rel in zip(source_ids, result.sources, strict=False)
        ],
    }


def finish_once(run: EstimationRun, progress: Progress | None = None) -> JSONObject | None:
    """finish_run() by one process at a time, and once: the caller holds the run's finishing
    claim (locks.claim) while it estimates. Returns None when another process (a second
    coordinator step, on another worker) is estimating the run right now, and the stored
    summary when the run was estimated already."""
    progress = progress or NullProgress()
    with claim(finish_claim_name(run.pk)) as held:
        if not held:
            return None
        state = EstimationRun.objects.filter(pk=run.pk).values_list("state", flat=True).first()
        if state == EstimationRun.State.SUCCEEDED:
            return stored_summary(run)
        responses = RunResponse.objects.filter(run=run).count()
        progress.advance_to(
            RunProgress(run_pairs(run)).estimating(), f"Estimating reliability from {responses} responses"
        )
        return finish_run(run)


def stored_summary(run: EstimationRun) -> JSONObject:
    """The summary finish_run() returned, read back from what it stored."""
    run = EstimationRun.objects.get(pk=run.pk)
    scores = list(ReliabilityScore.objects.filter(run=run).select_related("source").order_by("source_id"))
    return {
        "run_id": run.pk,
        "queries": FactQuery.objects.filter(query_set_id=run.query_set_id).count(),
        "sources": len(scores),
        "responses": RunResponse.objects.filter(run=run).count(),
        "iterations": run.iterations,
        "converged": run.converged,
        "gold_queries": len(run.gold_queries or []),
        "identified": bool((run.identification or {}).get("identified", True)),
        "dependent_pairs": SourceDependence.objects.filter(run=run, probability__gte=DEPENDENT).count(),
        "calibrated_on": int((run.calibration or {}).get("queries") or 0),
        "scores": [score_json(score_row(s)) for s in scores],
    }


DEPENDENT = 0.5  # a pair of sources at least this likely dependent is reported as copying / colluding
MAX_EXAMPLES = 5  # shared false answers kept per pair as evidence


def detects_copying(estimator: str) -> bool:
    """Whether the named estimator detects copying between sources (and so returns the pairwise
    dependence a run stores): one that says so (``detects_copying``), or one with a copy model
    (accucopy). False for an unknown name (an older run's)."""
    try:
        chosen = get_estimator(estimator)
    except KeyError:
        return False
    declared = getattr(chosen, "detects_copying", None)
    return bool(declared) if declared is not None else getattr(chosen, "copy", None) is not None


def gold_allowed(run: EstimationRun) -> Callable[[int], bool]:
    """Whether a query's reference answers may anchor the run: any, unless the run lists the
    only ones that may (``gold_query_ids``)."""
    listed = run.params.get("gold_query_ids")
    if listed is None:
        return lambda _query_id: True
    ids = set(listed)
    return lambda query_id: query_id in ids


def reference_answers(query: FactQuery) -> list[str]:
    """The query's usable reference answers (see usable_references)."""
    return usable_references(query.reference_answers)


def usable_references(stored: JSONValue) -> list[str]:
    """Reference answers as stored (JSON) to non-empty strings; a number counts as its text."""
    usable = (r for r in as_list(stored) if isinstance(r, str | int | float) and not isinstance(r, bool))
    return [str(r).strip() for r in usable if str(r).strip()]


def dependence_rows(
    run: EstimationRun,
    queries: Sequence[FactQuery],
    source_ids: Sequence[int],
    records: Sequence[ResponseRecord],
    result: ReliabilityResult,
) -> list[SourceDependence]:
    """One SourceDependence per pair of sources the estimator reports (none for estimators
    without copy detection), with up to MAX_EXAMPLES shared *false* answers as evidence:
    queries where both sources fell in the same answer cluster and that cluster is not the
    run's answer (in query order)."""
    if not result.dependence:
        return []
    examples: dict[tuple[int, int], list[JSONValue]] = defaultdict(list)
    by_cell: dict[tuple[int, int], list[ResponseRecord]] = defaultdict(list)
    for rec in records:
        if rec.cluster is not None and rec.cluster != result.answers[rec.query_index]:
            by_cell[(rec.query_index, rec.cluster)].append(rec)
    for (q, _), members in sorted(by_cell.items()):
        for one, other in combinations(sorted(members, key=lambda r: r.source_id), 2):
            found = examples[(one.source_id, other.source_id)]
            if len(found) < MAX_EXAMPLES:
                found.append({"query_id": queries[q].pk, "query": queries[q].question[:300], "answer": one.response})
    rows = []
    for dep in result.dependence:
        a, b = sorted((source_ids[dep.a], source_ids[dep.b]))
        rows.append(
            SourceDependence(
                run=run,
                source_a_id=a,
                source_b_id=b,
                probability=dep.probability,
                shared=dep.shared,
                same_true=dep.same_true,
                same_false=dep.same_false,
                different=dep.different,
                examples=examples.get((a, b), []),
            )
        )
    return rows


def finished_message(summary: JSONObject) -> str:
    """The line a finished run's job shows."""
    return f"Estimated {summary['sources']} source(s) over {summary['queries']} queries"


UNFINISHED = (EstimationRun.State.PENDING, EstimationRun.State.RUNNING)


def fail_run(run_id: int) -> int | None:
    """Mark the run failed unless it has ended (its job is the task layer's business);
    returns the run's job id."""
    run = EstimationRun.objects.filter(pk=run_id).only("pk", "job_id").first()
    if run is None:
        return None
    EstimationRun.objects.filter(pk=run_id, state__in=UNFINISHED).update(
        state=EstimationRun.State.FAILED, finished_at=timezone.now()
    )
    return run.job_id


def fail_runs_of_ended_jobs() -> int:
    """A run's state follows its job: every run still pending or running under a job that
    has ended (reaped, its worker restarted, failed) is marked failed, so it can be resumed.
    The task layer calls this whenever it fails jobs in bulk; returns the runs failed."""
    return EstimationRun.objects.filter(state__in=UNFINISHED, job__finished_at__isnull=False).update(
        state=EstimationRun.State.FAILED, finished_at=timezone.now()
    )


class ScoreRow(TypedDict):
    """One source's stored score in a run."""

    source: str
    source_id: int
    reliability: float
    weight: float
    low: float
    high: float
    answers: int
    agreements: int
    gold_answers: int
    gold_agreements: int


def score_row(s: ReliabilityScore) -> ScoreRow:
    """One source's stored score as the run's summary and the CLI give it."""
    return {
        "source": s.source.name,
        "source_id": s.source_id,
        "reliability": round(s.reliability, 4),
        "weight": round(s.weight, 4),
        "low": round(s.low, 4),
        "high": round(s.high, 4),
        "answers": s.answers,
        "agreements": s.agreements,
        "gold_answers": s.gold_answers,
        "gold_agreements": s.gold_agreements,
    }


def score_json(row: ScoreRow) -> JSONObject:
    """A score row as the job's summary stores it."""
    return {
        "source": row["source"],
        "source_id": row["source_id"],
        "reliability": row["reliability"],
        "weight": row["weight"],
        "low": row["low"],
        "high": row["high"],
        "answers": row["answers"],
        "agreements": row["agreements"],
        "gold_answers": row["gold_answers"],
        "gold_agreements": row["gold_agreements"],
    }


def run_scores(run: EstimationRun) -> list[ScoreRow]:
    return [score_row(s) for s in run.scores.select_related("source").order_by("source__name")]
