"""RELIABILITY_ESTIMATOR: the estimator of runs that name none, the weight scheme of every
source's voting weight, and an unknown name fails the system check (core.E001) with a clear
error, so every manage.py command, scripts/run.sh's migrate first, stops."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from core.engine.reliability import DEFAULT_ESTIMATOR, voting_weight
from core.services.engine_context import source_infos
from core.services.estimation import start_estimation_run
from tests.factories import FactQueryFactory, QueryCollectionFactory, SourceFactory

ROOT = Path(__file__).resolve().parents[2]


def test_the_setting_defaults_to_the_engine_s_default_estimator() -> None:
    from django.conf import settings

    if "RELIABILITY_ESTIMATOR" in os.environ:
        pytest.skip("RELIABILITY_ESTIMATOR is set in this environment")
    assert settings.RELIABILITY_ESTIMATOR == DEFAULT_ESTIMATOR


def test_a_run_that_names_no_estimator_uses_the_configured_one_and_a_named_one_wins(db: Any, settings: Any) -> None:
    settings.RELIABILITY_ESTIMATOR = "truthfinder"
    FactQueryFactory(query_set=QueryCollectionFactory(name="demo"))
    sources = SourceFactory.create_batch(3, chunk_count=1)  # a run needs at least three sources
    assert start_estimation_run(sources=sources).params["estimator"] == "truthfinder"
    named = start_estimation_run(sources=sources, params={"estimator": "onecoin"})
    assert named.params["estimator"] == "onecoin" and named.params["use_gold"] is True


def test_voting_weights_follow_the_configured_estimator_s_weight_scheme(db: Any, settings: Any) -> None:
    SourceFactory(name="good", chunk_count=1, reliability=0.9, reliability_answers=20)
    SourceFactory(name="fair", chunk_count=1, reliability=0.6, reliability_answers=20)
    settings.RELIABILITY_ESTIMATOR = "iwmv"  # "paper": N * w - 1
    paper = {s.name: s.weight for s in source_infos()}
    assert paper == pytest.approx({"good": 2 * 0.9 - 1, "fair": 2 * 0.6 - 1})
    settings.RELIABILITY_ESTIMATOR = "accucopy"  # "log-odds": about ln(w / (1 - w))
    log_odds = {s.name: s.weight for s in source_infos()}
    assert log_odds == pytest.approx(
        {"good": voting_weight(0.9, 2, scheme="log-odds"), "fair": voting_weight(0.6, 2, scheme="log-odds")}
    )
    assert log_odds == pytest.approx({"good": math.log(9), "fair": math.log(1.5)}, abs=0.01)


def test_the_system_check_passes_a_registered_estimator_and_names_the_choices_for_another(settings: Any) -> None:
    from core.checks import reliability_estimator_is_known

    settings.RELIABILITY_ESTIMATOR = "truthfinder"
    assert reliability_estimator_is_known() == []
    settings.RELIABILITY_ESTIMATOR = "astrology"
    [error] = reliability_estimator_is_known()
    assert error.id == "core.E001" and error.is_serious()
    assert error.msg == "RELIABILITY_ESTIMATOR must be one of accucopy, iwmv, onecoin, truthfinder, got 'astrology'"


def test_loading_the_settings_imports_no_engine_module(tmp_path: Path) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")},
        "DATA_DIR": str(tmp_path),
        "DATABASE_URL": "postgresql://check:check@127.0.0.1:9/unused",  # never connected to
        "SECRET_KEY": "x" * 50,
    }
    code = "import sys, reliability_site.settings; print(sorted(m for m in sys.modules if m.startswith(('core', 'numpy'))))"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_an_unknown_estimator_in_the_environment_stops_every_manage_py_command_naming_the_choices(
    tmp_path: Path,
) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")},
        "DJANGO_SETTINGS_MODULE": "reliability_site.settings",
        "DATA_DIR": str(tmp_path),
        "DATABASE_URL": "postgresql://check:check@127.0.0.1:9/unused",  # never connected to
        "SECRET_KEY": "x" * 50,
        "RELIABILITY_ESTIMATOR": "astrology",
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert (
        "(core.E001) RELIABILITY_ESTIMATOR must be one of accucopy, iwmv, onecoin, truthfinder, got 'astrology'"
        in result.stderr
    )


def test_a_source_estimated_on_a_few_answers_is_not_written_off_below_the_prior(db, settings) -> None:
    settings.RELIABILITY_ESTIMATOR = "iwmv"  # "paper" weights: N * w - 1 (prior 0.5 -> 0.5 with N = 3)
    SourceFactory(name="new", chunk_count=1, reliability=0.2, reliability_answers=1)  # one off-topic answer
    SourceFactory(name="known-bad", chunk_count=1, reliability=0.2, reliability_answers=40)
    SourceFactory(name="unchecked", chunk_count=1, reliability=None, reliability_answers=0)
    weights = {s.name: s.weight for s in source_infos()}
    assert weights["new"] == pytest.approx(weights["unchecked"]) == pytest.approx(voting_weight(None, 3))
    assert weights["known-bad"] < weights["new"]  # forty answers are evidence: written down
    # The estimate itself stays on show.
    assert {s.name: s.accuracy for s in source_infos()}["new"] == pytest.approx(0.2)
