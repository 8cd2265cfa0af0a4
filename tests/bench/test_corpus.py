from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np

from core.bench.corpus import build_corpus, make_sources, sample_reliabilities
from core.bench.datasets import BenchQuestion, answer_type, substitute
from core.engine.text import normalize_answer


def _raw_poisonedrag(data_dir: Path) -> dict[str, dict[str, object]]:
    raw: dict[str, dict[str, object]] = {}
    for subset in ("nq", "hotpotqa", "msmarco"):
        with open(data_dir / "poisonedrag" / f"{subset}.json", encoding="utf-8") as fh:
            for qid, item in json.load(fh).items():
                raw[f"{subset}:{qid}"] = item
    return raw


def test_coverage_frequency_matches_each_sources_coverage(poisonedrag: list[BenchQuestion]) -> None:
    sources = make_sources("beta", 9, 0, [0.2, 0.4, 0.6, 0.8, 0.6, 0.6, 0.9, 0.3, 0.6], seed=3)
    corpus = build_corpus(poisonedrag, sources, seed=3, estimation_queries=50)
    n = len(corpus.questions)
    for source in sources:
        held = sum(corpus.holdings[(source.id, q.qid)].kind != "none" for q in corpus.questions)
        # 4 binomial standard errors: a wrong rule (e.g. coverage ignored) is far outside.
        tolerance = 4 * np.sqrt(source.coverage * (1 - source.coverage) / n)
        assert abs(held / n - source.coverage) < tolerance


def test_factual_share_of_holdings_matches_each_sources_reliability(poisonedrag: list[BenchQuestion]) -> None:
    sources = make_sources("beta", 9, 0, 0.9, seed=11)
    corpus = build_corpus(poisonedrag, sources, seed=11, estimation_queries=50)
    for source in sources:
        kinds = [corpus.holdings[(source.id, q.qid)].kind for q in corpus.questions]
        held = [k for k in kinds if k != "none"]
        share = sum(k == "factual" for k in held) / len(held)
        tolerance = 4 * np.sqrt(source.reliability * (1 - source.reliability) / len(held)) + 0.01
        assert abs(share - source.reliability) < tolerance


def test_adversary_hammer_prior_gives_adversaries_mostly_misinformation(poisonedrag: list[BenchQuestion]) -> None:
    sources = make_sources("adversary-hammer", 9, 5, 0.6, seed=0)
    corpus = build_corpus(poisonedrag, sources, seed=0, estimation_queries=50)
    assert [s.reliability for s in sources] == [0.1] * 5 + [0.9] * 4
    shares = []
    for source in sources:
        docs = [d for d in corpus.documents if d.source_id == source.id]
        shares.append(sum(d.kind == "factual" for d in docs) / len(docs))
    assert max(shares[:5]) < 0.25
    assert min(shares[5:]) > 0.75


def test_beta_prior_has_mean_point_six() -> None:
    rng = np.random.default_rng(0)
    draws = sample_reliabilities("beta", 20000, 0, rng)
    assert abs(float(np.mean(draws)) - 0.6) < 0.01
    assert min(draws) > 0.0 and max(draws) < 1.0


def test_every_poisonedrag_document_comes_from_the_data(data_dir: Path, poisonedrag: list[BenchQuestion]) -> None:
    raw = _raw_poisonedrag(data_dir)
    answers = {str(item[k]).strip() for item in raw.values() for k in ("correct answer", "incorrect answer")}
    sources = make_sources("beta", 6, 0, 0.6, seed=5)
    corpus = build_corpus(poisonedrag, sources, seed=5, estimation_queries=50, collude=False)
    for doc in corpus.documents:
        item = raw[doc.qid]
        incorrect = str(item["incorrect answer"])
        passages = [str(t) for t in item["adv_texts"]]  # type: ignore[attr-defined]
        allowed = set(passages) | {substitute(t, incorrect, doc.answer) for t in passages}
        assert doc.text in allowed
        assert doc.answer in answers
        if doc.kind == "factual":
            assert doc.answer == item["correct answer"]


