"""MultiRAG's own protocol on Flights and Books: questions from the gold items, answered from
the sources, scored by F1.

Every labelled item (subject, attribute) becomes one natural-language question ("When did
flight AA-3859-IAH-ORD actually depart?", "Who wrote the book with ISBN 9780072999389?").
The sources are the data set's: their claims (read with the same mappings as truth
discovery, core.bench.truth) for the ``multirag`` strategy, and the same records rendered
as one short document each ("AA-3859-IAH-ORD: scheduled departure time 7:10 a.m.; ...") for
``ra-rag``, which retrieves per source and reads them with the offline extractive reader.
Both use the sources' reliabilities from one claim-level estimation (the product's path: a
claims run updates the sources' reliability, which every strategy then uses).

Scoring: an answer is normalised with the attribute's normaliser; F1 of an item is token F1
of the normalised sets for name lists (surnames) and 1/0 equality otherwise; an abstention
scores 0. Reported: mean F1 (as a percentage, the paper's unit), precision over answered
questions, the answer rate, and seconds per question.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.bench.truth import FLIGHT_ATTRIBUTE_NAMES, MAPPINGS, extract_claims, load_gold, read_records
from core.engine.claims.mapping import ClaimMapping
from core.engine.claims.normalize import get_normalizer
from core.engine.claims.resolve import resolve_claims
from core.engine.claims.types import ClaimRecord, ExtractedClaim
from core.engine.text import is_idk
from core.engine.types import Embedder, SourceInfo

MULTIRAG_PAPER_F1 = {"flights": 74.9, "books": 63.5}  # the paper's Table (MultiRAG, F1 %)

FLIGHT_QUESTIONS = {
    "scheduled departure time": "When was flight {subject} scheduled to depart?",
    "actual departure time": "When did flight {subject} actually depart?",
    "scheduled arrival time": "When was flight {subject} scheduled to arrive?",
    "actual arrival time": "When did flight {subject} actually arrive?",
}
assert set(FLIGHT_QUESTIONS) == set(FLIGHT_ATTRIBUTE_NAMES.values())


@dataclass(frozen=True)
class FusionQuestion:
    question: str
    subject: str
    attribute: str
    gold: str  # normalised
    normalizer: str


def make_questions(dataset: str, data_dir: Path) -> list[FusionQuestion]:
    """One question per labelled item, in item order."""
    gold = load_gold(dataset, data_dir)
    mapping = MAPPINGS[dataset]
    normalizers = {a.name: a.normalizer for a in mapping.attributes}
    questions = []
    for (subject, attribute), value in sorted(gold.items()):
        if dataset == "flights":
            text = FLIGHT_QUESTIONS[attribute].format(subject=subject)
        else:
            text = f"Who wrote the book with ISBN {subject}?"
        questions.append(FusionQuestion(text, subject, attribute, value, normalizers[attribute]))
    return questions


def item_f1(answer: str, question: FusionQuestion) -> float:
    """F1 of one answer against the gold value (0 for an abstention or an unusable answer)."""
    if is_idk(answer):
        return 0.0
    predicted = get_normalizer(question.normalizer)(answer)
    if predicted is None:
        return 0.0
    if question.normalizer != "name-list":
        return 1.0 if predicted == question.gold else 0.0
    got, want = set(predicted.split(";")), set(question.gold.split(";"))
    common = len(got & want)
    if common == 0:
        return 0.0
    precision, recall = common / len(got), common / len(want)
    return 2 * precision * recall / (precision + recall)


def render_record(record: Mapping[str, object], mapping: ClaimMapping) -> str:
    """A record as a short document in the mapping's words: "AA-1007-MIA-PHX: actual departure
    time 5:08 p.m.; ..." (the subject, then every mapped attribute that has a value; fields
    the mapping does not read, such as row ids, are left out)."""
    subject = " ".join(str(record.get(f) or "").strip() for f in mapping.subject)
    parts = [
        f"{a.name} {str(record.get(a.field) or '').strip()}"
        for a in mapping.attributes
        if str(record.get(a.field) or "").strip()
    ]
    return f"{subject}: " + "; ".join(parts)


@dataclass
class FusionWorld:
    sources: list[SourceInfo]
    claims: list[ClaimRecord]
    documents: dict[int, list[str]]  # source id -> rendered records
    estimation_seconds: float


def build_world(dataset: str, data_dir: Path, estimator: str) -> FusionWorld:
    mapping = MAPPINGS[dataset]
    records = read_records(dataset, data_dir)
    extracted: list[ExtractedClaim] = extract_claims(mapping, records)
    names = sorted({str(c.source) for c in extracted})
    ids = {name: i + 1 for i, name in enumerate(names)}
    normalizers = {a.name: a.normalizer for a in mapping.attributes}
    tolerances = mapping.tolerances()
    specs = {name: tolerance.spec for name, tolerance in tolerances.items()}
    claims = [
        ClaimRecord(
            n + 1,
            ids[str(c.source)],
            c.subject,
            c.attribute,
            c.value,
            c.raw_value,
            normalizers[c.attribute],
            specs.get(c.attribute, ""),
        )
        for n, c in enumerate(extracted)
    ]
    started = time.perf_counter()
    resolution = resolve_claims(
        [(c.source_id, (c.subject, c.attribute), c.value) for c in claims], estimator, tolerances=tolerances
    )
    estimation_seconds = time.perf_counter() - started
    sources = [
        SourceInfo(
            sid,
            name,
            weight=resolution.sources[sid].weight,
            answers_count=resolution.sources[sid].answers,
            accuracy=resolution.sources[sid].accuracy,
        )
        for name, sid in ids.items()
    ]
    documents: dict[int, list[str]] = {}
    for _line, record in records:
        source = str(record.get(mapping.source or "", "")).strip()
        if source in ids:
            documents.setdefault(ids[source], []).append(render_record(record, mapping))
    return FusionWorld(sources, claims, documents, estimation_seconds)


def evaluate_multirag(
    dataset: str,
    data_dir: Path,
    embedder: Embedder,
    *,
    methods: Sequence[str] = ("multirag", "ra-rag"),
    estimator: str = "accucopy",
    max_questions: int | None = None,
    log: Callable[[str], None] = lambda _m: None,
) -> dict[str, Any]:
    from core.engine.backends.generation.extractive import ExtractiveReader
    from core.engine.backends.nli import EmbeddingLexicalNLI
    from core.engine.claims.memory_store import MemoryClaimStore
    from core.engine.params import parse_params
    from core.engine.steps.memory_retriever import InMemoryRetriever
    from core.engine.strategies import EngineContext, ensure_runnable, get_strategy

    questions = make_questions(dataset, data_dir)[:max_questions]
    world = build_world(dataset, data_dir, estimator)
    log(f"{dataset}: {len(world.claims)} claims, {len(world.sources)} sources, {len(questions)} questions")
    retriever = InMemoryRetriever()
    if any(m != "multirag" for m in methods):
        started = time.perf_counter()
        next_id = 1
        for sid, texts in sorted(world.documents.items()):
            retriever.add_texts(sid, texts, embedder, start_id=next_id)
            next_id += len(texts)
        log(f"embedded {next_id - 1} documents in {time.perf_counter() - started:.0f}s")
    ctx = EngineContext(
        retriever=retriever,
        embedder=embedder,
        generator=ExtractiveReader(),
        nli=EmbeddingLexicalNLI(embedder),
        sources=world.sources,
        claims=MemoryClaimStore(world.claims, embedder),
    )
    results: dict[str, Any] = {}
    for name in methods:
        strategy = get_strategy(name)
        ensure_runnable(strategy, ctx)
        params = parse_params(strategy.Params, {}, {})
        scores: list[float] = []
        answered = 0
        started = time.perf_counter()
        examples: list[dict[str, Any]] = []
        for q in questions:
            result = strategy.answer_checked(q.question, ctx, params)
            score = item_f1(result.answer, q)
            scores.append(score)
            answered += not is_idk(result.answer)
            if len(examples) < 3:
                examples.append({"question": q.question, "answer": result.answer, "gold": q.gold, "f1": score})
        seconds = time.perf_counter() - started
        results[name] = {
            "f1": 100 * sum(scores) / len(scores) if scores else 0.0,
            "precision": 100 * sum(scores) / answered if answered else 0.0,
            "answer_rate": answered / len(questions) if questions else 0.0,
            "questions": len(questions),
            "seconds_per_question": seconds / len(questions) if questions else 0.0,
            "examples": examples,
        }
        log(f"{name}: F1 {results[name]['f1']:.1f}")
    return {
        "dataset": dataset,
        "protocol": "multirag",
        "estimator": estimator,
        "claims": len(world.claims),
        "sources": len(world.sources),
        "questions": len(questions),
        "paper_f1": MULTIRAG_PAPER_F1.get(dataset),
        "estimation_seconds": world.estimation_seconds,
        "embedding_model": embedder.name,
        "methods": results,
    }


def multirag_table(result: dict[str, Any]) -> str:
    lines = [
        f"MultiRAG protocol on {result['dataset']}: {result['questions']} questions, {result['sources']} sources, "
        f"{result['claims']} claims (reliabilities: {result['estimator']})",
        "",
        "| method | F1 % | precision % | answered | s / question |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, row in result["methods"].items():
        lines.append(
            f"| {name} | {row['f1']:.1f} | {row['precision']:.1f} | {row['answer_rate']:.2f} | "
            f"{row['seconds_per_question']:.3f} |"
        )
    if result.get("paper_f1") is not None:
        lines.append(f"| MultiRAG (paper, its Table) | {result['paper_f1']:.1f} | | | |")
    return "\n".join(lines)
