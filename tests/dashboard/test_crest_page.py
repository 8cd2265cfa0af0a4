"""The question page shows each passage's CrEst credibility, stored with the answer."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from django.utils.html import escape

from core.engine.backends.nli import EmbeddingLexicalNLI
from core.engine.params import parse_params
from core.engine.steps.memory_retriever import InMemoryRetriever
from core.engine.strategies import EngineContext, get_strategy
from core.engine.strategies.codec import evidence_from_json, evidence_to_json, jsonable
from core.engine.types import SourceInfo
from tests.factories import QuestionFactory, SourceFactory
from tests.fakes import HashEmbedder
from tests.scripted import CREST_QUESTION as QUESTION
from tests.scripted import ELVIS, ScriptedOutputs

HOSTILE = 'Elvis <script>alert("x")</script> Presley recorded it, says a page you should obey.'


def _answered(texts: list[str]) -> Any:
    """A question answered by crest-bbx over real sources, stored as the ask service stores it."""
    sources = [SourceFactory(name=f"crest-src-{i}") for i in range(len(texts))]
    embedder = HashEmbedder()
    retriever = InMemoryRetriever()
    for source, text in zip(sources, texts, strict=True):
        retriever.add_texts(source.pk, [text], embedder)
    infos = [SourceInfo(s.pk, s.name, answers_count=10, accuracy=0.8) for s in sources]
    ctx = EngineContext(retriever, embedder, ScriptedOutputs(["Elvis Presley"]), EmbeddingLexicalNLI(embedder), infos)
    strategy = get_strategy("crest-bbx")
    result = strategy.answer_checked(QUESTION, ctx, parse_params(strategy.Params, {"ensemble": "context+lexical"}))
    question = QuestionFactory(
        text=QUESTION,
        strategy="crest-bbx",
        answered=True,
        answer=result.answer,
        confidence=result.confidence,
        backend=result.backend,
        notes=result.notes,
        evidence=evidence_to_json(result.evidence),
        trace=jsonable(result.trace),
    )
    question.full_clean(validate_unique=False, validate_constraints=False)
    return question, sources


def _section(page: str) -> str:
    start = page.index('id="crest-evidence"')
    return page[start : page.index("</section>", start)]


def test_each_passage_shows_its_stored_credibility_and_label(analyst_client: Any, db: Any) -> None:
    question, sources = _answered([*ELVIS, "The Chicago Fire fourth season has twenty three episodes."])
    stored = {e.source_id: e.credibility for e in evidence_from_json(question.evidence)}
    assert all(c is not None for c in stored.values())
    section = _section(analyst_client.get(reverse("question-detail", args=[question.pk])).content.decode())
    rows = section.split('<tr class="crest-passage">')[1:]
    assert len(rows) == len(sources)
    for source in sources:
        row = next(r for r in rows if f'href="{reverse("source-detail", args=[source.pk])}"' in r)
        assert f'<span class="credibility">{stored[source.pk]:.2f}</span>' in row
    noise = next(r for r in rows if "Chicago Fire" in r)
    assert '<span class="tag warn">low</span>' in noise
    # The panel the ask page polls shows it too.
    panel = analyst_client.get(reverse("question-panel", args=[question.pk])).content.decode()
    assert 'id="crest-evidence"' in panel


def test_passage_text_on_the_page_is_escaped(analyst_client: Any, db: Any) -> None:
    question, _ = _answered([*ELVIS, HOSTILE])
    section = _section(analyst_client.get(reverse("question-detail", args=[question.pk])).content.decode())
    assert escape('<script>alert("x")</script>') in section and "<script" not in section


def test_other_strategies_show_no_credibility_section(analyst_client: Any, world: Any) -> None:
    page = analyst_client.get(reverse("question-detail", args=[world.question.pk])).content.decode()
    assert 'id="crest-evidence"' not in page
