"""Feedback on answers through the API: analysts post it (one per user, question, kind and
source; again updates it), curators confirm or reject it, and a confirmed right answer is a
gold-checked query that an estimation run over the "Analyst feedback" set uses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from core.models import AnswerFeedback, EstimationRun, FactQuery, Question, ReliabilityScore
from core.services.feedback import FEEDBACK_QUERY_SET
from sources.models import Source
from tasks.jobs import wait_for_job
from tasks.models import Job
from tests.corpus import build_corpus
from tests.factories import QuestionFactory, SourceFactory, VoteFactory
from tests.helpers import error_of

URL = "/api/feedback/"


@dataclass
class Answered:
    question: Question
    forum: Source  # answered "Lyon" as the question did
    wiki: Source  # abstained


@pytest.fixture
def answered(db: None) -> Answered:
    """A question answered "Lyon" by two sources, one of which ("forum") also said it; "wiki" abstained."""
    question = QuestionFactory(answered=True, text="In which city is the Eiffel Tower?", answer="Lyon")
    forum, blog, wiki = (SourceFactory(name=n) for n in ("forum", "blog", "wiki"))
    VoteFactory(question=question, source=forum, rank=0, response="Lyon")
    VoteFactory(question=question, source=blog, rank=1, response="Lyon")
    VoteFactory(question=question, source=wiki, rank=2, response="I don't know", cluster=None, filtered=True)
    return Answered(question, forum, wiki)


def test_an_analyst_posts_feedback_and_posting_it_again_updates_it(as_analyst: Any, answered: Answered) -> None:
    created = as_analyst.post(URL, {"question": answered.question.pk, "kind": "answer_wrong"}, format="json")
    assert created.status_code == 201
    body = created.json()
    assert body["kind"] == "answer_wrong" and body["status"] == "pending" and body["answer"] == "Lyon"
    assert body["user"] == "alice" and body["source"] is None and body["gold_query"] is None
    assert body["known_wrong"] is False

    again = as_analyst.post(
        URL,
        {
            "question": answered.question.pk,
            "kind": "answer_wrong",
            "corrected_answer": "Paris",
            "comment": "On the Champ de Mars.",
        },
        format="json",
    )
    assert again.status_code == 200 and again.json()["id"] == body["id"]
    kept = as_analyst.post(URL, {"question": answered.question.pk, "kind": "answer_wrong"}, format="json").json()
    assert (kept["corrected_answer"], kept["comment"]) == ("Paris", "On the Champ de Mars.")
    assert AnswerFeedback.objects.count() == 1


def test_a_source_wrong_here_names_the_source(as_analyst: Any, answered: Answered) -> None:
    body = {
        "question": answered.question.pk,
        "kind": "source_wrong",
        "source": answered.forum.pk,
        "corrected_answer": "Paris",
    }
    response = as_analyst.post(URL, body, format="json")
    assert response.status_code == 201
    assert response.json()["source_name"] == "forum" and response.json()["answer"] == "Lyon"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"kind": "answer_wrong"}, "question"),
        ({"question": 10**20, "kind": "answer_wrong"}, "question"),
        ({"kind": "answer_great"}, "kind"),
        ({"kind": "answer_right", "corrected_answer": "Paris"}, "corrected_answer"),
        ({"kind": "answer_wrong", "corrected_answer": "lyon"}, "corrected_answer"),  # the answer called wrong
        ({"kind": "answer_wrong", "corrected_answer": "x" * 501}, "corrected_answer"),
        ({"kind": "answer_wrong", "comment": "nul\x00"}, "comment"),
        ({"kind": "source_wrong"}, "source"),
        ({"kind": "answer_wrong", "source": "FORUM"}, "source"),
        ({"kind": "answer_wrong", "score": 5}, "score"),  # unknown field
    ],
)
def test_bad_feedback_is_a_400_naming_the_field_and_stores_nothing(
    as_analyst: Any, answered: Answered, body: dict[str, Any], field: str
) -> None:
    body = {"question": answered.question.pk, **body} if field != "question" else body
    if body.get("source") == "FORUM":
        body["source"] = answered.forum.pk  # a source, but only source_wrong names one
    response = as_analyst.post(URL, body, format="json")
    assert response.status_code == 400, response.json()
    assert field in error_of(response)["fields"]
    assert not AnswerFeedback.objects.exists()


def test_feedback_on_an_unanswered_question_or_an_abstaining_source_is_refused(
    as_analyst: Any, answered: Answered
) -> None:
    pending = QuestionFactory(text="Not yet?")
    response = as_analyst.post(URL, {"question": pending.pk, "kind": "answer_wrong"}, format="json")
    assert response.status_code == 400 and "has no answer yet" in error_of(response)["fields"]["question"][0]
    silent = {"question": answered.question.pk, "kind": "source_wrong", "source": answered.wiki.pk}
    response = as_analyst.post(URL, silent, format="json")
    assert response.status_code == 400 and "I don't know" in error_of(response)["fields"]["source"][0]
    assert not AnswerFeedback.objects.exists()


def test_roles_analysts_see_their_own_feedback_curators_everyone_s_and_only_curators_review(
    as_analyst: Any, as_curator: Any, as_nobody: Any, anonymous: Any, answered: Answered
) -> None:
    assert (
        anonymous.post(URL, {"question": answered.question.pk, "kind": "answer_right"}, format="json").status_code
        == 401
    )
    assert (
        as_nobody.post(URL, {"question": answered.question.pk, "kind": "answer_right"}, format="json").status_code
        == 403
    )
    assert as_nobody.get(URL).status_code == 403
    mine = as_analyst.post(URL, {"question": answered.question.pk, "kind": "answer_right"}, format="json").json()
    theirs = as_curator.post(URL, {"question": answered.question.pk, "kind": "answer_wrong"}, format="json").json()
    assert [f["id"] for f in as_analyst.get(URL).json()["results"]] == [mine["id"]]
    assert as_analyst.get(f"{URL}{theirs['id']}/").status_code == 404
    assert {f["id"] for f in as_curator.get(URL).json()["results"]} == {mine["id"], theirs["id"]}
    assert [f["id"] for f in as_curator.get(URL, {"kind": "answer_right"}).json()["results"]] == [mine["id"]]
    assert as_analyst.post(f"{URL}{mine['id']}/confirm/").status_code == 403
    assert as_analyst.post(f"{URL}{mine['id']}/reject/").status_code == 403
    assert AnswerFeedback.objects.get(pk=mine["id"]).status == "pending"


def test_a_curator_confirms_a_corrected_answer_into_gold_refuses_a_contradiction_and_rejects(
    as_analyst: Any, as_curator: Any, answered: Answered
) -> None:
    wrong = {"question": answered.question.pk, "kind": "answer_wrong", "corrected_answer": "Paris"}
    feedback = as_analyst.post(URL, wrong, format="json").json()
    confirmed = as_curator.post(f"{URL}{feedback['id']}/confirm/", {}, format="json")
    assert confirmed.status_code == 200
    body = confirmed.json()
    assert body["status"] == "confirmed" and body["reviewed_by"] == "carol" and body["gold_answer"] == "Paris"
    query = FactQuery.objects.get(pk=body["gold_query"])
    assert (query.query_set.name, query.question, query.reference_answers) == (
        FEEDBACK_QUERY_SET,
        "In which city is the Eiffel Tower?",
        ["Paris"],
    )
    gold = as_analyst.get("/api/fact-queries/", {"query_set": query.query_set_id, "gold": "true"}).json()
    assert [q["id"] for q in gold["results"]] == [query.pk]

    right = as_curator.post(URL, {"question": answered.question.pk, "kind": "answer_right"}, format="json").json()
    conflict = as_curator.post(f"{URL}{right['id']}/confirm/")
    assert conflict.status_code == 409 and error_of(conflict)["code"] == "conflict"
    assert "contradict 'Lyon'" in error_of(conflict)["message"]
    assert AnswerFeedback.objects.get(pk=right["id"]).status == "pending"

    rejected = as_curator.post(f"{URL}{feedback['id']}/reject/").json()
    assert rejected["status"] == "rejected" and rejected["gold_query"] is None
    query.refresh_from_db()
    assert query.reference_answers == []


def test_a_wrong_answer_confirmed_without_the_right_one_is_a_known_wrong_answer(
    as_analyst: Any, as_curator: Any, answered: Answered
) -> None:
    feedback = as_analyst.post(URL, {"question": answered.question.pk, "kind": "answer_wrong"}, format="json").json()
    body = as_curator.post(f"{URL}{feedback['id']}/confirm/").json()
    assert body["status"] == "confirmed" and body["known_wrong"] is True and body["gold_query"] is None
    assert not FactQuery.objects.filter(query_set__name=FEEDBACK_QUERY_SET).exists()


# --- Estimation uses the confirmed gold -----------------------------------------------------


@pytest.mark.worker
@pytest.mark.slow
def test_an_estimation_run_over_the_feedback_set_is_anchored_by_the_confirmed_answers(
    worker: Any, embedder: Any, as_analyst: Any, as_curator: Any
) -> None:
    """Three sources hold the facts and one ("misinformer") a wrong twin of each. Analysts
    judge two answered questions; once a curator confirms, a run over the "Analyst feedback"
    set (started through the API, answered by the worker) checks every source against them."""
    good, bad, _ = build_corpus(embedder)
    france = QuestionFactory(answered=True, text="What is the capital of France?", answer="Lyon")
    for rank, source in enumerate([*good, bad]):
        VoteFactory(question=france, source=source, rank=rank, response="Lyon" if source == bad else "Paris")
    hamlet = QuestionFactory(answered=True, text="Who wrote Hamlet?", answer="William Shakespeare")
    given = [
        {"question": france.pk, "kind": "answer_wrong", "corrected_answer": "Paris"},
        {"question": france.pk, "kind": "source_wrong", "source": bad.pk, "corrected_answer": "Paris"},
        {"question": hamlet.pk, "kind": "answer_right"},
    ]
    ids = [as_analyst.post(URL, body, format="json").json()["id"] for body in given]
    for feedback_id in ids:
        assert as_curator.post(f"{URL}{feedback_id}/confirm/").status_code == 200
    feedback_set = FactQuery.objects.filter(query_set__name=FEEDBACK_QUERY_SET)
    assert dict(feedback_set.values_list("question", "reference_answers")) == {
        "What is the capital of France?": ["Paris"],
        "Who wrote Hamlet?": ["William Shakespeare"],
    }

    started = as_curator.post(
        "/api/estimation-runs/",
        {"query_set": feedback_set.first().query_set_id, "sources": "all", "params": {"estimator": "onecoin"}},  # type: ignore[union-attr]
        format="json",
    )
    assert started.status_code == 202, started.json()
    run = EstimationRun.objects.get(pk=started.json()["run"]["id"])
    assert run.job_id is not None
    job = wait_for_job(run.job_id, timeout=240)
    assert job.state == Job.State.SUCCEEDED, job.error
    run.refresh_from_db()
    assert sorted(run.gold_queries) == sorted(feedback_set.values_list("pk", flat=True))
    scores = {s.source.name: s for s in ReliabilityScore.objects.filter(run=run).select_related("source")}
    for source in good:
        assert (scores[source.name].gold_answers, scores[source.name].gold_agreements) == (2, 2)
    assert (scores["misinformer"].gold_answers, scores["misinformer"].gold_agreements) == (2, 0)
    assert scores["misinformer"].reliability < min(scores[s.name].reliability for s in good)
    detail = as_analyst.get(f"/api/estimation-runs/{run.pk}/").json()
    assert {s["source_name"]: s["gold_accuracy"] for s in detail["scores"]} == {
        "reliable-0": 1.0,
        "reliable-1": 1.0,
        "reliable-2": 1.0,
        "misinformer": 0.0,
    }
