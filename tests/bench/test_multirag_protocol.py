"""MultiRAG's protocol on Flights and Books: questions from the gold items, F1 scoring."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.bench.multirag_eval import (
    FusionQuestion,
    build_world,
    evaluate_multirag,
    item_f1,
    make_questions,
    render_record,
)
from core.bench.truth import FLIGHTS_MAPPING, load_gold
from tests.bench.fakes import HashingEmbedder


def test_f1_is_exact_for_times_and_set_f1_for_author_lists() -> None:
    time = FusionQuestion("When?", "AA-1", "actual departure time", "19:10", "time")
    assert item_f1("7:10 p.m.", time) == 1.0
    assert item_f1("7:11 p.m.", time) == 0.0
    assert item_f1("I don't know", time) == 0.0
    authors = FusionQuestion("Who?", "0201853949", "authors", "knuth", "name-list")
    # Predicted {graham, knuth} against {knuth}: precision 1/2, recall 1, F1 2/3.
    assert item_f1("Graham, Ronald; Knuth, Donald", authors) == pytest.approx(2 / 3)
    assert item_f1("Donald E. Knuth", authors) == 1.0
    assert item_f1("Patashnik, Oren", authors) == 0.0


def test_one_question_per_labelled_item_naming_its_subject(data_dir: Path) -> None:
    flights = make_questions("flights", data_dir)
    assert len(flights) == len(load_gold("flights", data_dir)) == 400
    assert all(q.subject in q.question for q in flights)
    assert "actually depart" in next(q.question for q in flights if q.attribute == "actual departure time")
    books = make_questions("books", data_dir)
    assert len(books) == 100 and all(q.normalizer == "name-list" for q in books)


def test_documents_render_the_mapped_attributes_only() -> None:
    record = {"tuple_id": "862", "src": "aa", "flight": "AA-1", "act_dep_time": "7:16 a.m.", "sched_dep_time": ""}
    assert render_record(record, FLIGHTS_MAPPING) == "AA-1: actual departure time 7:16 a.m."


def test_the_world_weighs_sources_by_the_claim_level_estimate(data_dir: Path) -> None:
    world = build_world("flights", data_dir, "accucopy")
    assert len(world.sources) == 38 and len(world.claims) == 7102
    by_name = {s.name: s for s in world.sources}
    # The airline's own site is far more reliable than the worst aggregators.
    airline, aggregator = by_name["aa"].accuracy, by_name["flightexplorer"].accuracy
    assert airline is not None and aggregator is not None, "both were estimated"
    assert airline > 0.9 > 0.4 > aggregator
    assert sum(len(d) for d in world.documents.values()) == 2376


def test_multirag_answers_most_flight_questions_from_the_claims(data_dir: Path) -> None:
    result = evaluate_multirag("flights", data_dir, HashingEmbedder(), methods=("multirag",), max_questions=40)
    row = result["methods"]["multirag"]
    assert row["questions"] == 40 and row["answer_rate"] == 1.0
    assert row["f1"] >= 80.0  # majority vote alone resolves about 80% of Flights' items
    assert result["paper_f1"] == 74.9
