"""The ask page shows an astute-rag answer's internal passages and consolidated groups as evidence."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from django.utils.html import escape

from core.engine.strategies.codec import evidence_to_json, jsonable
from core.models import Question
from sources.models import Source
from tests.factories import QuestionFactory, SourceFactory
from tests.scripted import HAPPY_ANSWER, MEMORY, RecordedGenerator, answer_with, astute_context

HOSTILE_MEMORY = 'Elvis Presley <script>alert("x")</script> recorded it in 1961.'


def _answered(memory: str = MEMORY) -> tuple[Question, list[Source]]:
    """A question answered by astute-rag, stored from a real strategy result (recorded model outputs)."""
    sources = [SourceFactory(name=f"astute-src-{i}") for i in range(3)]
    result = answer_with(
        astute_context(RecordedGenerator(generate=memory, answer=HAPPY_ANSWER), source_ids=[s.pk for s in sources])
    )
    question = QuestionFactory(
        text="who recorded i can't help falling in love with you",
        strategy="astute-rag",
        answered=True,
        answer=result.answer,
        confidence=result.confidence,
        backend=result.backend,
        notes=result.notes,
        evidence=evidence_to_json(result.evidence),
        trace=jsonable(result.trace),
    )
    return question, sources


def _section(page: str) -> str:
    start = page.index('id="astute-evidence"')
    return page[start : page.index("</section>", start)]


def test_an_astute_answer_shows_its_internal_passage_and_groups(analyst_client: Any, db: Any) -> None:
    question, cited_sources = _answered()
    page = analyst_client.get(reverse("question-detail", args=[question.pk])).content.decode()
    section = _section(page)
    assert escape(MEMORY) in section  # the passage the model wrote from memory
    rows = [row.split("</tr>")[0] for row in section.split('<tr class="astute-group')[1:]]
    assert len(rows) == 2
    chosen, other = rows
    assert chosen.startswith(' chosen"') and "<td>1, 2, 4</td>" in chosen
    assert '<span class="tag">memory</span>' in chosen and '<span class="tag">external</span>' in chosen
    assert "<strong>Elvis Presley</strong>" in chosen and "0.90" in chosen
    assert other.startswith('"') and "<td>3</td>" in other and "Frank Sinatra" in other
    assert '<span class="tag">memory</span>' not in other
    # The numbered documents the groups cite, linked to their sources.
    assert section.count("<li value=") == 4
    for source in cited_sources:
        assert f'href="{reverse("source-detail", args=[source.pk])}"' in section
    # The panel the ask page polls shows it too.
    panel = analyst_client.get(reverse("question-panel", args=[question.pk])).content.decode()
    assert 'id="astute-evidence"' in panel and escape(MEMORY) in panel


def test_model_text_on_the_page_is_escaped_and_no_inline_script_is_added(analyst_client: Any, db: Any) -> None:
    question, _ = _answered(HOSTILE_MEMORY)
    section = _section(analyst_client.get(reverse("question-detail", args=[question.pk])).content.decode())
    assert "&lt;script&gt;" in section and "<script" not in section and "style=" not in section


def test_other_strategies_show_no_astute_section(analyst_client: Any, world: Any) -> None:
    page = analyst_client.get(reverse("question-detail", args=[world.question.pk])).content.decode()
    assert 'id="astute-evidence"' not in page
