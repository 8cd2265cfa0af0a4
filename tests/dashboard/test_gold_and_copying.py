"""The pages show both accuracies (agreement-based and on gold), incremental updates in the
history, detected copier pairs and blocs with their shared false answers (the old heuristic
only for runs without copy detection, labelled as such), and a low-evidence warning."""

from __future__ import annotations

import re
from typing import Any

from django.urls import reverse

from core.models import EstimationRun, Question
from tests.factories import (
    EstimationRunFactory,
    QuestionFactory,
    ReliabilityScoreFactory,
    SourceDependenceFactory,
    SourceFactory,
)


def text_of(html: str, element_id: str) -> str:
    """The text of the element with this id: inline tags dropped, block ends as spaces, whitespace collapsed."""
    opening = html.index(f'id="{element_id}"')
    name = re.match(r"<(\w+)", html[html.rfind("<", 0, opening) :]).group(1)  # type: ignore[union-attr]
    start, end = html.index(">", opening) + 1, html.index(f"</{name}>", opening)
    text = re.sub(r"</(td|th|tr|li|p|h2|div)>", " ", html[start:end])
    return " ".join(re.sub(r"<[^>]+>", "", text).split())


# --- Both accuracies --------------------------------------------------------------------


def test_the_run_page_shows_each_source_s_agreement_and_its_accuracy_on_gold(analyst_client: Any, db: Any) -> None:
    wiki, blog = SourceFactory(name="wiki"), SourceFactory(name="blog")
    run = EstimationRunFactory(succeeded=True, sources=[wiki, blog], gold_queries=[11, 12, 13, 14])
    ReliabilityScoreFactory(
        run=run, source=wiki, reliability=0.8, answers=10, agreements=9, gold_answers=4, gold_agreements=3
    )
    ReliabilityScoreFactory(run=run, source=blog, reliability=0.3, answers=10, agreements=2)
    page = analyst_client.get(reverse("run-detail", args=[run.pk])).content.decode()
    table = text_of(page, "score-table")
    assert "Accuracy on gold" in table
    assert "wiki 0.80" in table and "9/10 0.75 (3/4)" in table
    assert "2/10 no gold" in table
    assert "4 gold-checked queries" in page


def test_the_source_page_lists_full_runs_and_updates_with_both_accuracies(analyst_client: Any, db: Any) -> None:
    wiki = SourceFactory(name="wiki")
    run = EstimationRunFactory(succeeded=True, sources=[wiki])
    ReliabilityScoreFactory(run=run, source=wiki, reliability=0.6, answers=10, agreements=6)
    update = EstimationRunFactory(succeeded=True, sources=[wiki], kind=EstimationRun.Kind.UPDATE, parent=run)
    ReliabilityScoreFactory(
        run=update, source=wiki, reliability=0.7, answers=10, agreements=7, gold_answers=2, gold_agreements=2
    )
    page = analyst_client.get(reverse("source-detail", args=[wiki.pk])).content.decode()
    history = text_of(page, "history-table")
    assert f"#{update.pk}" in history and f"update of #{run.pk}" in history and "7/10 1.00 (2/2)" in history
    assert "full" in history and "6/10 no gold" in history
    assert history.index(f"#{update.pk}") < history.index(f"#{run.pk} ")  # newest first
    assert text_of(page, "current-gold") == "1.00"


def test_the_run_page_of_an_update_names_its_parent_instead_of_a_matrix(analyst_client: Any, db: Any) -> None:
    wiki = SourceFactory(name="wiki")
    run = EstimationRunFactory(succeeded=True, sources=[wiki])
    update = EstimationRunFactory(
        succeeded=True, sources=[wiki], kind="update", parent=run, params={"update_queries": [5, 6]}
    )
    ReliabilityScoreFactory(run=update, source=wiki)
    page = analyst_client.get(reverse("run-detail", args=[update.pk])).content.decode()
    assert f"Incremental update of run #{run.pk}" in text_of(page, "update-note")
    assert "2 more queries" in text_of(page, "update-note")
    assert 'id="agreement-matrix"' not in page
    listing = analyst_client.get(reverse("run-list")).content.decode()
    assert f"update of #{run.pk}" in text_of(listing, "run-table")


