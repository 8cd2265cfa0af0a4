"""The ask page as it presents an answer: strategies grouped, plain-language confidence, inline citations,
the document page and browser, permalinks and CSV exports, the question box's limits."""

from __future__ import annotations

import csv
import io
from typing import Any

from django.urls import reverse

from core.models import Question
from core.services.explain import VoteFact, explain_votes, highlight, reliability_tier
from tests.factories import (
    ChunkFactory,
    DocumentFactory,
    EstimationRunFactory,
    QuestionFactory,
    ReliabilityScoreFactory,
    SourceFactory,
    VoteFactory,
)


def _select(page: str, select_id: str) -> str:
    start = page.index(f'id="{select_id}"')
    return page[start : page.index("</select>", start)]


# 1. Strategies grouped


def test_the_form_offers_product_strategies_and_research_baselines_behind_advanced(
    analyst_client: Any, db: Any
) -> None:
    page = analyst_client.get(reverse("ask")).content.decode()
    product = _select(page, "id_strategy")
    research = _select(page, "id_research_strategy")
    assert 'value="ra-rag"' in product and 'value="vanilla-rag"' not in product
    assert 'value="vanilla-rag"' in research and 'value="ra-rag"' not in research
    assert page.index('<details class="advanced"') < page.index('id="id_research_strategy"')
    assert "wmv-oracle" not in page  # benchmark only
    # Plain words on the main form; the papers' terms only under Advanced; kappa marked only
    # for strategies that take it.
    main = page[page.index('id="product-strategies"') : page.index('<details class="advanced"')]
    assert "Asks the most reliable sources" in main and "kappa-RRSS" not in main and "WMV" not in main
    assert "kappa-RRSS source selection" in page[page.index('id="papers-terms"') :]
    assert 'value="vanilla-rag" data-kappa="false"' in research
    assert 'value="ra-rag-rss" data-kappa="true"' in research


def test_a_research_strategy_chosen_under_advanced_replaces_the_product_one(
    analyst_client: Any, db: Any, monkeypatch: Any
) -> None:
    seen: dict[str, Any] = {}

    def fake_start(text: str, **kwargs: Any) -> Question:
        seen.update(kwargs)
        return QuestionFactory(text=text, strategy=kwargs["strategy"])

    monkeypatch.setattr("core.views.ask.start_question", fake_start)
    analyst_client.post(reverse("ask"), {"text": "Who?", "strategy": "ra-rag", "research_strategy": "vanilla-rag"})
    assert seen["strategy"] == "vanilla-rag"
    analyst_client.post(reverse("ask"), {"text": "Who?", "strategy": "ra-rag", "research_strategy": ""})
    assert seen["strategy"] == "ra-rag"


def test_the_oracle_is_still_refused_when_posted_by_hand(analyst_client: Any, db: Any) -> None:
    response = analyst_client.post(reverse("ask"), {"text": "Who?", "research_strategy": "wmv-oracle"})
    assert response.status_code == 400 and b"only the benchmark knows" in response.content
    assert not Question.objects.exists()


def test_the_api_says_which_strategies_are_for_users(as_analyst: Any) -> None:
    by_name = {s["name"]: s for s in as_analyst.get("/api/strategies/").json()}
    assert {n for n, s in by_name.items() if s["product"]} == {"ra-rag", "multirag", "astute-rag", "crest-bbx"}
    assert by_name["ra-rag-nofilter"]["product"] is False  # an ablation does not inherit the flag


# 2. Plain-language confidence


def test_the_sentence_counts_sources_by_reliability_and_says_who_disagrees() -> None:
    votes = [
        VoteFact("A", "Paris", 0.9, True, passages=2),
        VoteFact("B", "Paris", 0.8, True, passages=1),
        VoteFact("C", "paris", 0.75, True, passages=1),
        VoteFact("D", "Lyon", 0.2, False),
        VoteFact("E", "Lyon", 0.3, False),
        VoteFact("F", "I don't know", 0.5, False, filtered=True),
    ]
    explanation = explain_votes("Paris", votes, skipped=["G", "H"], kappa=4)
    assert explanation.sentence.startswith(
        "3 reliable sources agree on this answer; 2 low-reliability sources say “Lyon”"
    )
    assert "1 answered “I don't know” (1 because its passages did not support the answer)" in explanation.sentence
    assert "2 sources were not consulted (G, H): 4 sources with an answer were found first" in explanation.sentence
    assert explanation.sentence.endswith("The answer rests on 4 passages.")
    assert (explanation.agree, explanation.disagree, explanation.idk, explanation.evidence) == (3, 2, 1, 4)


