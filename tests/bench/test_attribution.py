"""Each wrong answer is put down to the stage that lost it; the demo's ceilings (issue 36)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.bench.attribution import attribute, ceiling, ceilings
from core.bench.corpus import Corpus, CorpusDoc, Holding, SimSource
from core.bench.datasets import BenchQuestion
from core.bench.demo import DEMO_DIR, DemoDataError, load_demo_corpus
from core.bench.qa import wrong_record
from core.engine.strategies.base import ClusterInfo, SourceVote, StrategyResult
from core.engine.text import IDK
from core.engine.types import CallStats, Passage

Q = BenchQuestion("q1", "who sings i can't take my eyes off of you", ["Frankie Valli"], [], {"Elvis Presley": []})
FACT = "I Can't Take My Eyes Off You was sung by Frankie Valli in 1967."
LIE = "I Can't Take My Eyes Off You was sung by Elvis Presley in 1967."


def _corpus(holdings: dict[int, str], reliability: dict[int, float]) -> Corpus:
    sources = [SimSource(i, f"s{i}", reliability[i], 1.0) for i in sorted(reliability)]
    docs: list[CorpusDoc] = []
    held: dict[tuple[int, str], Holding] = {}
    for sid in sorted(reliability):
        kind = holdings.get(sid, "none")
        answer = {"factual": "Frankie Valli", "misinfo": "Elvis Presley"}.get(kind, "")
        held[(sid, "q1")] = Holding(kind, answer)
        if kind != "none":
            docs.append(CorpusDoc(len(docs) + 1, sid, "q1", FACT if kind == "factual" else LIE, kind, answer))
    return Corpus([Q], sources, docs, held, [], ["q1"])


def _vote(sid: int, raw: str, response: str, cluster: int | None, doc: int | None, weight: float) -> SourceVote:
    passages = [Passage(doc, sid, FACT if doc == 1 else LIE)] if doc else []
    return SourceVote(sid, f"s{sid}", raw, response, raw != response, 0.9, cluster, weight, passages)


def _result(answer: str, votes: list[SourceVote]) -> StrategyResult:
    labels = {v.cluster: v.response for v in votes if v.cluster is not None}
    clusters = [
        ClusterInfo(c, label, [v.source_id for v in votes if v.cluster == c], 1.0) for c, label in labels.items()
    ]
    return StrategyResult(answer, 0.9, "ra-rag", "test", votes, clusters, [], None, [], {}, CallStats())


def test_a_wrong_answer_is_put_down_to_the_first_stage_that_explains_it() -> None:
    # s1 (0.9) holds the fact (doc 1), s2 (0.2) the lie (doc 2).
    corpus = _corpus({1: "factual", 2: "misinfo"}, {1: 0.9, 2: 0.2, 3: 0.8})
    docs = {d.id: d for d in corpus.documents}

    def lost(answer: str, votes: list[SourceVote]) -> str | None:
        return attribute(corpus, Q, _result(answer, votes), docs)

    assert lost("Frankie Valli", [_vote(1, "Frankie Valli", "Frankie Valli", 0, 1, 1.0)]) is None
    # Both answers voted; the liar's estimated weight won, the true weights would not have.
    both = [
        _vote(1, "Frankie Valli", "Frankie Valli", 0, 1, 0.1),
        _vote(2, "Elvis Presley", "Elvis Presley", 1, 2, 2.0),
    ]
    assert lost("Elvis Presley", both) == "estimate"
    # The filter dropped the right answer.
    dropped = [_vote(1, "Frankie Valli", IDK, None, 1, 1.0), _vote(2, "Elvis Presley", "Elvis Presley", 0, 2, 0.1)]
    assert lost("Elvis Presley", dropped) == "filter-dropped"
    # The fact was read and a wrong name written.
    misread = [_vote(1, "Bobby Darin", "Bobby Darin", 0, 1, 1.0)]
    assert lost("Bobby Darin", misread) == "filter-kept"  # and the name is in no passage: the filter kept it
    misread_grounded = [
        _vote(1, "I don't know", IDK, None, 1, 1.0),
        _vote(2, "Elvis Presley", "Elvis Presley", 0, 2, 0.1),
    ]
    assert lost("Elvis Presley", misread_grounded) == "reading"
    # The holder was asked, but its fact was not retrieved.
    missed = [_vote(1, IDK, IDK, None, None, 1.0), _vote(2, "Elvis Presley", "Elvis Presley", 0, 2, 0.1)]
    assert lost("Elvis Presley", missed) == "retrieval"
    # The holder was never asked.
    assert lost("Elvis Presley", [_vote(2, "Elvis Presley", "Elvis Presley", 0, 2, 0.1)]) == "selection"


def test_a_wrong_answer_is_recorded_with_its_stage_and_what_each_source_read() -> None:
    corpus = _corpus({1: "factual", 2: "misinfo"}, {1: 0.9, 2: 0.2})
    docs = {d.id: d for d in corpus.documents}
    votes = [
        _vote(1, "Bobby Darin", IDK, None, 1, 1.0),
        _vote(2, "Elvis Presley", "Elvis Presley", 0, 2, 0.1),
        _vote(3, "Paul Anka", "Paul Anka", 1, 7, 0.5),  # a passage of another question
    ]
    record = wrong_record(Q, _result("Elvis Presley", votes), "filter-dropped", docs)
    assert (record["qid"], record["answer"], record["stage"], record["gold"]) == (
        "q1",
        "Elvis Presley",
        "filter-dropped",
        ["Frankie Valli"],
    )
    read_back = json.loads(json.dumps(record))  # plain JSON, as the benchmark writes it
    assert [(v["source"], v["raw"], v["response"], v["filtered"], v["passages"]) for v in read_back["votes"]] == [
        (1, "Bobby Darin", IDK, True, ["factual"]),
        (2, "Elvis Presley", "Elvis Presley", False, ["misinfo"]),
        (3, "Paul Anka", "Paul Anka", False, ["other"]),
    ]


def test_the_corpus_loses_what_no_perfect_reader_could_win() -> None:
    nobody = _corpus({2: "misinfo"}, {1: 0.9, 2: 0.2})
    assert ceiling(nobody, Q).any_factual is False
    result = _result("Elvis Presley", [_vote(2, "Elvis Presley", "Elvis Presley", 0, 2, 0.1)])
    assert attribute(nobody, Q, result, {d.id: d for d in nobody.documents}) == "corpus"
    # Held by a 0.6 source against two 0.55 liars: the paper's weights lose (0.6 < 1.1), log-odds
    # weights win (0.41 > 2 x 0.20), and plain majority loses.
    outvoted = _corpus({1: "factual", 2: "misinfo", 3: "misinfo"}, {1: 0.6, 2: 0.55, 3: 0.55})
    limit = ceiling(outvoted, Q)
    assert (limit.oracle, limit.oracle_log_odds, limit.oracle_mv, limit.any_factual) == (False, True, False, True)
    assert ceilings(outvoted, [Q]) == {"oracle": 0.0, "oracle_log_odds": 1.0, "oracle_mv": 0.0, "any_factual": 1.0}


def test_the_demo_corpus_is_read_back_from_its_files(data_dir: Path) -> None:
    corpus = load_demo_corpus(data_dir)
    manifest = json.loads((DEMO_DIR / "manifest.json").read_text())
    assert [s.name for s in corpus.sources] == [s["name"] for s in manifest["sources"]]
    assert len(corpus.estimation_ids) == 60 and len(corpus.test_ids) == 60
    assert not set(corpus.estimation_ids) & set(corpus.test_ids)
    lines = sum(
        1 for s in manifest["sources"] for line in (DEMO_DIR / s["file"]).read_text().splitlines() if line.strip()
    )
    assert len(corpus.documents) == lines
    # Every source holds three passages of one kind per question it covers.
    for (sid, qid), holding in corpus.holdings.items():
        kinds = {d.kind for d in corpus.documents if d.source_id == sid and d.qid == qid}
        assert kinds == ({holding.kind} if holding.kind != "none" else set())
    # The outside questions: no source holds anything on them.
    outside = corpus.config["outside_ids"]
    assert len(outside) == 10  # type: ignore[arg-type]
    assert all(corpus.holdings[(s.id, qid)].kind == "none" for s in corpus.sources for qid in outside)  # type: ignore[attr-defined]
    # The ceilings: 0.82 with the paper's weights, 54 of 60 held somewhere (issue 36 measured
    # 0.85 and 55 of 60 before Forum Chatter became reliable on entertainment only, issue 39).
    limits = ceilings(corpus, [corpus.question(q) for q in corpus.test_ids])
    assert limits["oracle"] == pytest.approx(49 / 60) and limits["any_factual"] == pytest.approx(54 / 60)
    # Forum Chatter's reliability depends on the question's subject; the others' does not.
    forum = next(s for s in corpus.sources if s.name == "Forum Chatter")
    by_subject = {corpus.question(q).topic: forum.reliability_on(corpus.question(q).topic) for q in corpus.test_ids}
    assert by_subject == {"entertainment": 0.9, "general knowledge": 0.2}


def test_a_demo_file_that_does_not_match_its_data_is_refused(data_dir: Path, tmp_path: Path) -> None:
    for name in ("manifest.json", "queries.json"):
        (tmp_path / name).write_text((DEMO_DIR / name).read_text())
    for entry in json.loads((DEMO_DIR / "manifest.json").read_text())["sources"]:
        (tmp_path / entry["file"]).write_text((DEMO_DIR / entry["file"]).read_text())
    first = json.loads((DEMO_DIR / "manifest.json").read_text())["sources"][0]["file"]
    record = json.loads((tmp_path / first).read_text().splitlines()[0])
    record["text"] = "An edited passage."
    (tmp_path / first).write_text(json.dumps(record) + "\n")
    with pytest.raises(DemoDataError, match=f"{first} line 1"):
        load_demo_corpus(data_dir, tmp_path)