def test_factual_twins_carry_the_correct_answer_not_the_incorrect_one(poisonedrag: list[BenchQuestion]) -> None:
    for q in poisonedrag:
        incorrect = q.wrong_answers[0]
        for text in q.factual_docs:
            assert normalize_answer(q.gold[0]) in normalize_answer(text)
            assert f" {normalize_answer(incorrect)} " not in f" {normalize_answer(text)} "


def test_extra_wrong_answers_have_the_type_of_the_incorrect_answer(poisonedrag: list[BenchQuestion]) -> None:
    for q in poisonedrag:
        kinds = {answer_type(w) for w in q.wrong_answers}
        assert kinds == {answer_type(q.wrong_answers[0])}
        gold = f" {normalize_answer(q.gold[0])} "
        assert all(gold not in f" {normalize_answer(w)} " for w in q.wrong_answers)


def test_colluding_misinformation_sources_push_the_same_wrong_answer(poisonedrag: list[BenchQuestion]) -> None:
    sources = make_sources("adversary-hammer", 9, 9, 1.0, seed=2)
    corpus = build_corpus(poisonedrag, sources, seed=2, estimation_queries=50, collude=True)
    for q in corpus.questions:
        wrong = {
            corpus.holdings[(s.id, q.qid)].answer for s in sources if corpus.holdings[(s.id, q.qid)].kind == "misinfo"
        }
        assert len(wrong) <= 1


def test_non_colluding_misinformation_sources_draw_their_own_wrong_answers(poisonedrag: list[BenchQuestion]) -> None:
    sources = make_sources("adversary-hammer", 9, 9, 1.0, seed=2)
    corpus = build_corpus(poisonedrag, sources, seed=2, estimation_queries=50, collude=False)
    distinct = Counter(
        len(
            {corpus.holdings[(s.id, q.qid)].answer for s in sources if corpus.holdings[(s.id, q.qid)].kind == "misinfo"}
        )
        for q in corpus.questions
    )
    assert max(distinct) >= 4


def test_estimation_and_test_questions_split_without_overlap(poisonedrag: list[BenchQuestion]) -> None:
    sources = make_sources("beta", 4, 0, 0.6, seed=1)
    corpus = build_corpus(poisonedrag, sources, seed=1, estimation_queries=100)
    assert len(corpus.estimation_ids) == 100
    assert not set(corpus.estimation_ids) & set(corpus.test_ids)
    assert len(corpus.estimation_ids) + len(corpus.test_ids) == len(poisonedrag)


def test_the_same_seed_builds_the_same_corpus(poisonedrag: list[BenchQuestion]) -> None:
    first = build_corpus(poisonedrag, make_sources("beta", 5, 0, 0.6, seed=9), seed=9)
    second = build_corpus(poisonedrag, make_sources("beta", 5, 0, 0.6, seed=9), seed=9)
    assert first.documents == second.documents
    assert first.sources == second.sources


def test_every_ramdocs_document_comes_from_the_data(data_dir: Path, ramdocs: list[BenchQuestion]) -> None:
    typed: dict[str, set[tuple[str, str]]] = {}
    with open(data_dir / "ramdocs" / "RAMDocs_test.jsonl", encoding="utf-8") as fh:
        for index, line in enumerate(fh):
            item = json.loads(line)
            typed[f"ramdocs:{index}"] = {(d["text"], d["type"]) for d in item["documents"]}
    sources = make_sources("beta", 6, 0, 0.6, seed=4)
    corpus = build_corpus(ramdocs, sources, seed=4, estimation_queries=50, collude=False)
    kind_to_type = {"factual": "correct", "misinfo": "misinfo", "noise": "noise"}
    for doc in corpus.documents:
        assert (doc.text, kind_to_type[doc.kind]) in typed[doc.qid]


def test_answer_types_follow_the_heuristic() -> None:
    assert answer_type("1998") == "year"
    assert answer_type("July 4, 1776") == "date"
    assert answer_type("23") == "number"
    assert answer_type("Elvis Presley") == "person"
    assert answer_type("robber barons") == "other"