def test_tiers_and_a_lone_unrated_source() -> None:
    assert [reliability_tier(r) for r in (0.7, 0.69, 0.4, 0.39, None)] == [
        "reliable",
        "mid-reliability",
        "mid-reliability",
        "low-reliability",
        "unrated",
    ]
    sentence = explain_votes("Paris", [VoteFact("A", "Paris", None, True)]).sentence
    assert sentence == "1 unrated source gives this answer."
    assert explain_votes("Paris", [], evidence=3).sentence == (
        "This strategy did not ask the sources one by one. The answer rests on 3 passages."
    )


def test_the_highlight_prefers_the_sentence_with_the_answer_then_the_most_answer_words() -> None:
    text = "Lyon is large. The capital of France is Paris. It is old."
    assert highlight(text, "paris").sentence == "The capital of France is Paris."
    mark = highlight("Bram wrote it. Stoker was Irish, Bram Stoker too.", "Abraham Bram Stoker")
    assert mark.sentence == "Stoker was Irish, Bram Stoker too." and mark.before == "Bram wrote it. "
    assert highlight(text, "Berlin").sentence == ""


def _answered_with_citation(**extra: Any) -> tuple[Question, Any]:
    source = SourceFactory(name="Atlas", reliability=0.9)
    document = DocumentFactory(source=source, title="France", text="Lyon is large. The capital of France is Paris.")
    chunk = ChunkFactory(document=document, text="The capital of France is Paris.")
    question = QuestionFactory(
        answered=True, clusters=[{"id": 0, "label": "Paris", "members": [source.pk], "weight": 1.0}], **extra
    )
    passage = {
        "chunk_id": chunk.pk,
        "document_id": document.pk,
        "title": "France",
        "url": "",
        "text": chunk.text,
        "distance": 0.1,
    }
    VoteFactory(question=question, source=source, reliability=0.9, passages=[passage])
    VoteFactory(
        question=question, source=SourceFactory(name="Gazette"), reliability=0.2, response="Lyon", cluster=1, rank=1
    )
    return question, chunk


def test_the_panel_shows_the_sentence_and_keeps_the_low_evidence_warning(analyst_client: Any, db: Any) -> None:
    question, _ = _answered_with_citation(notes=["The sources behind it were never checked."])
    content = analyst_client.get(reverse("question-detail", args=[question.pk])).content.decode()
    assert "1 reliable source gives this answer; 1 low-reliability source says “Lyon”" in content
    assert 'id="low-evidence"' in content


# 3. Inline citations


def test_citations_link_the_answer_to_the_passage_with_its_sentence_marked(analyst_client: Any, db: Any) -> None:
    question, chunk = _answered_with_citation()
    content = analyst_client.get(reverse("question-detail", args=[question.pk])).content.decode()
    assert f'href="#cite-{question.pk}-1"' in content and f'id="cite-{question.pk}-1"' in content
    assert "<mark>The capital of France is Paris.</mark>" in content
    assert f"{reverse('document-detail', args=[chunk.document_id])}?chunk={chunk.pk}" in content
    assert f'href="#cite-{question.pk}-2"' not in content  # the Lyon vote is not cited


def test_evidence_strategies_cite_their_used_chunks(analyst_client: Any, db: Any) -> None:
    chunk = ChunkFactory(text="Dracula was written by Bram Stoker.")
    unused = ChunkFactory(text="Unrelated.")
    evidence = [
        {"chunk_id": c.pk, "source_id": c.source_id, "document_id": c.document_id, "distance": 0.1, "used": used}
        for c, used in ((chunk, True), (unused, False))
    ]
    question = QuestionFactory(answered=True, answer="Bram Stoker", evidence=evidence, strategy="vanilla-rag")
    content = analyst_client.get(reverse("question-detail", args=[question.pk])).content.decode()
    assert "<mark>Dracula was written by Bram Stoker.</mark>" in content and "Unrelated." not in content
    assert "The answer rests on 1 passage." in content


# 4. Document page and browser


def test_the_document_page_marks_the_cited_passage_and_escapes_the_text(analyst_client: Any, db: Any) -> None:
    document = DocumentFactory(title="Doc", text="<script>x()</script> Intro. The capital is Paris. End.")
    chunk = ChunkFactory(document=document, text="The capital is Paris.")
    content = analyst_client.get(reverse("document-detail", args=[document.pk]) + f"?chunk={chunk.pk}").content.decode()
    assert f'<mark id="chunk-{chunk.pk}" class="cited-passage">The capital is Paris.</mark>' in content
    assert "<script>x()" not in content and "&lt;script&gt;" in content
    # A passage id that does not parse is a 400 naming the parameter (it once showed the page unmarked).
    refused = analyst_client.get(reverse("document-detail", args=[document.pk]) + "?chunk=abc")
    assert refused.status_code == 400 and "chunk: Enter the number of a passage." in refused.content.decode()


