"""The shipped demo (sources/demo_data) as a benchmark corpus.

The demo's six sources are files of passages derived from PoisonedRAG
(scripts/build_demo_data.py): for each question a source covers, it holds three of the
question's factual passages or three of its misinformation passages (PoisonedRAG's own
incorrect answer, so every source that is wrong on a question pushes the same wrong answer).
Each record names the question it was derived from, so what each source holds for each
question (its ``Holding``) is known exactly: that is what the stage attribution
(core.bench.attribution) and the ceilings are computed from.

The estimation queries are the demo's curated query set, in its order (so ``--gold-queries 3``
checks the same three the run script's first estimation checks); the test questions are its
60 held-out "ask" questions. The corpus is the same on every seed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from core.bench.corpus import Corpus, CorpusDoc, Holding, SimSource
from core.bench.datasets import BenchQuestion, load_poisonedrag

DEMO_DIR = Path(__file__).resolve().parents[2] / "sources" / "demo_data"

# The demo's subjects (issue 39): a question about films, television, music, books or games is
# "entertainment", every other one "general knowledge". One source (Forum Chatter) is reliable
# on the first and not on the second; the curated estimation queries carry the subject as a
# "topic:" tag, as a curator would tag them.
ENTERTAINMENT = re.compile(
    r"\b(songs?|sings?|sang|singers?|sung|albums?|bands?|music(al)?|films?|movies?|seasons?|episodes?|series|"
    r"shows?|tv|television|characters?|actors?|actress|starred|starring|novels?|books?|voices?|theme|"
    r"cartoons?|sitcom|video games?|disney|pixar|netflix|hbo)\b",
    re.IGNORECASE,
)
SUBJECTS = ("entertainment", "general knowledge")


def subject_of(question: str) -> str:
    """The demo's subject of a question: "entertainment" or "general knowledge"."""
    return SUBJECTS[0] if ENTERTAINMENT.search(question) else SUBJECTS[1]


DEMO_SUBSETS = ("nq", "hotpotqa")
OUTSIDE_QUESTIONS = 10


class DemoDataError(ValueError):
    """The demo files do not match the reference data they were derived from."""


def load_demo_corpus(data_dir: Path, demo_dir: Path = DEMO_DIR) -> Corpus:
    """The demo's sources, documents and query split, with what each source holds."""
    questions = {q.qid: q for q in load_poisonedrag(data_dir, subsets=DEMO_SUBSETS)}
    by_text = {q.question: q for q in questions.values()}
    manifest = json.loads((demo_dir / "manifest.json").read_text(encoding="utf-8"))
    queries = json.loads((demo_dir / "queries.json").read_text(encoding="utf-8"))

    sources: list[SimSource] = []
    documents: list[CorpusDoc] = []
    holdings: dict[tuple[int, str], Holding] = {}
    for index, entry in enumerate(manifest["sources"], start=1):
        by_topic = tuple((str(k), float(v)) for k, v in dict(entry.get("topic_reliability") or {}).items())
        source = SimSource(
            index, str(entry["name"]), float(entry["simulated_reliability"]), float(entry["coverage"]), by_topic
        )
        sources.append(source)
        path = demo_dir / str(entry["file"])
        for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            record = json.loads(line)
            qid = str(record["derived_from"])
            if qid not in questions:
                raise DemoDataError(f"{path.name} line {line_no}: derived from unknown question {qid!r}")
            q = questions[qid]
            kind, answer = _kind(q, str(record["text"]))
            if kind is None:
                raise DemoDataError(f"{path.name} line {line_no}: text is none of {qid}'s passages")
            documents.append(CorpusDoc(len(documents) + 1, source.id, qid, str(record["text"]), kind, answer))
            holdings[(source.id, qid)] = Holding(kind, answer)

    def qids(items: Sequence[dict[str, object]]) -> list[str]:
        out = []
        for item in items:
            q = by_text.get(str(item["question"]))
            if q is None:
                raise DemoDataError(f"query {item['question']!r} is not a PoisonedRAG question")
            out.append(q.qid)
        return out

    estimation_ids, test_ids = qids(queries["estimation"]), qids(queries["ask"])
    used = [questions[q] for q in dict.fromkeys([*estimation_ids, *test_ids])]
    # Questions from outside the corpus (no source holds a passage derived from them): the
    # next PoisonedRAG questions after the demo's, for the abstention check.
    covered = {qid for qid in dict.fromkeys([*estimation_ids, *test_ids])} | {d.qid for d in documents}
    outside = [q for q in questions.values() if q.qid not in covered][:OUTSIDE_QUESTIONS]
    used += outside
    for q in used:  # the oracle and the ceilings read each question's subject
        q.subject = subject_of(q.question)
    for q in used:
        for s in sources:
            holdings.setdefault((s.id, q.qid), Holding("none"))
    return Corpus(
        questions=used,
        sources=sources,
        documents=documents,
        holdings=holdings,
        estimation_ids=estimation_ids,
        test_ids=test_ids,
        config={
            "dataset": "demo",
            "collude": True,
            "estimation_queries": len(estimation_ids),
            "outside_ids": [q.qid for q in outside],
        },
    )


def _kind(q: BenchQuestion, text: str) -> tuple[str | None, str]:
    if text in q.factual_docs:
        return "factual", q.gold[0]
    for wrong, docs in q.misinfo_docs.items():
        if text in docs:
            return "misinfo", wrong
    return None, ""
