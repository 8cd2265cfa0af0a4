"""Issue 14, choosing the sources when asking (include, exclude, a saved group) and each
source's progress while an ask runs: the service, the ask form, the question panel, the API
and the admin, over the real database and the real offline models."""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.urls import reverse

from core.models import Question, SourceGroup
from core.services.asking import answer_question, ask_now, start_question
from core.services.source_selection import SourceChoice
from runtime.jobs import NullProgress
from sources.models import Source
from tasks.models import Job
from tasks.progress import JobProgress
from tests.corpus import build_corpus
from tests.factories import JobFactory, QuestionFactory, SourceFactory, UserFactory, VoteFactory
from tests.helpers import error_of


class RecordingProgress(NullProgress):
    """A Progress that keeps every batch of parts reported, in order."""

    def __init__(self) -> None:
        self.batches: list[dict[str, dict[str, Any]]] = []

    def report_parts(self, parts: Mapping[str, Mapping[str, Any]]) -> None:
        self.batches.append({k: dict(v) for k, v in parts.items()})


def voters(question: Question) -> set[str]:
    return {v.source.name for v in question.votes.select_related("source")}


def refused(**kwargs: Any) -> dict[str, list[str]]:
    """The fields a refused question names; nothing was stored."""
    with pytest.raises(ValidationError) as caught:
        start_question("What is the capital of France?", **kwargs)
    assert not Question.objects.exists() and not Job.objects.exists()
    return caught.value.message_dict


@pytest.fixture
def corpus(db: Any, embedder: Any) -> tuple[list[Source], Source]:
    good, bad, _ = build_corpus(embedder)
    return good, bad


# --- The service: what is asked, and what is stored ------------------------------------


def test_an_excluded_source_is_not_asked_and_the_question_records_the_exclusion(corpus: Any) -> None:
    good, bad = corpus
    question = ask_now(
        "What is the capital of France?", strategy="ra-rag-all", sources=SourceChoice.of(exclude=[bad.pk])
    )
    assert voters(question) == {s.name for s in good}
    assert question.answer == "Paris" and {c["label"] for c in question.clusters} == {"Paris"}
    stored = Question.objects.get(pk=question.pk).source_selection
    assert stored["exclude"] == [{"id": bad.pk, "name": "misinformer"}]
    assert stored["include"] == [] and stored["group"] is None
    assert [s["name"] for s in stored["allowed"]] == ["reliable-0", "reliable-1", "reliable-2"]


def test_included_sources_are_the_only_ones_asked(corpus: Any) -> None:
    good, bad = corpus
    question = ask_now(
        "What is the capital of France?", strategy="ra-rag-all", sources=SourceChoice.of(include=[bad.pk, good[0].pk])
    )
    assert voters(question) == {"misinformer", "reliable-0"}
    assert [s["name"] for s in question.source_selection["include"]] == ["misinformer", "reliable-0"]


def test_a_group_limits_the_question_to_its_sources_less_those_excluded(corpus: Any, analyst: Any) -> None:
    good, bad = corpus
    group = SourceGroup.objects.create(name="desk", shared=False, owner=analyst)
    group.sources.set([good[0], good[1], bad])
    question = ask_now(
        "Who wrote Hamlet?",
        strategy="ra-rag-all",
        sources=SourceChoice.of(group=group.pk, exclude=[bad.pk]),
        user=analyst,
    )
    assert voters(question) == {"reliable-0", "reliable-1"}
    assert question.source_selection["group"] == {"id": group.pk, "name": "desk"}
    assert question.answer == "William Shakespeare"


def test_a_pooled_strategy_reads_only_the_allowed_sources(corpus: Any) -> None:
    good, bad = corpus
    question = ask_now(
        "What is the capital of France?", strategy="vanilla-rag", sources=SourceChoice.of(include=[bad.pk])
    )
    assert question.evidence and {e["source_id"] for e in question.evidence} == {bad.pk}
    assert question.answer == "Lyon"  # the misinformer alone: pooled retrieval never saw the others
    everyone = ask_now("What is the capital of France?", strategy="vanilla-rag")
    assert {e["source_id"] for e in everyone.evidence} > {bad.pk}


def test_no_choice_means_every_active_source_and_an_empty_record(corpus: Any) -> None:
    question = ask_now("What is the capital of France?", strategy="ra-rag-all")
    assert question.source_selection == {}
    assert len(voters(question)) == 4