def test_the_document_pages_are_for_analysts(client: Any, nobody_client: Any, db: Any) -> None:
    document = DocumentFactory()
    assert client.get(reverse("document-detail", args=[document.pk])).status_code == 302
    assert nobody_client.get(reverse("document-detail", args=[document.pk])).status_code == 403


def test_the_source_document_browser_searches_full_text(analyst_client: Any, db: Any) -> None:
    source = SourceFactory()
    DocumentFactory(source=source, title="Rivers", text="The Danube flows through Vienna.")
    DocumentFactory(source=source, title="Mountains", text="The Alps are high.")
    DocumentFactory(title="Elsewhere", text="Vienna flows too.")  # another source
    url = reverse("source-documents", args=[source.pk])
    assert "Rivers" in (page := analyst_client.get(url).content.decode()) and "Mountains" in page
    found = analyst_client.get(url, {"q": "vienna flowing"}).content.decode()  # stemmed, english config
    assert "Rivers" in found and "Mountains" not in found and "Elsewhere" not in found


# 5. Permalinks and CSV


def test_the_finished_panel_pushes_the_question_url(analyst_client: Any, db: Any) -> None:
    question, _ = _answered_with_citation()
    response = analyst_client.get(reverse("question-panel", args=[question.pk]), headers={"HX-Request": "true"})
    assert response.status_code == 286
    assert response["HX-Push-Url"] == reverse("question-detail", args=[question.pk])
    content = response.content.decode()
    assert 'id="permalink"' in content and 'id="copy-answer"' in content and "hidden" in content


def test_an_unfinished_panel_pushes_nothing(analyst_client: Any, db: Any) -> None:
    question = QuestionFactory()
    response = analyst_client.get(reverse("question-panel", args=[question.pk]), headers={"HX-Request": "true"})
    assert "HX-Push-Url" not in response


def test_votes_csv_has_a_header_and_defuses_formulas(analyst_client: Any, db: Any) -> None:
    question = QuestionFactory(answered=True)
    VoteFactory(question=question, source=SourceFactory(name="=HYPERLINK(1)"), response="+cmd", reliability=0.5)
    response = analyst_client.get(reverse("question-votes-csv", args=[question.pk]))
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0][:3] == ["rank", "source_id", "source"]
    assert rows[1][2] == "'=HYPERLINK(1)" and rows[1][4] == "'+cmd"


def test_run_scores_csv(analyst_client: Any, db: Any) -> None:
    run = EstimationRunFactory(succeeded=True)
    ReliabilityScoreFactory(run=run, source=SourceFactory(name="@evil"), reliability=0.8123456)
    rows = list(csv.reader(io.StringIO(analyst_client.get(reverse("run-scores-csv", args=[run.pk])).content.decode())))
    assert rows[0][:3] == ["source_id", "source", "reliability"]
    assert rows[1][1] == "'@evil" and rows[1][2] == "0.8123"


# 6. The question box


def test_the_question_box_is_focused_limited_and_counted(analyst_client: Any, db: Any) -> None:
    page = analyst_client.get(reverse("ask")).content.decode()
    box = page[page.index("<textarea") : page.index("</textarea>")]
    assert "autofocus" in box and 'maxlength="2000"' in box
    assert 'id="text-counter"' in page and 'src="/static/js/ask.js"' in page
    assert "<script>" not in page  # strict CSP: no inline scripts


def test_history_searches_text_and_groups_repeated_questions(analyst_client: Any, db: Any) -> None:
    first = QuestionFactory(text="Who wrote Dracula?", strategy="ra-rag")
    latest = QuestionFactory(text="  who wrote dracula? ", strategy="vanilla-rag")
    QuestionFactory(text="Where is Paris?")
    page = analyst_client.get(reverse("history")).content.decode()
    assert reverse("question-detail", args=[latest.pk]) in page
    assert reverse("question-detail", args=[first.pk]) not in page
    assert "×2" in page and "vanilla-rag" in page and "Where is Paris?" in page
    found = analyst_client.get(reverse("history"), {"q": "paris"}).content.decode()
    assert "Where is Paris?" in found and "Dracula" not in found
    # An answer finds its question too.
    QuestionFactory(text="Who sang it first?", answered=True, answer="Frankie Valli")
    by_answer = analyst_client.get(reverse("history"), {"q": "valli"}).content.decode()
    assert "Who sang it first?" in by_answer and "Paris" not in by_answer
    # Grouping follows the filters: with ra-rag only, the earlier asking is the one shown.
    only = analyst_client.get(reverse("history"), {"strategy": "ra-rag"}).content.decode()
    assert reverse("question-detail", args=[first.pk]) in only and "×2" not in only


