from __future__ import annotations

from typing import Any

from core.services.pages.conflicts import pairwise_disagreement
from core.services.pages.question import question_clusters
from core.services.pages.runs import agreement_matrix, run_changes
from core.services.pages.sources import reliability_history, source_disagreements, source_overview


def test_reliability_history_lists_finished_runs_oldest_first(world: Any, django_assert_max_num_queries: Any) -> None:
    with django_assert_max_num_queries(1):
        history = reliability_history(world.sources[1])
    assert [h["run_id"] for h in history] == [r.pk for r in world.runs]
    assert history[1]["reliability"] > history[0]["reliability"]
    assert {"created_at", "low", "high", "answers"} <= set(history[0])


def test_source_overview_takes_two_queries_whatever_the_number_of_sources(
    world: Any, django_assert_max_num_queries: Any
) -> None:
    with django_assert_max_num_queries(2):
        overview = source_overview()
    assert [s["name"] for s in overview] == ["src-0", "src-1", "src-2", "src-3"]
    assert overview[0]["document_count"] == 2
    assert len(overview[0]["trend"]) == 2
    assert overview[0]["uncertainty"] is not None


def test_pairwise_disagreement_counts_shared_non_idk_queries(world: Any) -> None:
    pairs = {(p["source_a_name"], p["source_b_name"]): p for p in pairwise_disagreement()}
    assert pairs[("src-0", "src-1")]["rate"] == 0.0
    assert pairs[("src-2", "src-3")]["shared"] == 2  # src-3 said IDK once
    assert pairs[("src-2", "src-3")]["disagreements"] == 0
    assert pairs[("src-0", "src-2")]["disagreements"] == 2
    assert pairs[("src-0", "src-2")]["shared"] == 3


def test_source_disagreements_name_the_estimated_answer(world: Any) -> None:
    rows = source_disagreements(world.sources[2])
    assert rows and all(r["response"] != r["estimated_answer"] for r in rows)
    assert rows[0]["run_id"] == world.runs[1].pk


def test_agreement_matrix_marks_agree_disagree_and_idk(world: Any, django_assert_max_num_queries: Any) -> None:
    with django_assert_max_num_queries(4):
        matrix = agreement_matrix(world.runs[1])
    names = [s["name"] for s in matrix["sources"]]
    assert names[0] == "src-3"  # most reliable first
    row = next(r for r in matrix["rows"] if r["question"] == "Question 1?")
    assert row["cells"][names.index("src-3")] == "idk"
    assert row["cells"][names.index("src-0")] == "agree"


def test_run_changes_compare_with_the_previous_finished_run(world: Any) -> None:
    changes = run_changes(world.runs[1])
    assert changes["previous_run_id"] == world.runs[0].pk
    assert all(
        c["delta"] is not None and abs(c["delta"] - 0.05) < 1e-9
        for c in changes["sources"]
        if c["source_name"] != "src-3"
    )
    first = run_changes(world.runs[0])
    assert first["previous_run_id"] is None and {c["status"] for c in first["sources"]} == {"new"}


def test_question_clusters_group_sources_with_their_weights(world: Any, django_assert_max_num_queries: Any) -> None:
    with django_assert_max_num_queries(1):
        data = question_clusters(world.question)
    assert [c["label"] for c in data["clusters"]] == ["paris", "lyon"]
    assert data["clusters"][0]["chosen"] and data["clusters"][0]["weight"] == 2.2
    assert [m["source_name"] for m in data["clusters"][0]["sources"]] == ["src-0", "src-1"]
    assert [m["source_name"] for m in data["abstained"]] == ["src-3"]