# --- The service: refusals, each naming its field --------------------------------------


def test_unknown_source_ids_are_refused_naming_each_list(corpus: Any) -> None:
    errors = refused(sources=SourceChoice.of(include=[999_999], exclude=[999_998, 999_997]))
    assert errors["include_sources"] == ["No source has the id 999999."]
    assert errors["exclude_sources"] == ["No source has the ids 999998, 999997."]


def test_an_inactive_source_cannot_be_included(corpus: Any) -> None:
    good, _ = corpus
    Source.objects.filter(pk=good[0].pk).update(active=False)
    errors = refused(sources=SourceChoice.of(include=[good[0].pk]))
    assert errors == {"include_sources": ["“reliable-0” is inactive: an inactive source is never asked."]}


def test_a_source_both_included_and_excluded_is_refused(corpus: Any) -> None:
    good, _ = corpus
    errors = refused(sources=SourceChoice.of(include=[good[0].pk, good[1].pk], exclude=[good[1].pk]))
    assert errors == {"exclude_sources": ["“reliable-1” cannot be both included and excluded."]}


def test_excluding_every_source_is_refused(corpus: Any) -> None:
    good, bad = corpus
    errors = refused(sources=SourceChoice.of(exclude=[s.pk for s in [*good, bad]]))
    assert errors == {"exclude_sources": ["This choice leaves no active source to ask."]}


def test_fewer_sources_with_documents_than_the_strategy_needs_is_refused(corpus: Any) -> None:
    empty = SourceFactory(name="empty-shelf")
    errors = refused(strategy="ra-rag", sources=SourceChoice.of(include=[empty.pk]))
    assert errors == {
        "include_sources": ["ra-rag needs at least 1 source holding documents; none of the chosen sources does."]
    }


def test_another_analysts_private_group_and_an_unknown_group_are_refused(corpus: Any, analyst: Any) -> None:
    good, _ = corpus
    private = SourceGroup.objects.create(name="mine", shared=False, owner=UserFactory(username="bob"))
    private.sources.set(good)
    for group in (private.pk, 424242):
        errors = refused(sources=SourceChoice.of(group=group), user=analyst)
        assert errors == {"source_group": [f"No source group with the id {group} is open to you."]}


def test_a_group_without_active_sources_is_refused(corpus: Any) -> None:
    good, _ = corpus
    group = SourceGroup.objects.create(name="retired")
    group.sources.set([good[0]])
    Source.objects.filter(pk=good[0].pk).update(active=False)
    assert refused(sources=SourceChoice.of(group=group.pk)) == {
        "source_group": ["The group “retired” holds no active source."]
    }


def test_a_strategy_that_reads_no_sources_refuses_a_choice_of_sources(corpus: Any) -> None:
    good, _ = corpus
    errors = refused(strategy="vanilla-llm", sources=SourceChoice.of(exclude=[good[0].pk]))
    assert "strategy" in errors  # and the offline reader cannot run it at all
    assert errors["exclude_sources"] == [
        "vanilla-llm answers without reading the sources: a choice of sources does not apply to it."
    ]


def test_the_ask_command_takes_the_same_choice(corpus: Any) -> None:
    good, bad = corpus
    out = io.StringIO()
    call_command("ask", "Who wrote Hamlet?", "--strategy", "ra-rag-all", "--exclude", str(bad.pk), "--json", stdout=out)
    data = json.loads(out.getvalue())
    assert {v["source"] for v in data["votes"]} == {s.name for s in good}
    assert data["source_selection"]["exclude"] == [{"id": bad.pk, "name": "misinformer"}]
    with pytest.raises(CommandError, match="include_sources: No source has the id 999999."):
        call_command("ask", "Who wrote Hamlet?", "--include", "999999")


# --- Each source's progress ------------------------------------------------------------