def test_the_cluster_graph_details_are_reachable_without_hover(analyst_client: Any, db: Any) -> None:
    question, _ = _answered_with_citation()
    content = analyst_client.get(reverse("question-detail", args=[question.pk])).content.decode()
    details = content.split('<details class="graph-details">', 1)[1].split("</details>", 1)[0]
    assert "Graph details as text" in details
    assert "Paris" in details and "Atlas" in details and "Gazette" in details


def test_a_source_that_said_i_dont_know_shows_no_vote_weight(analyst_client: Any, db: Any) -> None:
    from tests.factories import QuestionFactory, SourceFactory, VoteFactory

    question = QuestionFactory(answered=True, answer="Paris", confidence=0.9)
    VoteFactory(question=question, source=SourceFactory(name="sure"), response="Paris", cluster=0, weight=1.7, rank=0)
    VoteFactory(
        question=question,
        source=SourceFactory(name="unsure"),
        response="I don't know",
        cluster=None,
        weight=2.3,
        rank=1,
    )
    page = analyst_client.get(reverse("question-panel", args=[question.pk])).content.decode()
    table = page[page.index('id="vote-table"') :]
    unsure = table[table.index(">unsure<") :].split("</tr>", 1)[0]
    assert "no vote" in unsure and "2.30" not in unsure
    assert "1.70" in table[table.index(">sure<") :].split("</tr>", 1)[0]


def test_asking_again_shows_what_changed_since_the_earlier_answer(analyst_client: Any, db: Any) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from core.models import Question
    from tests.factories import QuestionFactory

    before = QuestionFactory(
        text="Who sings Can't Take My Eyes Off You?", answered=True, answer="Love Me Tender", confidence=0.97
    )
    Question.objects.filter(pk=before.pk).update(created_at=timezone.now() - timedelta(days=1))
    now = QuestionFactory(
        text="who sings can't take my eyes off you? ", answered=True, answer="Frankie Valli", confidence=0.81
    )
    page = analyst_client.get(reverse("question-panel", args=[now.pk])).content.decode()
    note = page[page.index('id="earlier-answer"') :].split("</p>", 1)[0]
    assert f"#{before.pk}" in note and "Love Me Tender" in note and "0.97" in note
    assert "The answer has changed since" in note
    # The earlier question, asked first, has nothing before it.
    assert 'id="earlier-answer"' not in analyst_client.get(reverse("question-panel", args=[before.pk])).content.decode()

    # "Ask again" asks the same question with the same strategy.
    form = page[page.index('id="ask-again-form"') :].split("</form>", 1)[0]
    assert 'name="text" value="who sings can&#x27;t take my eyes off you? "' in form
    response = analyst_client.post(reverse("ask"), {"text": now.text, "strategy": now.strategy})
    again = Question.objects.latest("id")
    assert again.pk != now.pk and again.text == now.text.strip() and again.strategy == now.strategy
    assert response.status_code == 302 and response["Location"] == reverse("question-detail", args=[again.pk])


def test_an_answer_whose_sources_carry_no_weight_draws_no_full_share_bar(analyst_client: Any, db: Any) -> None:
    from tests.factories import QuestionFactory, SourceFactory, VoteFactory

    question = QuestionFactory(answered=True, answer="Love Me Tender", confidence=0.5)
    for name in ("farm", "trending"):  # two sources no better than chance, both behind one answer
        VoteFactory(question=question, source=SourceFactory(name=name), response="Love Me Tender", weight=0.0)
    page = analyst_client.get(reverse("question-panel", args=[question.pk])).content.decode()
    groups = page[page.index('class="table clusters') :].split("</table>", 1)[0]
    assert "no weight" in groups and 'class="bar"' not in groups
    body = analyst_client.get("/api/conflicts/", {"question": question.pk}).json()
    assert [c["share"] for c in body["clusters"]] == [None]

    weighty = QuestionFactory(answered=True, answer="Frankie Valli", confidence=0.9)
    VoteFactory(question=weighty, source=SourceFactory(name="desk"), response="Frankie Valli", weight=2.2)
    page = analyst_client.get(reverse("question-panel", args=[weighty.pk])).content.decode()
    assert 'aria-label="100%"' in page[page.index('class="table clusters') :].split("</table>", 1)[0]
