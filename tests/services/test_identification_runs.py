"""A run whose estimate agreement does not identify (issue 26), on the real database with the
real clustering and estimator: it says so (run, API, page, every answer that relies on it),
amplifies neither group, proposes the checks that settle it, and a curator's one click on
the right answer re-estimates it and breaks the colluding majority."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError

from core.engine.types import Embedder
from core.models import EstimationRun, FactQuery, ReliabilityScore
from core.services.estimation import finish_run, resume_estimation_run
from core.services.estimation.checks import identification_view, record_check, reestimate_run
from tasks.models import Job
from tests.helpers import as_list
from tests.services.collusion import COLLUDERS, FACTS, HONEST, collusion_run


def finished_collusion_run(**params: Any) -> tuple[EstimationRun, list[FactQuery], dict[str, Any]]:
    run, queries, sources = collusion_run(estimator="accucopy", **params)
    summary = finish_run(run)
    run.refresh_from_db()
    return run, queries, {"summary": summary, **sources}


def test_a_colluding_majority_without_checks_is_flagged_and_neither_group_is_amplified(
    db: None, embedder: Embedder
) -> None:
    run, queries, found = finished_collusion_run()
    assert found["summary"]["identified"] is False
    ident = run.identification
    assert ident["identified"] is False and "rest on which group of sources is right" in ident["reason"]
    names = dict((s.pk, s.name) for s in run.sources.all())
    assert {names[i] for i in ident["estimate_side"]} == set(COLLUDERS)
    assert {names[i] for i in ident["dissent_bloc"]} == set(HONEST)
    assert len(ident["checks"]) == 5 and set(ident["checks"]) <= {q.pk for q in queries}
    scores = {s.source.name: s for s in ReliabilityScore.objects.filter(run=run).select_related("source")}
    assert len({round(s.reliability, 9) for s in scores.values()}) == 1  # one footing for both groups
    assert len({round(s.weight, 9) for s in scores.values()}) == 1
    assert all(s.low <= s.reliability <= s.high for s in scores.values())

    view = identification_view(run)
    assert view is not None and not view["identified"]
    check = as_list(view["checks"])[0]
    offered = {o["answer"] for o in check["answers"]}
    question = next(q for q, right, wrong in FACTS if q == check["question"])
    right, wrong = next((r, w) for q, r, w in FACTS if q == question)
    assert offered == {right, wrong}


def test_one_click_on_the_right_answer_records_it_and_re_estimates_the_run_from_its_responses(
    db: None, embedder: Embedder, analyst: User
) -> None:
    run, queries, _ = finished_collusion_run()
    first = run.identification["checks"][0]
    question, right, _ = next(f for f in FACTS if f[0] == FactQuery.objects.get(pk=first).question)
    jobs_before = Job.objects.count()
    record_check(run, first, right)
    assert FactQuery.objects.get(pk=first).reference_answers == [right]
    run.refresh_from_db()
    assert run.state == EstimationRun.State.PENDING and Job.objects.count() == jobs_before + 1

    finish_run(run)  # what the re-estimate job does: the stored responses, now with the check
    run.refresh_from_db()
    assert run.identification["identified"] is True and run.gold_queries == [first]
    # The answered check leaves the proposals and is listed as what the estimate used.
    view = identification_view(run)
    assert view is not None and first not in {c["query_id"] for c in as_list(view["checks"])}
    assert view["checked"] == [{"query_id": first, "question": question, "references": [right]}]
    assert view["checked_total"] == 1
    scores = {s.source.name: s.reliability for s in ReliabilityScore.objects.filter(run=run).select_related("source")}
    assert min(scores[h] for h in HONEST) > max(scores[c] for c in COLLUDERS)


def test_a_check_is_refused_naming_the_field_when_it_is_not_proposed_or_empty(db, embedder):
    run, queries, _ = finished_collusion_run()
    proposed = set(run.identification["checks"])
    other = next(q for q in queries if q.pk not in proposed)
    with pytest.raises(ValidationError) as refused:
        record_check(run, other.pk, "Paris")
    assert "query" in refused.value.message_dict
    with pytest.raises(ValidationError) as empty:
        record_check(run, min(proposed), "   ")
    assert "answer" in empty.value.message_dict
    with pytest.raises(ValidationError) as wide:  # under the character cap, over the byte cap
        record_check(run, min(proposed), "\U0001f600" * 700)
    assert wide.value.message_dict["answer"][0].startswith("An answer is at most 2400 bytes")
    assert FactQuery.objects.filter(pk__in=proposed).exclude(reference_answers=[]).count() == 0


def test_a_run_limited_to_some_gold_queries_uses_only_those_and_a_check_adds_its_query(db, embedder):
    run, queries, _ = collusion_run(estimator="accucopy", gold=10, gold_query_ids=[])
    finish_run(run)
    run.refresh_from_db()
    assert run.gold_queries == [] and run.identification["identified"] is False  # the references stay unused
    first = run.identification["checks"][0]
    right = FactQuery.objects.get(pk=first).reference_answers[0]
    record_check(run, first, right)
    run.refresh_from_db()
    assert run.params["gold_query_ids"] == [first]
    assert FactQuery.objects.get(pk=first).reference_answers == [right]  # already held: not added twice
    finish_run(run)
    run.refresh_from_db()
    assert run.gold_queries == [first] and run.identification["identified"] is True


def test_an_answer_that_relies_on_an_unsettled_run_says_so(db, embedder):
    from core.engine.strategies.base import SourceVote, StrategyResult
    from core.services.asking import _notes

    run, _, sources = finished_collusion_run()
    EstimationRun.objects.filter(pk=run.pk).update(kind=EstimationRun.Kind.FULL)
    honest = sources["honest-a"]
    vote = SourceVote(honest.pk, honest.name, "Paris", "Paris", False, 1.0, 0, 1.0, [])
    result = StrategyResult(answer="Paris", confidence=0.5, strategy="ra-rag", backend="extractive", votes=[vote])

    class Uses:
        uses_sources = True

    notes = _notes(result, Uses(), 5)  # type: ignore[arg-type]
    assert any("rest on which group of sources is right" in n and f"run #{run.pk}" in n for n in notes)


def test_the_run_page_warns_and_the_checks_page_records_a_curators_one_click(
    db, embedder, curator_client, analyst_client
):
    run, _, _ = finished_collusion_run()
    page = analyst_client.get(f"/runs/{run.pk}/result/").content.decode()
    assert 'id="run-identification"' in page and "Agreement alone does not settle this estimate" in page
    assert 'id="run-checks-link"' not in page  # analysts read; curators check
    assert analyst_client.get(f"/runs/{run.pk}/checks/").status_code == 403

    curator_page = curator_client.get(f"/runs/{run.pk}/result/").content.decode()
    assert f'href="/runs/{run.pk}/checks/"' in curator_page
    checks = curator_client.get(f"/runs/{run.pk}/checks/")
    assert checks.status_code == 200
    first = run.identification["checks"][0]
    question, right, wrong = next(f for f in FACTS if f[0] == FactQuery.objects.get(pk=first).question)
    body = checks.content.decode()
    assert f'id="check-{first}"' in body and right in body and wrong in body

    refused = curator_client.post(f"/runs/{run.pk}/checks/", {"query": "x", "answer": right})
    assert refused.status_code == 400 and "Choose a query" in refused.content.decode()
    done = curator_client.post(f"/runs/{run.pk}/checks/", {"query": first, "answer": right})
    assert done.status_code == 302
    assert FactQuery.objects.get(pk=first).reference_answers == [right]
    run.refresh_from_db()
    assert run.state == EstimationRun.State.PENDING  # being estimated again with the check
    finish_run(run)
    again = curator_client.get(f"/runs/{run.pk}/checks/").content.decode()
    assert 'id="checked-so-far"' in again and f'id="checked-{first}"' in again and f'id="check-{first}"' not in again


def test_a_check_that_contradicts_a_stored_reference_or_targets_an_outdated_run_is_refused(db, embedder):
    run, _, _ = collusion_run(estimator="accucopy", gold=10, gold_query_ids=[])
    finish_run(run)
    run.refresh_from_db()
    first = run.identification["checks"][0]
    _, right, wrong = next(f for f in FACTS if f[0] == FactQuery.objects.get(pk=first).question)
    with pytest.raises(ValidationError) as contradicted:
        record_check(run, first, wrong)
    assert "answer" in contradicted.value.message_dict
    assert FactQuery.objects.get(pk=first).reference_answers == [right]
    run.refresh_from_db()
    assert run.params["gold_query_ids"] == []  # nothing half-stored

    from django.utils import timezone

    from tests.factories import EstimationRunFactory

    EstimationRunFactory(
        query_set=run.query_set,
        sources=list(run.sources.all()),
        state=EstimationRun.State.SUCCEEDED,
        finished_at=timezone.now(),
    )
    with pytest.raises(ValidationError) as outdated:
        record_check(run, first, right)
    assert "newer run" in outdated.value.message_dict["run"][0]
    # "Estimate again" on the superseded run is refused too, and starts nothing: it would put
    # this run's older reliabilities back over the newer run's (issue 38, row 9).
    jobs = Job.objects.count()
    with pytest.raises(ValidationError) as again:
        reestimate_run(run)
    assert "put its older reliabilities back" in again.value.message_dict["run"][0]
    # ... and so is a re-estimate asked directly (the API's resume with reestimate).
    with pytest.raises(ValidationError) as resumed:
        resume_estimation_run(run, reestimate=True)
    assert "put its older reliabilities back" in resumed.value.message_dict["run"][0]
    assert Job.objects.count() == jobs
