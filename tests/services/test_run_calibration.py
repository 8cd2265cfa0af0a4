"""An estimation run with checked queries fits the answer calibration (how answer
probabilities relate to being right on them); answers asked after it carry it."""

from __future__ import annotations

from core.engine.steps.calibration import IDENTITY, RANDOM_SUBSETS, Calibration
from core.models import EstimationRun
from core.services.engine_context import build_context, latest_calibration
from core.services.estimation import finish_run
from tests.services.collusion import collusion_run


def test_a_run_with_checked_queries_stores_its_calibration_and_later_answers_use_it(db, embedder):
    assert latest_calibration() == IDENTITY  # no run yet: probabilities are left as they are

    run, _, _ = collusion_run(gold=3, estimator="onecoin")
    summary = finish_run(run)
    run.refresh_from_db()
    calibration = Calibration.from_dict(run.calibration)
    assert calibration.fitted and summary["calibrated_on"] == 3
    assert (calibration.queries, calibration.examples) == (3, 3 * (1 + RANDOM_SUBSETS))
    assert calibration.slope >= 0.0 and calibration.ece_after is not None and calibration.diagram
    assert build_context().calibration == calibration

    # The same run estimated again without its checks has nothing to fit on: answers after it
    # are left uncalibrated.
    run.params = {**run.params, "use_gold": False}
    run.state = EstimationRun.State.RUNNING
    run.save(update_fields=["params", "state"])
    summary = finish_run(run)
    run.refresh_from_db()
    assert run.calibration == {} and summary["calibrated_on"] == 0
    assert build_context().calibration == IDENTITY


def test_the_api_shows_a_run_s_calibration(analyst_client, db, embedder):
    run, _, _ = collusion_run(gold=3, estimator="onecoin")
    finish_run(run)
    body = analyst_client.get(f"/api/estimation-runs/{run.pk}/").json()
    assert body["calibration"]["queries"] == 3 and len(body["calibration"]["diagram"]) >= 1
