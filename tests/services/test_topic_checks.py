"""A bloc that is the larger side on one topic only (issue 39), on the real database with the
real clustering and estimator: the run stores that topic's verdict and its checks beside the
overall one, the run page and the checks page name the topic, and a curator's check there
moves the topic's estimate to the honest sources."""

from __future__ import annotations

from typing import Any

from core.models import EstimationRun, FactQuery
from core.services.estimation import finish_run
from core.services.estimation.checks import identification_view, record_check
from tests.helpers import as_list
from tests.topic_bloc import PLACES, SOURCES, topic_bloc_run


def _capitals(run: EstimationRun, queries: dict[str, list[FactQuery]]) -> list[int]:
    """The proposed checks on the "capitals" queries, in the run's order."""
    mine = {q.pk for q in queries["capitals"]}
    return [q for q in run.identification["checks"] if q in mine]


def test_a_bloc_larger_on_one_topic_only_gets_checks_there_and_the_pages_name_the_topic(
    db: None, embedder: Any, analyst_client: Any, curator_client: Any
) -> None:
    run, queries = topic_bloc_run()
    # Overall, agreement settles the minority bloc; on "capitals" the estimate follows the bloc.
    assert run.identification["identified"] is True
    view = identification_view(run)
    assert view is not None
    topics = as_list(view["topics"])
    assert [t["name"] for t in topics] == ["capitals"]  # science and history repeat the overall verdict
    (capitals,) = topics
    assert {s["name"] for s in capitals["dissent_bloc"]} == {"source-6", "source-7", "source-8"}
    assert {s["name"] for s in capitals["estimate_side"]} == set(SOURCES[:6])
    # Its checks take turns with the overall verdict's: one comes second, not after the ten others.
    assert run.identification["checks"][1] in {q.pk for q in queries["capitals"]}
    labelled = {c["query_id"]: c["topics"] for c in as_list(view["checks"])}
    assert all(labelled[q] == ["capitals"] for q in _capitals(run, queries))
    science = [labelled[q.pk] for q in queries["science"] if q.pk in labelled]
    assert science and all(topics == [] for topics in science)  # the overall verdict's checks

    # The API serves the stored verdicts: the capitals topic with its checks, by id.
    served = analyst_client.get(f"/api/estimation-runs/{run.pk}/").json()["identification"]
    by_key = {t["key"]: t for t in served["topics"]}
    assert set(by_key["capitals"]["checks"]) == set(_capitals(run, queries)) and by_key["capitals"]["outnumbered"]
    assert served["checks"] == run.identification["checks"]

    page = analyst_client.get(f"/runs/{run.pk}/result/").content.decode()
    section = page[page.index('id="run-topic-identification"') :]
    section = section[: section.index("</section>")]
    assert "capitals" in section and "source-6" in section and "settled only by numbers" in section
    assert 'id="run-topic-checks-link"' not in section  # analysts read; curators check
    assert 'id="run-topic-checks-link"' in curator_client.get(f"/runs/{run.pk}/result/").content.decode()
    checks_page = curator_client.get(f"/runs/{run.pk}/checks/").content.decode()
    first = _capitals(run, queries)[0]
    card = checks_page[checks_page.index(f'id="check-{first}"') :]
    assert "settles the topic capitals" in card[: card.index("</section>")]


def test_checks_answered_on_the_topic_turn_its_estimate_to_the_honest_sources(db: None, embedder: Any) -> None:
    run, queries = topic_bloc_run()
    right = {q: r for q, r, _ in PLACES}
    answered: list[int] = []
    while (proposed := _capitals(run, queries)) and len(answered) < 3:
        query = proposed[0]
        record_check(run, query, right[FactQuery.objects.get(pk=query).question])
        answered.append(query)
        finish_run(run)  # what the re-estimate job does
        run.refresh_from_db()
    assert answered and set(answered) <= set(run.gold_queries)
    cells = {sid: {c["key"]: c["accuracy"] for c in rows} for sid, rows in run.topics["cells"].items()}
    ids = dict(run.sources.values_list("name", "id"))
    assert cells[str(ids["source-6"])]["capitals"] > cells[str(ids["source-0"])]["capitals"] + 0.3
    # The unchecked capitals queries now get the honest answer, and the topic is settled.
    unchecked = [q for q in queries["capitals"] if q.pk not in answered]
    got = dict(run.answers.filter(query__in=unchecked).values_list("query__question", "answer"))
    assert got == {q.question: right[q.question] for q in unchecked}
    view = identification_view(run)
    assert view is not None and "capitals" not in [t["name"] for t in as_list(view["topics"])]
