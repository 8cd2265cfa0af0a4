"""The run page says how far to trust answer confidence: the calibration fitted on the run's
checked queries with its reliability diagram, or that there was nothing to fit it on."""

from __future__ import annotations

import re
from typing import Any

from django.urls import reverse

from core.engine.steps.calibration import fit
from core.models import EstimationRun


def section(html: str) -> str:
    match = re.search(r'<section class="card" id="run-calibration">(.*?)</section>', html, re.S)
    assert match, "no calibration section"
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", match.group(1)))


def test_a_run_with_checks_shows_its_calibration_and_reliability_diagram(analyst_client: Any, world: Any) -> None:
    run = world.runs[1]
    calibration = fit([(0.95, True)] * 14 + [(0.95, False)] * 6 + [(0.55, True)] * 3 + [(0.55, False)] * 2, queries=25)
    EstimationRun.objects.filter(pk=run.pk).update(calibration=calibration.as_dict())
    text = section(analyst_client.get(reverse("run-result", args=[run.pk])).content.decode())
    assert "Calibrated on this run's 25 checked queries" in text
    assert f"{calibration.ece_before:.2f} before, {calibration.ece_after:.2f} after" in text
    assert "fewer than 20" not in text
    rows = re.findall(r"(\d\.\d\d) (\d\.\d\d) (\d+)", text.split("Answers", 1)[1])
    assert [(right, count) for _, right, count in rows] == [("0.60", "5"), ("0.70", "20")]


def test_a_run_without_checks_says_its_confidence_is_not_calibrated(analyst_client: Any, world: Any) -> None:
    text = section(analyst_client.get(reverse("run-result", args=[world.runs[1].pk])).content.decode())
    assert "Not calibrated: this run had no checked queries" in text
