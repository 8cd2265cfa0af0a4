"""Fact-checking queries written from documents by an LLM (the RA-RAG paper's recipe)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from core.engine.backends.generation.base import GenerationRequest
from core.engine.text import is_idk
from core.models import FactQuery, QuerySet
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


def _first_sentence(text: str) -> str:
    return re.split(r"(?<=[.!?])\s+", text.strip(), maxsplit=1)[0].rstrip(".!? ")


def generate_queries(documents: Iterable[Document], query_set: QuerySet, generator: Any) -> list[FactQuery]:
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
        qa, claim = outputs[2 * i].text, outputs[2 * i + 1].text.strip().strip('"').rstrip(".")
        match = re.search(r"question:\s*(.+?)\s*(?:\n|$)(?:.*?answer:\s*(.+))?", qa, re.IGNORECASE | re.DOTALL)
        if match and match.group(1).strip():
            question = match.group(1).strip()
            answer = (match.group(2) or "").strip().splitlines()[0] if match.group(2) else ""
            query, made = FactQuery.objects.get_or_create(
                query_set=query_set,
                question=question[:2000],
                defaults={
                    "origin": FactQuery.Origin.GENERATED,
                    "document": doc,
                    "reference_answers": [answer] if answer and not is_idk(answer) else [],
                },
            )
            if made:
                created.append(query)
        claim = claim if claim and not is_idk(claim) else (doc.metadata.get("claim") or _first_sentence(doc.text))
        if claim:
            claim = claim[0].lower() + claim[1:] if len(claim) > 1 and not claim[:2].isupper() else claim
            query, made = FactQuery.objects.get_or_create(
                query_set=query_set,
                question=f"Is it true that {claim}?"[:2000],
                defaults={"origin": FactQuery.Origin.YES_NO, "document": doc, "reference_answers": ["yes"]},
            )
            if made:
                created.append(query)
    return created