def test_each_source_is_reported_waiting_then_asked_then_with_its_answer(corpus: Any) -> None:
    progress = RecordingProgress()
    ask_now("What is the capital of France?", strategy="ra-rag-all", progress=progress)
    first, asking, answered = progress.batches[:3]
    assert [p["label"] for p in sorted(first.values(), key=lambda p: p["n"])] == [
        "reliable-0",
        "reliable-1",
        "reliable-2",
        "misinformer",
    ]
    assert {p["state"] for p in first.values()} == {"waiting"}
    assert {p["state"] for p in asking.values()} == {"asking"} and len(asking) == 4
    by_name = {p["label"]: p for p in answered.values()}
    assert by_name["reliable-0"]["state"] == "answered" and by_name["reliable-0"]["detail"] == "Paris"
    assert by_name["misinformer"]["detail"] == "Lyon"
    assert by_name["misinformer"]["n"] == 3  # numbered in the order first reported


def test_kappa_rrss_reports_the_sources_it_never_reached_as_skipped(corpus: Any) -> None:
    progress = RecordingProgress()
    question = ask_now("Who wrote Hamlet?", strategy="ra-rag", kappa=2, progress=progress)
    final: dict[str, dict[str, Any]] = {}
    for batch in progress.batches:
        final.update(batch)
    asked = {v.source_id for v in question.votes.all()}
    assert {p["source_id"] for p in final.values() if p["state"] == "skipped"} == {
        s.pk for s in Source.objects.all() if s.pk not in asked
    }
    assert {p["state"] for p in final.values() if p["source_id"] in asked} <= {"answered", "abstained", "filtered"}


def test_the_job_record_keeps_each_sources_latest_state(corpus: Any) -> None:
    _, bad = corpus
    question = start_question(
        "What is the capital of France?", strategy="ra-rag-all", sources=SourceChoice.of(exclude=[bad.pk])
    )
    job = question.job
    assert job is not None, "the question was queued"
    JobProgress(job.pk).start(message="Started")
    answer_question(question, JobProgress(job.pk))
    job.refresh_from_db()
    assert set(job.parts) == {f"source-{v.source_id}" for v in question.votes.all()}
    assert {(p["label"], p["state"], p["detail"]) for p in job.parts.values()} == {
        ("reliable-0", "answered", "Paris"),
        ("reliable-1", "answered", "Paris"),
        ("reliable-2", "answered", "Paris"),
    }


def test_parts_merge_while_a_job_runs_and_stop_once_it_has_ended(db: Any) -> None:
    job = JobFactory(kind=Job.Kind.ASK, state=Job.State.RUNNING)
    progress = JobProgress(job.pk)
    progress.report_parts({"source-1": {"n": 0, "label": "A", "state": "waiting", "detail": ""}})
    progress.report_parts({"source-2": {"n": 1, "label": "B", "state": "asking", "detail": ""}})
    progress.report_parts({"source-1": {"n": 0, "label": "A", "state": "answered", "detail": "Paris"}})
    job.refresh_from_db()
    assert job.parts == {
        "source-1": {"n": 0, "label": "A", "state": "answered", "detail": "Paris"},
        "source-2": {"n": 1, "label": "B", "state": "asking", "detail": ""},
    }
    Job.objects.filter(pk=job.pk).update(state=Job.State.FAILED)
    progress.report_parts({"source-2": {"n": 1, "label": "B", "state": "answered", "detail": "Lyon"}})
    job.refresh_from_db()
    assert job.parts["source-2"]["state"] == "asking"


# --- The question panel ------------------------------------------------------------------


def test_the_running_panel_lists_each_sources_progress_in_order(analyst_client: Any, db: Any) -> None:
    job = JobFactory(
        kind=Job.Kind.ASK,
        state=Job.State.RUNNING,
        parts={
            "source-7": {"n": 1, "label": "Vendor feed", "state": "waiting", "detail": ""},
            "source-3": {"n": 0, "label": "Reference Desk", "state": "answered", "detail": "Bram Stoker"},
            "source-9": {"n": 2, "label": "Rumour mill", "state": "filtered", "detail": "I don't know"},
        },
    )
    question = QuestionFactory(text="Who wrote Dracula?", job=job)
    response = analyst_client.get(reverse("question-panel", args=[question.pk]))
    assert response.status_code == 200  # still polling
    content = response.content.decode()
    items = content[content.index('id="source-progress"') :]
    assert items.index("Reference Desk") < items.index("Vendor feed") < items.index("Rumour mill")
    assert "<strong>Reference Desk</strong>: answered “Bram Stoker”" in content
    assert "<strong>Vendor feed</strong>: waiting" in content
    assert "counted as “I don&#x27;t know”" in content


