"""Online updates: add new gold evidence to a finished run's reliabilities without running
the whole set again.

A curator adds reference answers to some queries of a query set after a run over it has
finished; ``apply_gold_update(run, query_ids)`` then

1. reads the stored responses of those queries (with the answer clusters the run computed)
   from the run's full estimation (the run itself, or the full run an update builds on);
2. recomputes only those queries' gold labels (``core.engine.estimation.gold_label``: the
   cluster most of whose members contain a reference answer, or none of them);
3. adds the gold evidence to each source's Beta posterior and stores the result as a new
   ``EstimationRun`` of kind "update" (``parent`` = the run updated), one ReliabilityScore per
   source of the parent (unchanged where the source did not answer those queries), so the
   history keeps both; and moves ``Source.reliability`` to it where the parent was the
   source's latest score.

The update rule. The parent's accuracy w of a source is read as a Beta posterior mean with
pseudo-counts A = w * D right out of D = answers + alpha + beta + (g - 1) * gold_answers
(the parent's answers count once, its gold-checked answers GOLD_WEIGHT = g times, as in the
estimators). A query that becomes gold-checked was already counted once, as agreeing with
the run's estimated answer or not (``RunResponse.agrees``); now it counts g times, as right
when the source's cluster is the gold label. For the n_new newly gold-checked answers of a
source, of which ``prev`` agreed with the run's answer and ``hit`` match the gold label:

    w' = (A - prev + g * hit) / (D + (g - 1) * n_new)

which with hard counts is (agreements + alpha + (g - 1) * gold_agreements) /
(answers + alpha + beta + (g - 1) * gold_answers), answers and agreements counting gold
answers once (equivalently (k + alpha + g * k_gold) / (n + alpha + beta + g * n_gold) with
k, n over the answers that are not gold-checked). Only the chosen queries move: the other
queries' answers are not re-estimated (resume the full run with ``reestimate`` for that).
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Iterable
from typing import TypedDict

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from core.engine.estimation import ResponseRecord, gold_label
from core.engine.json_values import as_list, as_object
from core.engine.reliability import get_estimator, interval_holding, wilson_interval
from core.engine.reliability.base import GOLD_WEIGHT
from core.engine.reliability.topical import STRENGTH
from core.engine.reliability.weights import voting_weight
from core.engine.types import JSONObject
from core.models import EstimationRun, FactQuery, ReliabilityScore, RunResponse
from core.services.estimation.claim_runs import refuse_gold_update
from core.services.estimation.finish import reference_answers
from core.services.topics import topic_cell
from runtime.users import Actor, signed_in
from sources.models import Source


def full_run_of(run: EstimationRun) -> EstimationRun | None:
    """The full estimation whose responses a run rests on: itself, or its update chain's root."""
    seen: set[int] = set()
    current: EstimationRun | None = run
    while current is not None and current.kind == EstimationRun.Kind.UPDATE and current.pk not in seen:
        seen.add(current.pk)
        current = current.parent
    return current if current is not None and current.kind == EstimationRun.Kind.FULL else None


def _chosen_queries(run: EstimationRun, base: EstimationRun, query_ids: Iterable[int] | None) -> list[FactQuery]:
    queries = FactQuery.objects.filter(query_set_id=base.query_set_id).order_by("id")
    already = set(run.gold_queries or [])
    if query_ids is None:
        chosen = [q for q in queries if reference_answers(q) and q.pk not in already]
        if not chosen:
            raise ValidationError(
                {
                    "queries": f"No query of run #{run.pk}'s set has reference answers that the run has not "
                    "used yet: add reference answers to some queries first."
                }
            )
        return chosen
    wanted = list(dict.fromkeys(int(q) for q in query_ids))
    found = {q.pk: q for q in queries.filter(pk__in=wanted)}
    unknown = [q for q in wanted if q not in found]
    if unknown:
        raise ValidationError({"queries": f"Not queries of run #{run.pk}'s query set: {', '.join(map(str, unknown))}."})
    bare = [q for q in wanted if not reference_answers(found[q])]
    if bare:
        raise ValidationError({"queries": f"These queries have no reference answers: {', '.join(map(str, bare))}."})
    chosen = [found[q] for q in wanted if q not in already]
    if not chosen:
        raise ValidationError(
            {"queries": f"Run #{run.pk} already used the reference answers of every query named: nothing to add."}
        )
    return chosen


