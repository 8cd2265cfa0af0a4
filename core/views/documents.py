"""Checking an answer against its evidence: a document page (the cited passage highlighted),
a per-source document browser with full-text search, and CSV exports of a question's votes
and of a run's scores."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from typing import Any

from django.contrib.postgres.search import SearchHeadline, SearchQuery, SearchRank, SearchVector
from django.core.paginator import Paginator
from django.db.models import Value
from django.db.models.functions import Left, Replace
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from core.forms.query import DocumentForm, DocumentSearchForm
from core.models import EstimationRun, Question
from core.roles import analyst_required
from core.views.query import bad_query
from sources.models import Chunk, Document, Source

DOCUMENTS_PER_PAGE = 25
# Full-text search reads the first this-many characters of a document's text. to_tsvector
# fails ("string is too long for tsvector") once a text's distinct lexemes pass 1 MB, and the
# vector is built for every document of the source in one query, so one long document made
# every search of its source a 500. A character is at most 4 bytes of UTF-8, so 200,000 of
# them stay under the limit whatever the script (lexemes are never longer than their text).
SEARCH_TEXT_CHARS = 200_000
# A hit's snippet: PostgreSQL's ts_headline (the same stemming as the search) over the first
# this-many characters of its text, cut to at most SNIPPET_CHARS characters shown.
SNIPPET_TEXT_CHARS = 50_000
SNIPPET_CHARS = 300
# ts_headline marks the query's words with these two private-use characters (removed from the
# text first, so a document cannot plant them): the snippet is escaped, then they become <mark>.
_START, _STOP = "\ue000", "\ue001"
# Cells a spreadsheet would run as a formula (CSV injection): prefixed with a quote.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


@analyst_required
def document_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """A document in full; ``?chunk=<id>`` highlights that passage (a citation's target).
    The text is untrusted: it is rendered escaped, split around the passage, never as HTML."""
    document = get_object_or_404(Document.objects.select_related("source"), pk=pk)
    form = DocumentForm(request.GET)
    if not form.is_valid():
        return bad_query(request, form)
    chunk: Chunk | None = None
    if form.cleaned_data.get("chunk") is not None:
        # A passage of another document (or deleted since): the document, nothing marked.
        chunk = Chunk.objects.filter(pk=form.cleaned_data["chunk"], document=document).first()
    before, marked, after = document.text, "", ""
    if chunk is not None:
        at = document.text.find(chunk.text)
        if at >= 0:
            before, marked, after = (
                document.text[:at],
                document.text[at : at + len(chunk.text)],
                document.text[at + len(chunk.text) :],
            )
    return render(
        request,
        "core/document_detail.html",
        {"document": document, "chunk": chunk, "before": before, "marked": marked, "after": after},
    )


@analyst_required
def source_documents(request: HttpRequest, pk: int) -> HttpResponse:
    """A source's documents, newest first, or ranked by PostgreSQL full-text search on title
    and text (config "english") when ``?q=`` is given. The vector is computed per query: fine
    for the few thousand documents a source holds here; a GIN index on the same expression
    (or a stored SearchVectorField) would be the step for much larger sources."""
    source = get_object_or_404(Source, pk=pk)
    form = DocumentSearchForm(request.GET)
    if not form.is_valid():
        return bad_query(request, form)
    q = form.text("q")
    documents = Document.objects.filter(source=source).only("id", "title", "url", "published_at", "ingested_at")
    if q:
        vector = SearchVector("title", weight="A", config="english") + SearchVector(
            Left("text", SEARCH_TEXT_CHARS), weight="B", config="english"
        )
        query = SearchQuery(q, config="english", search_type="websearch")
        documents = (
            documents.annotate(search=vector, rank=SearchRank(vector, query))
            .filter(search=query)  # ts_rank is never exactly 0: match with @@, rank only orders
            .order_by("-rank", "-ingested_at", "id")
        )
    else:
        documents = documents.order_by("-ingested_at", "id")
    page = Paginator(documents, DOCUMENTS_PER_PAGE).get_page(form.cleaned_data.get("page"))
    snippets = _snippets([d.pk for d in page.object_list], q) if q else {}
    rows = [(document, snippets.get(document.pk, "")) for document in page.object_list]
    return render(
        request,
        "core/document_list.html",
        {"source": source, "page": page, "rows": rows, "q": q, "query": form.pager_query()},
    )


def _snippets(ids: list[int], q: str) -> dict[int, SafeString]:
    """Each hit's snippet (only the page's hits: ts_headline reads the text again): the passage
    of its text that best matches ``q``, the query's words marked."""
    if not ids:
        return {}
    text = Replace(Replace(Left("text", SNIPPET_TEXT_CHARS), Value(_START), Value("")), Value(_STOP), Value(""))
    headline = SearchHeadline(
        text,
        SearchQuery(q, config="english", search_type="websearch"),
        config="english",
        start_sel=_START,
        stop_sel=_STOP,
        max_words=30,
        min_words=12,
        max_fragments=2,
        fragment_delimiter=" … ",
    )
    rows = Document.objects.filter(pk__in=ids).annotate(headline=headline).values_list("pk", "headline")
    return {pk: snippet_html(value or "") for pk, value in rows}