def test_the_question_page_says_which_sources_were_included_and_excluded(analyst_client: Any, db: Any) -> None:
    newsroom = SourceGroup.objects.create(name="Newsroom")  # shared: every analyst may see it
    question = QuestionFactory(
        answered=True,
        source_selection={
            "include": [],
            "exclude": [{"id": 5, "name": "Rumour mill"}],
            "group": {"id": newsroom.pk, "name": "Newsroom"},
            "allowed": [{"id": 3, "name": "Reference Desk"}, {"id": 4, "name": "Vendor feed"}],
        },
    )
    VoteFactory(question=question, source=SourceFactory(name="Reference Desk"))
    content = analyst_client.get(reverse("question-detail", args=[question.pk])).content.decode()
    assert "The sources of the group “Newsroom”" in content
    assert '<span id="allowed-sources">Reference Desk, Vendor feed</span>' in content
    assert '<span class="excluded-source">Rumour mill</span>' in content
    plain = QuestionFactory(answered=True)
    assert (
        'id="source-selection"' not in analyst_client.get(reverse("question-detail", args=[plain.pk])).content.decode()
    )


# --- The ask form ---------------------------------------------------------------------------


def test_the_ask_form_offers_active_sources_and_the_groups_open_to_the_user(
    analyst_client: Any, analyst: Any, db: Any
) -> None:
    desk = SourceFactory(name="Reference Desk", reliability=0.9)
    feed = SourceFactory(name="Vendor feed", reliability=0.4)
    SourceFactory(name="Retired", active=False)
    SourceGroup.objects.create(name="Shared desk").sources.set([desk])
    SourceGroup.objects.create(name="My feeds", shared=False, owner=analyst).sources.set([feed, desk])
    SourceGroup.objects.create(name="Bob's", shared=False, owner=UserFactory(username="bob"))
    page = analyst_client.get(reverse("ask")).content.decode()
    section = page[page.index('id="sources-section"') : page.index("</details>", page.index('id="sources-section"'))]
    assert " open" not in section[: section.index(">")]  # closed until a choice is made
    assert section.index("Reference Desk") < section.index("Vendor feed")  # most reliable first
    assert f'value="{desk.pk}"' in section and "Retired" not in section
    assert "Shared desk (1 source)" in section and "My feeds (2 sources)" in section and "Bob" not in section


def test_the_form_asks_with_the_ticked_sources_left_out(analyst_client: Any, corpus: Any) -> None:
    good, bad = corpus
    response = analyst_client.post(
        reverse("ask"),
        {"text": "Who wrote Hamlet?", "strategy": "ra-rag", "sources_mode": "exclude", "sources": [bad.pk]},
    )
    question = Question.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("question-detail", args=[question.pk])
    assert question.source_selection["exclude"] == [{"id": bad.pk, "name": "misinformer"}]


def test_the_form_asks_a_group_plus_the_ticked_sources(analyst_client: Any, corpus: Any) -> None:
    good, bad = corpus
    group = SourceGroup.objects.create(name="pair")
    group.sources.set([good[0], good[1]])
    analyst_client.post(
        reverse("ask"),
        {"text": "Who?", "sources_mode": "include", "sources": [bad.pk], "source_group": str(group.pk)},
        headers={"HX-Request": "true"},
    )
    stored = Question.objects.get().source_selection
    assert {s["name"] for s in stored["allowed"]} == {"reliable-0", "reliable-1", "misinformer"}


def test_the_form_refuses_only_with_nothing_ticked_and_keeps_the_section_open(analyst_client: Any, corpus: Any) -> None:
    response = analyst_client.post(reverse("ask"), {"text": "Who?", "sources_mode": "include"})
    assert response.status_code == 400 and not Question.objects.exists()
    content = response.content.decode()
    assert '<details class="ask-sources" id="sources-section" open>' in content
    assert "Tick at least one source to ask only those" in content
    assert 'value="include" id="sources-mode-include" checked' in content


def test_the_form_shows_the_services_refusal_in_the_sources_section(analyst_client: Any, corpus: Any) -> None:
    good, bad = corpus
    every = [str(s.pk) for s in [*good, bad]]
    response = analyst_client.post(reverse("ask"), {"text": "Who?", "sources_mode": "exclude", "sources": every})
    assert response.status_code == 400 and not Question.objects.exists()
    content = response.content.decode()
    section = content[content.index('id="sources-section"') :]
    assert "This choice leaves no active source to ask." in section[: section.index("</details>")]
    assert all(f'value="{pk}" checked' in content for pk in every)  # the ticks are kept


