"""Fact-checking queries written from documents by an LLM (the RA-RAG paper's recipe)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from core.engine.backends.generation.base import GenerationRequest, Generator
from core.engine.text import is_idk
from core.models import FactQuery, QueryCollection
from sources.models import Document


class QueryGenerationUnavailable(RuntimeError):
    """Generating queries needs an LLM backend; offline, curated query sets are used."""


_QUESTION_PROMPT = (
    "Read the passage and write ONE short factual question that the passage answers, "
    "and its answer in a few words.\nFormat exactly:\nQuestion: <question>\nAnswer: <answer>\n\n"
    "Passage: {passage}\n"
)
_CLAIM_PROMPT = (
    "State the main factual claim of the passage as one short declarative sentence, "
    "without a trailing period.\n\nPassage: {passage}\nClaim:"
)


MAX_QUESTION_CHARS = 300
_LOWER_AFTER_THAT = {"The", "A", "An", "This", "That", "These", "Those", "It", "Its", "There", "They", "Their"}
MAX_CLAIM_WORDS = 40


def _opening_sentence(text: str) -> str:
    """The text up to its first sentence end, with that end's punctuation."""
    return re.split(r"(?<=[.!?])\s+", text.strip(), maxsplit=1)[0]


def _first_sentence(text: str) -> str:
    return _opening_sentence(text).rstrip(".!? ")


def parse_question(output: str) -> tuple[str, str]:
    """(question, answer) from a model's reply to the question prompt, or ("", "").

    Small models often drop the "Question:" label and write the bare question (recorded from
    Qwen2.5-Coder-0.5B: "What was the fourth season of Chicago Fire?"), so a labelled question
    is taken first, else the first line that ends with "?". A question must end with "?", hold
    at least three words and at most MAX_QUESTION_CHARS characters; anything else is dropped."""
    labelled = re.search(r"question:\s*(.+?)\s*(?:\n|$)", output, re.IGNORECASE)
    if labelled:
        question = labelled.group(1).strip()
    else:
        question = next((line.strip() for line in output.splitlines() if line.strip().endswith("?")), "")
    question = question.strip().strip('"').strip()
    if not question.endswith("?") or len(question.split()) < 3 or len(question) > MAX_QUESTION_CHARS:
        return "", ""
    answer = re.search(r"answer:\s*(.+)", output, re.IGNORECASE)
    text = answer.group(1).strip().strip('"').strip() if answer else ""
    return question, "" if is_idk(text) else text


def parse_claim(output: str) -> str:
    """One declarative claim from a model's reply to the claim prompt, or "": its first
    sentence (small models run on), at most MAX_CLAIM_WORDS words, not a question."""
    sentence = _opening_sentence(output.strip().strip('"'))
    claim = sentence.rstrip(".!? ")
    if not claim or sentence.endswith("?") or is_idk(claim) or len(claim.split()) > MAX_CLAIM_WORDS:
        return ""
    return claim


def generate_queries(
    documents: Iterable[Document], query_set: QueryCollection, generator: Generator
) -> list[FactQuery]:
    """Fact-checking queries from documents, as in the RA-RAG paper: a question whose answer
    the document states ("What causes COVID-19?") and a yes/no claim check ("Is it true that
    {claim}?"). Needs an LLM backend; the offline extractive reader cannot write questions."""
    if getattr(generator, "name", "").startswith("extractive"):
        raise QueryGenerationUnavailable(
            "Generating fact-checking queries needs an LLM backend (GENERATOR_BACKEND=openai or transformers); "
            "with the offline extractive reader, use a curated query set (admin: Query sets, or load_demo)."
        )
    docs = list(documents)
    if not docs:
        return []
    requests = []
    for doc in docs:
        passage = doc.text[:2000]
        requests.append(GenerationRequest(doc.title or "", [], prompt=_QUESTION_PROMPT.format(passage=passage)))
        requests.append(GenerationRequest(doc.title or "", [], prompt=_CLAIM_PROMPT.format(passage=passage)))
    outputs = generator.generate(requests)
    created: list[FactQuery] = []
    for i, doc in enumerate(docs):
        question, answer = parse_question(outputs[2 * i].text)
        claim = parse_claim(outputs[2 * i + 1].text)
        if question:
            query, made = FactQuery.objects.get_or_create(
                query_set=query_set,
                question=question,
                defaults={
                    "origin": FactQuery.Origin.GENERATED,
                    "document": doc,
                    "reference_answers": [answer] if answer else [],
                },
            )
            if made:
                created.append(query)
        claim = claim or doc.metadata.get("claim") or _first_sentence(doc.text)
        if claim:
            first = claim.split()[0]
            # "Is it true that the ..." but never "Is it true that keith Bostic ...": only a
            # leading article or pronoun loses its capital.
            claim = first.lower() + claim[len(first) :] if first in _LOWER_AFTER_THAT else claim
            query, made = FactQuery.objects.get_or_create(
                query_set=query_set,
                question=f"Is it true that {claim}?"[:2000],
                defaults={"origin": FactQuery.Origin.YES_NO, "document": doc, "reference_answers": ["yes"]},
            )
            if made:
                created.append(query)
    return created