def snippet_html(headline: str, limit: int = SNIPPET_CHARS) -> SafeString:
    """A headline as safe HTML: whitespace collapsed, cut at a word within ``limit`` characters
    (marks not counted), every character escaped, and the marked words (between _START and
    _STOP) in <mark>; a mark the cut left open is closed."""
    flat = " ".join(headline.split())
    shown = flat.replace(_START, "").replace(_STOP, "")
    if len(shown) > limit:
        kept, count = [], 0
        for char in flat:
            if char not in (_START, _STOP):
                if count >= limit:
                    break
                count += 1
            kept.append(char)
        cut = "".join(kept)
        space = cut.rfind(" ")
        flat = (cut[:space] if space > len(cut) // 2 else cut).rstrip()
    parts: list[str] = []
    open_mark = False
    for char in flat:
        if char == _START and not open_mark:
            parts.append("<mark>")
            open_mark = True
        elif char == _STOP and open_mark:
            parts.append("</mark>")
            open_mark = False
        elif char not in (_START, _STOP):
            parts.append(str(escape(char)))
    if open_mark:
        parts.append("</mark>")
    if len(shown) > limit:
        parts.append(" …")
    html = "".join(parts).replace("<mark></mark>", "")
    return mark_safe(html)  # noqa: S308 - every character of the text was escaped above


def csv_cell(value: Any) -> str:
    """A cell as text, with a leading quote when a spreadsheet would read it as a formula."""
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(_FORMULA_STARTS) else text


def csv_response(filename: str, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> HttpResponse:
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    writer = csv.writer(response)
    writer.writerow(header)
    for row in rows:
        writer.writerow([csv_cell(v) for v in row])
    return response


@analyst_required
def question_votes_csv(request: HttpRequest, pk: int) -> HttpResponse:
    question = get_object_or_404(Question, pk=pk)
    votes = question.votes.select_related("source").order_by("rank", "id")
    header = ["rank", "source_id", "source", "reliability", "response", "raw_response", "filtered", "align_score"]
    header += ["cluster", "weight", "passages"]
    rows = (
        [
            v.rank + 1,
            v.source_id,
            v.source.name,
            v.reliability,
            v.response,
            v.raw_response,
            v.filtered,
            round(v.align_score, 4),
            v.cluster,
            round(v.weight, 4),
            len(v.passages or []),
        ]
        for v in votes
    )
    return csv_response(f"question-{question.pk}-votes.csv", header, rows)


@analyst_required
def run_scores_csv(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(EstimationRun, pk=pk)
    scores = run.scores.select_related("source").order_by("-reliability", "source__name")
    header = ["source_id", "source", "reliability", "low", "high", "weight", "answers", "agreements"]
    header += ["gold_answers", "gold_agreements"]
    rows = (
        [
            s.source_id,
            s.source.name,
            round(s.reliability, 4),
            round(s.low, 4),
            round(s.high, 4),
            round(s.weight, 4),
            s.answers,
            s.agreements,
            s.gold_answers,
            s.gold_agreements,
        ]
        for s in scores
    )
    return csv_response(f"run-{run.pk}-scores.csv", header, rows)