def test_a_non_numeric_source_or_group_is_refused_by_the_form(analyst_client: Any, corpus: Any) -> None:
    response = analyst_client.post(
        reverse("ask"),
        {"text": "Who?", "sources_mode": "exclude", "sources": ["x1"], "source_group": "desk"},
        headers={"HX-Request": "true"},
    )
    content = response.content.decode()
    assert "The question was not sent" in content and "Not a source" in content and "source_group" in content
    assert not Question.objects.exists()


# --- The API ---------------------------------------------------------------------------------


def test_the_api_asks_with_sources_excluded_and_shows_the_selection(as_analyst: Any, corpus: Any) -> None:
    _, bad = corpus
    response = as_analyst.post("/api/questions/", {"text": "Who?", "exclude_sources": [bad.pk]}, format="json")
    assert response.status_code == 202, response.content
    selection = response.json()["question"]["source_selection"]
    assert selection["exclude"] == [{"id": bad.pk, "name": "misinformer"}] and selection["group"] is None
    assert len(selection["allowed"]) == 3
    detail = as_analyst.get(response.json()["result_url"]).json()
    assert detail["source_selection"] == selection
    job = as_analyst.get(response.json()["status_url"]).json()
    assert job["parts"] == {}  # not started yet: no worker in this test


def test_the_api_names_each_bad_source_field(as_analyst: Any, corpus: Any) -> None:
    good, _ = corpus
    response = as_analyst.post(
        "/api/questions/",
        {"text": "Who?", "include_sources": [999_999], "source_group": 5, "exclude_sources": ["x"]},
        format="json",
    )
    assert response.status_code == 400
    assert set(error_of(response)["fields"]) == {"exclude_sources.0"}  # the serializer's check comes first
    response = as_analyst.post(
        "/api/questions/", {"text": "Who?", "include_sources": [999_999], "source_group": 5}, format="json"
    )
    assert response.status_code == 400
    assert error_of(response)["fields"] == {
        "include_sources": ["No source has the id 999999."],
        "source_group": ["No source group with the id 5 is open to you."],
    }
    assert not Question.objects.exists()


def test_an_answer_without_a_choice_shows_an_empty_selection(as_analyst: Any, db: Any) -> None:
    question = QuestionFactory(answered=True)
    assert as_analyst.get(f"/api/questions/{question.pk}/").json()["source_selection"] == {}


def test_the_api_lists_the_source_groups_open_to_the_user(as_analyst: Any, analyst: Any, db: Any) -> None:
    desk = SourceFactory(name="Reference Desk")
    SourceGroup.objects.create(name="Shared desk").sources.set([desk])
    SourceGroup.objects.create(name="Mine", shared=False, owner=analyst)
    hidden = SourceGroup.objects.create(name="Bob's", shared=False, owner=UserFactory(username="bob"))
    body = as_analyst.get("/api/source-groups/").json()
    assert [g["name"] for g in body["results"]] == ["Mine", "Shared desk"]
    shared = body["results"][1]
    assert shared["sources"] == [{"id": desk.pk, "name": "Reference Desk", "active": True}] and shared["owner"] is None
    assert as_analyst.get(f"/api/source-groups/{hidden.pk}/").status_code == 404


# --- The admin -----------------------------------------------------------------------------


def test_curators_edit_source_groups_in_the_admin(admin_client: Any, admin_user: Any, db: Any) -> None:
    desk = SourceFactory(name="Reference Desk")
    feed = SourceFactory(name="Vendor feed")
    add = admin_client.get("/admin/core/sourcegroup/add/")
    assert add.status_code == 200 and "Reference Desk" in add.content.decode()
    response = admin_client.post(
        "/admin/core/sourcegroup/add/",
        {
            "name": "Desk and feed",
            "description": "",
            "sources": [desk.pk, feed.pk],
            "owner": admin_user.pk,
            "shared": "on",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    group = SourceGroup.objects.get()
    assert set(group.sources.all()) == {desk, feed} and group.owner == admin_user and group.shared
    listing = admin_client.get("/admin/core/sourcegroup/").content.decode()
    assert "Desk and feed" in listing