def test_a_curator_can_start_a_run_from_agreement_only(curator_client: Any, db: Any, monkeypatch: Any) -> None:
    started: dict[str, Any] = {}
    run = EstimationRunFactory(succeeded=True)

    def fake_start(**kwargs: Any) -> EstimationRun:
        started.update(kwargs)
        return run

    monkeypatch.setattr("core.services.estimation.start_estimation_run", fake_start)
    form = curator_client.get(reverse("run-list")).content.decode()
    assert 'name="agreement_only"' in form and "(default)" in form
    curator_client.post(reverse("run-start"), {"sources": ["all"], "agreement_only": "on"})
    assert started["params"]["use_gold"] is False


# --- Copying and collusion --------------------------------------------------------------


def test_the_conflicts_page_names_a_detected_copier_pair_and_a_bloc_with_their_shared_false_answers(
    analyst_client: Any, db: Any
) -> None:
    names = ("farm", "trending", "spam-1", "spam-2", "spam-3", "wire")
    a, b, c, d, e, wire = (SourceFactory(name=n) for n in names)
    run = EstimationRunFactory(succeeded=True, sources=[a, b, c, d, e, wire], params={"estimator": "accucopy"})
    lyon = [{"query_id": 1, "query": "Capital of France?", "answer": "Lyon"}]
    SourceDependenceFactory(run=run, source_a=a, source_b=b, probability=0.98, examples=lyon)
    SourceDependenceFactory(run=run, source_a=c, source_b=d, probability=0.8)
    SourceDependenceFactory(run=run, source_a=d, source_b=e, probability=0.7)
    SourceDependenceFactory(run=run, source_a=a, source_b=wire, probability=0.2)  # below the threshold
    page = analyst_client.get(reverse("conflicts"), {"run": run.pk}).content.decode()
    copying = text_of(page, "copying")
    assert "Copying and collusion" in copying and "heuristic" not in copying
    assert "Copier pair: farm, trending" in copying
    assert "“Capital of France?” → both said Lyon" in copying
    assert "Bloc of 3 sources: spam-1, spam-2, spam-3" in copying
    assert "wire" not in copying


def test_the_conflicts_page_says_when_copy_detection_found_nothing(analyst_client: Any, db: Any) -> None:
    quiet = EstimationRunFactory(succeeded=True, params={"estimator": "accucopy"})  # reported no pair at all
    faint = EstimationRunFactory(succeeded=True, params={"estimator": "accucopy"})
    SourceDependenceFactory(run=faint, probability=0.1)
    for run in (quiet, faint):
        copying = text_of(analyst_client.get(reverse("conflicts"), {"run": run.pk}).content.decode(), "copying")
        assert "no copying or collusion detected" in copying and "heuristic" not in copying


def test_a_run_without_copy_detection_keeps_the_heuristic_groups_labelled_as_a_heuristic(
    analyst_client: Any, world: Any
) -> None:
    copying = text_of(analyst_client.get(reverse("conflicts")).content.decode(), "copying")
    assert "Possible colluding groups heuristic" in copying
    assert "does not detect copying" in copying and "Copier pair" not in copying


# --- Low evidence -----------------------------------------------------------------------


def panel(client: Any, question: Question) -> str:
    html: str = client.get(reverse("question-panel", args=[question.pk])).content.decode()
    return html


def test_the_answer_panel_warns_when_the_answer_rests_on_little_evidence(analyst_client: Any, db: Any) -> None:
    unlikely = QuestionFactory(answered=True, confidence=0.32)
    assert "Low evidence" in text_of(panel(analyst_client, unlikely), "low-evidence")
    assert "0.32, is 0.50 or less" in text_of(panel(analyst_client, unlikely), "low-evidence")
    note = "This answer rests on 1 source whose reliability has never been checked (wiki)."
    unchecked = QuestionFactory(answered=True, confidence=0.6, notes=[note])
    warning = text_of(panel(analyst_client, unchecked), "low-evidence")
    assert note in warning and "0.50 or less" not in warning
    # An even chance is no evidence either: 0.50 is flagged (two colluding sources at chance).
    even = text_of(panel(analyst_client, QuestionFactory(answered=True, confidence=0.5)), "low-evidence")
    assert "0.50, is 0.50 or less: it is no more likely right than wrong" in even
    assert 'id="low-evidence"' not in panel(analyst_client, QuestionFactory(answered=True, confidence=0.9))


def test_the_low_evidence_warning_sits_next_to_the_answer_before_the_citations(analyst_client: Any, db: Any) -> None:
    content = panel(analyst_client, QuestionFactory(answered=True, confidence=0.2))
    assert content.index('id="answer"') < content.index('id="low-evidence"') < content.index('id="permalink"')