def _gold_evidence(base: EstimationRun, queries: list[FactQuery]) -> dict[int, dict[str, int]]:
    """Per source: new gold answers, how many agreed with the run's answer, how many match gold."""
    by_query: dict[int, list[RunResponse]] = defaultdict(list)
    for response in RunResponse.objects.filter(run=base, query__in=queries, cluster__isnull=False).only(
        "query_id", "source_id", "response", "cluster", "agrees"
    ):
        by_query[response.query_id].append(response)
    evidence: dict[int, dict[str, int]] = defaultdict(lambda: {"answers": 0, "previous": 0, "hits": 0})
    for i, query in enumerate(queries):
        responses = by_query.get(query.pk, [])
        records = [
            ResponseRecord(i, r.source_id, r.response, r.response, False, 0.0, cluster=r.cluster) for r in responses
        ]
        label = gold_label(records, reference_answers(query))
        for response in responses:
            counts = evidence[response.source_id]
            counts["answers"] += 1
            counts["previous"] += int(bool(response.agrees))
            counts["hits"] += int(response.cluster == label)
    return evidence


class ScoreUpdate(TypedDict):
    """What an update changes of a source's score."""

    reliability: float
    agreements: int
    gold_answers: int
    gold_agreements: int


def _updated(score: ReliabilityScore, counts: dict[str, int], alpha: float, beta: float) -> ScoreUpdate:
    g = GOLD_WEIGHT
    evidence = score.answers + alpha + beta + (g - 1.0) * score.gold_answers
    agreed = score.reliability * evidence
    n_new, previous, hits = counts["answers"], counts["previous"], counts["hits"]
    denominator = evidence + (g - 1.0) * n_new
    accuracy = (agreed - previous + g * hits) / denominator if denominator > 0 else score.reliability
    return {
        "reliability": min(max(accuracy, 0.0), 1.0),
        "agreements": max(score.agreements - previous + hits, 0),
        "gold_answers": score.gold_answers + n_new,
        "gold_agreements": score.gold_agreements + hits,
    }


def updated_topics(topics: JSONObject, base: EstimationRun, queries: list[FactQuery]) -> JSONObject:
    """``topics`` (a run's EstimationRun.topics) with each topic's cells moved by the new gold
    answers of its queries, by the rule of `_updated` on the topic's own evidence (its answers
    plus the shrinkage's STRENGTH pseudo-answers): a check on one topic moves that topic's
    reliability (and the overall number, through the run's scores), not the others'."""
    out = copy.deepcopy(topics)
    topic_of = as_object(topics.get("queries"))
    by_topic: dict[str, list[FactQuery]] = defaultdict(list)
    for query in queries:
        key = topic_of.get(str(query.pk))
        if isinstance(key, str):
            by_topic[key].append(query)
    cells = as_object(out.get("cells"))  # the copy's own cells, changed in place
    g = GOLD_WEIGHT
    for key, chosen in by_topic.items():
        for source_id, counts in _gold_evidence(base, chosen).items():
            for cell in as_list(cells.get(str(source_id))):
                if not isinstance(cell, dict) or cell.get("key") != key:
                    continue
                stored = topic_cell(cell)
                evidence = float(stored["answers"]) + STRENGTH
                agreed = float(stored["accuracy"]) * evidence
                denominator = evidence + (g - 1.0) * counts["answers"]
                accuracy = round(
                    min(max((agreed - counts["previous"] + g * counts["hits"]) / denominator, 0.0), 1.0), 4
                )
                cell["accuracy"] = accuracy
                cell["low"] = round(min(stored["low"], accuracy), 4)
                cell["high"] = round(max(stored["high"], accuracy), 4)
    return out


