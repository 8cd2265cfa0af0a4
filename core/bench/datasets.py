"""Question sets with factual and misinformation documents, built only from the shipped data.

PoisonedRAG gives, per question, five passages written for the incorrect answer. They are
the misinformation documents; their factual twins are the same passages with the incorrect
answer replaced by the correct one. More distinct wrong answers for a question come from
substituting answers of the same coarse type taken from other questions, so that
non-colluding misinformation sources (the paper's setting) can each push their own answer.

RAMDocs gives typed documents (correct, misinfo, noise) per question.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from core.engine.text import normalize_answer

POISONEDRAG_SUBSETS = ("nq", "hotpotqa", "msmarco")
MIN_PASSAGES = 3  # a source that holds documents for a question holds three (the paper's k)

_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december"
    "|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_YEAR = re.compile(r"^(1[0-9]{3}|20[0-9]{2})$")
_NUMBER = re.compile(r"^[\d.,%$\s]+(?:\s*\w+)?$")
_DATE = re.compile(rf"\b({_MONTHS})\b", re.IGNORECASE)
_CAP_WORD = re.compile(r"^[A-Z][\w.'\-]*$")


@dataclass
class BenchQuestion:
    """A question with its gold answers and the documents that support each answer."""

    qid: str
    question: str
    gold: list[str]
    factual_docs: list[str]
    misinfo_docs: dict[str, list[str]]  # wrong answer -> documents that support it
    noise_docs: list[str] = field(default_factory=list)
    dataset: str = ""
    subject: str = ""  # a topic given by a data set's own rule (the demo's subjects); "" : none

    @property
    def topic(self) -> str:
        """Its subject where a data set gives one (the demo), else the subset a question comes
        from ("nq", "hotpotqa", "msmarco" for PoisonedRAG; the data set's name otherwise):
        the topics of per-topic reliabilities in the benchmark, never shown to the product."""
        if self.subject:
            return self.subject
        head, colon, _ = self.qid.partition(":")
        return head if colon and head != self.dataset else self.dataset

    @property
    def wrong_answers(self) -> list[str]:
        return list(self.misinfo_docs)


def answer_type(answer: str) -> str:
    """Coarse answer type: year, date, number, person (capitalised words) or other."""
    text = answer.strip()
    if _YEAR.match(text):
        return "year"
    if _DATE.search(text) and re.search(r"\d", text):
        return "date"
    if re.search(r"\d", text) and _NUMBER.match(text):
        return "number"
    words = text.split()
    if 1 <= len(words) <= 4 and all(_CAP_WORD.match(w) for w in words):
        return "person"
    return "other"


def _word_pattern(phrase: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)" + re.escape(phrase.strip()) + r"(?!\w)", re.IGNORECASE)


def substitute(text: str, old: str, new: str) -> str:
    """Replace every whole-word, case-insensitive occurrence of ``old`` by ``new``."""
    return _word_pattern(old).sub(lambda _m: new, text)


def contains_phrase(text: str, phrase: str) -> bool:
    return bool(_word_pattern(phrase).search(text))


def _conflicts(a: str, b: str) -> bool:
    """Two answers one of which contains the other would blur containment accuracy."""
    na, nb = normalize_answer(a), normalize_answer(b)
    if not na or not nb:
        return True
    return f" {na} " in f" {nb} " or f" {nb} " in f" {na} "


def load_poisonedrag(
    data_dir: Path, subsets: Sequence[str] = POISONEDRAG_SUBSETS, n_wrong: int = 9
) -> list[BenchQuestion]:
    """PoisonedRAG questions with factual twins and up to ``n_wrong`` wrong answers each.

    A question is kept when at least three of its passages contain the incorrect answer
    (yes/no questions and paraphrased answers are dropped: no factual twin can be derived).
    The extra wrong answers are drawn with a fixed seed, so the document pool (and the
    embedding cache) does not depend on the run's seed.
    """
    raw: list[tuple[str, dict[str, object]]] = []
    for subset in subsets:
        with open(Path(data_dir) / "poisonedrag" / f"{subset}.json", encoding="utf-8") as fh:
            for qid, item in json.load(fh).items():
                raw.append((f"{subset}:{qid}", item))

    by_type: dict[str, list[str]] = {}
    for _qid, item in raw:
        for key in ("correct answer", "incorrect answer"):
            ans = str(item[key]).strip()
            by_type.setdefault(answer_type(ans), []).append(ans)

    questions: list[BenchQuestion] = []
    for qid, item in raw:
        correct = str(item["correct answer"]).strip()
        incorrect = str(item["incorrect answer"]).strip()
        if _conflicts(correct, incorrect):
            continue
        passages = [str(t) for t in item["adv_texts"] if contains_phrase(str(t), incorrect)]  # type: ignore[attr-defined]  # the JSON's adv_texts: a list
        if len(passages) < MIN_PASSAGES:
            continue
        factual = [substitute(t, incorrect, correct) for t in passages]
        misinfo: dict[str, list[str]] = {incorrect: passages}
        rng = random.Random(f"wrong-answers:{qid}")
        pool = sorted(set(by_type.get(answer_type(incorrect), [])))
        rng.shuffle(pool)
        for candidate in pool:
            if len(misinfo) >= n_wrong:
                break
            if _conflicts(candidate, correct) or any(_conflicts(candidate, w) for w in misinfo):
                continue
            misinfo[candidate] = [substitute(t, incorrect, candidate) for t in passages]
        questions.append(
            BenchQuestion(
                qid=qid,
                question=str(item["question"]),
                gold=[correct],
                factual_docs=factual,
                misinfo_docs=misinfo,
                dataset="poisonedrag",
            )
        )
    return questions


def load_ramdocs(data_dir: Path) -> list[BenchQuestion]:
    """RAMDocs questions that have both correct and misinformation documents."""
    questions: list[BenchQuestion] = []
    path = Path(data_dir) / "ramdocs" / "RAMDocs_test.jsonl"
    with open(path, encoding="utf-8") as fh:
        for index, line in enumerate(fh):
            if not line.strip():
                continue
            item = json.loads(line)
            factual = [d["text"] for d in item["documents"] if d["type"] == "correct"]
            noise = [d["text"] for d in item["documents"] if d["type"] == "noise"]
            misinfo: dict[str, list[str]] = {}
            for doc in item["documents"]:
                if doc["type"] == "misinfo":
                    misinfo.setdefault(str(doc["answer"]), []).append(doc["text"])
            if not factual or not misinfo:
                continue
            questions.append(
                BenchQuestion(
                    qid=f"ramdocs:{index}",
                    question=item["question"],
                    gold=[str(g) for g in item["gold_answers"]],
                    factual_docs=factual,
                    misinfo_docs=misinfo,
                    noise_docs=noise,
                    dataset="ramdocs",
                )
            )
    return questions


def load_questions(dataset: str, data_dir: Path, **options: object) -> list[BenchQuestion]:
    if dataset == "poisonedrag":
        return load_poisonedrag(data_dir, **options)  # type: ignore[arg-type]  # the CLI's options are load_poisonedrag's keywords
    if dataset == "ramdocs":
        return load_ramdocs(data_dir)
    raise ValueError(f"not a QA data set: {dataset!r}")