def apply_gold_update(
    run: EstimationRun, query_ids: Iterable[int] | None = None, *, user: Actor | None = None
) -> EstimationRun:
    """Add the reference answers of ``query_ids`` (default: every query of the run's set with
    reference answers the run has not used) to the run's reliabilities, as a new run of kind
    "update" whose parent is ``run``; returns it. Queries the run already used are skipped.

    Refused (ValidationError on "run") unless the run succeeded and rests on a full run whose
    responses are stored, and (on "queries") when there is no new gold evidence to add."""
    refuse_gold_update(run)
    with transaction.atomic():
        run = EstimationRun.objects.select_for_update(of=("self",)).get(pk=run.pk)
        if run.state != EstimationRun.State.SUCCEEDED:
            raise ValidationError({"run": f"Run #{run.pk} has not succeeded: there is no estimate to update yet."})
        base = full_run_of(run)
        if base is None or base.query_set_id is None:
            raise ValidationError(
                {"run": f"Run #{run.pk} cannot be updated: the full run it rests on (or its query set) was deleted."}
            )
        queries = _chosen_queries(run, base, query_ids)
        evidence = _gold_evidence(base, queries)
        estimator = str(base.params.get("estimator", settings.RELIABILITY_ESTIMATOR))
        scheme = get_estimator(estimator).weight_scheme
        alpha = float(base.params.get("alpha", 1.0))
        beta = float(base.params.get("beta", 1.0))
        parent_scores = list(ReliabilityScore.objects.filter(run=run).order_by("source_id"))
        now = timezone.now()
        update = EstimationRun.objects.create(
            query_set_id=base.query_set_id,
            kind=EstimationRun.Kind.UPDATE,
            parent=run,
            params={
                "estimator": estimator,
                "alpha": alpha,
                "beta": beta,
                "gold_weight": GOLD_WEIGHT,
                "update_queries": [q.pk for q in queries],
            },
            state=EstimationRun.State.SUCCEEDED,
            backend=run.backend,
            converged=run.converged,
            created_by=signed_in(user),
            finished_at=now,
            gold_queries=[*(run.gold_queries or []), *(q.pk for q in queries)],
        )
        update.sources.set(run.sources.all())
        scores = []
        for score in parent_scores:
            counts = evidence.get(score.source_id)
            values: ScoreUpdate = (
                _updated(score, counts, alpha, beta)
                if counts
                else {
                    "reliability": score.reliability,
                    "agreements": score.agreements,
                    "gold_answers": score.gold_answers,
                    "gold_agreements": score.gold_agreements,
                }
            )
            low, high = (
                interval_holding(wilson_interval(values["agreements"], score.answers), values["reliability"])
                if counts
                else (score.low, score.high)
            )
            scores.append(
                ReliabilityScore(
                    run=update,
                    source_id=score.source_id,
                    weight=voting_weight(values["reliability"], len(parent_scores), scheme=scheme)
                    if counts
                    else score.weight,
                    low=low,
                    high=high,
                    answers=score.answers,
                    **values,
                )
            )
        # Latest score per source before this update: move Source.reliability only where it is the parent's.
        latest = dict(
            ReliabilityScore.objects.filter(
                source_id__in=[s.source_id for s in scores], run__state=EstimationRun.State.SUCCEEDED
            )
            .exclude(run=update)
            .order_by("source_id", "-run__created_at", "-run_id")
            .distinct("source_id")
            .values_list("source_id", "run_id")
        )
        ReliabilityScore.objects.bulk_create(scores)
        if run.topics.get("cells"):
            update.topics = updated_topics(run.topics, base, queries)
            update.save(update_fields=["topics"])
        for score in scores:
            if latest.get(score.source_id) == run.pk:
                Source.objects.filter(pk=score.source_id).update(
                    reliability=score.reliability,
                    reliability_low=score.low,
                    reliability_high=score.high,
                    reliability_answers=score.answers,
                    reliability_updated_at=now,
                )
    return update
