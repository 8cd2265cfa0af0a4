"""Follow-up questions on the pages: the box under an answer, the follow-up's page with the
conversation and the rewritten question, with htmx and without, and clear errors."""

from __future__ import annotations

import re
from typing import Any

from django.urls import reverse

from core.models import Question
from tasks.models import Job
from tests.factories import JobFactory, QuestionFactory

EARLIER = "Who wrote the novel Dracula?"


def answered(text: str = EARLIER, answer: str = "Bram Stoker", **kwargs: Any) -> Question:
    job = JobFactory(kind=Job.Kind.ASK, state=Job.State.SUCCEEDED)
    return QuestionFactory(answered=True, text=text, answer=answer, job=job, params={"kappa": 3}, **kwargs)


def test_an_answered_question_offers_a_follow_up_box_with_its_strategy(analyst_client: Any, db: Any) -> None:
    earlier = answered()
    page = analyst_client.get(reverse("question-detail", args=[earlier.pk])).content.decode()
    assert 'id="follow-up-form"' in page and "Ask a follow-up" in page
    assert f'<input type="hidden" name="follows" value="{earlier.pk}">' in page
    assert '<input type="hidden" name="strategy" value="ra-rag">' in page
    assert '<input type="hidden" name="kappa" value="3">' in page
    assert 'name="sources_mode"' not in page  # asked of every active source, as the first was
    assert 'id="conversation"' not in page  # a first question has no earlier turn


def test_a_question_not_yet_answered_or_failed_offers_none(analyst_client: Any, db: Any) -> None:
    pending = QuestionFactory(text="Who?", job=JobFactory(kind=Job.Kind.ASK, state=Job.State.PENDING))
    failed = QuestionFactory(text="Why?", job=JobFactory(kind=Job.Kind.ASK, state=Job.State.FAILED, error="boom"))
    for question in (pending, failed):
        page = analyst_client.get(reverse("question-detail", args=[question.pk])).content.decode()
        assert 'id="follow-up-form"' not in page


def test_without_javascript_a_follow_up_opens_its_page_with_the_conversation(analyst_client: Any, db: Any) -> None:
    earlier = answered()
    response = analyst_client.post(
        reverse("ask"), {"text": "When was he born?", "follows": str(earlier.pk), "strategy": "ra-rag", "kappa": "3"}
    )
    follow_up = Question.objects.exclude(pk=earlier.pk).get()
    assert response.status_code == 302 and response["Location"] == reverse("question-detail", args=[follow_up.pk])
    assert follow_up.follows == earlier and follow_up.standalone == "When was Bram Stoker born?"
    assert follow_up.params == {"kappa": 3}

    page = analyst_client.get(response["Location"]).content.decode()
    conversation = page[page.index('id="conversation"') : page.index('id="question-panel"')]
    assert EARLIER in conversation and "Bram Stoker" in conversation
    assert f'href="{reverse("question-detail", args=[earlier.pk])}"' in conversation
    assert (
        '<p class="asked-as" id="asked-as"><span class="muted">Asked as:</span> When was Bram Stoker born?</p>' in page
    )
    assert page.index(EARLIER) < page.index('<h2 class="question-text">When was he born?</h2>')


def test_with_htmx_the_follow_up_replaces_the_conversation_and_pushes_its_address(analyst_client: Any, db: Any) -> None:
    earlier = answered()
    response = analyst_client.post(
        reverse("ask"),
        {"text": "When was it published?", "follows": str(earlier.pk), "strategy": "ra-rag"},
        headers={"HX-Request": "true"},
    )
    follow_up = Question.objects.exclude(pk=earlier.pk).get()
    assert response.status_code == 200
    assert response["HX-Push-Url"] == reverse("question-detail", args=[follow_up.pk])
    content = response.content.decode()
    assert content.index('id="conversation"') < content.index('id="question-panel"')
    assert f'hx-get="{reverse("question-panel", args=[follow_up.pk])}"' in content  # it polls for the answer
    assert "Asked as:</span> When was Dracula published?" in content
    assert "<h1>" not in content  # on the ask page, under its own heading

    # Asked from the earlier question's page, it becomes the follow-up's page, heading and all.
    response = analyst_client.post(
        reverse("ask"),
        {"text": "Where was he born?", "follows": str(earlier.pk), "strategy": "ra-rag"},
        headers={
            "HX-Request": "true",
            "HX-Current-URL": "http://testserver" + reverse("question-detail", args=[earlier.pk]),
        },
    )
    third = Question.objects.latest("id")
    content = response.content.decode()
    assert content.index(f"<h1>Question #{third.pk}</h1>") < content.index('id="conversation"')
    assert "Asked as:</span> Where was Bram Stoker born?" in content


def test_the_follow_up_box_targets_the_page_conversation_and_keeps_the_source_choice(
    analyst_client: Any, db: Any
) -> None:
    from tests.factories import SourceFactory

    left_out = SourceFactory(name="rumours")
    earlier = answered(source_selection={"include": [], "exclude": [{"id": left_out.pk, "name": "rumours"}]})
    page = analyst_client.get(reverse("question-detail", args=[earlier.pk])).content.decode()
    form = page[page.index('id="follow-up-form"') :]
    assert 'hx-target="closest .conversation-host"' in page and 'class="conversation-host"' in page
    assert '<input type="hidden" name="sources_mode" value="exclude">' in form
    assert f'<input type="hidden" name="sources" value="{left_out.pk}">' in form


def test_a_question_asked_with_sources_included_and_excluded_keeps_both_in_its_follow_up(
    analyst_client: Any, db: Any
) -> None:
    from core.models import SourceGroup
    from tests.factories import SourceFactory

    almanac, gazette, rumours, blog = (
        SourceFactory(name=name, chunk_count=3) for name in ("almanac", "gazette", "rumours", "blog")
    )
    group = SourceGroup.objects.create(name="desk", shared=True)
    group.sources.set([almanac, rumours])
    earlier = answered(  # the API allows a group, "only these" and "never these" in one question
        source_selection={
            "group": {"id": group.pk, "name": "desk"},
            "include": [{"id": gazette.pk, "name": "gazette"}],
            "exclude": [{"id": rumours.pk, "name": "rumours"}],
        }
    )
    page = analyst_client.get(reverse("question-detail", args=[earlier.pk])).content.decode()
    form = page[page.index('id="follow-up-form"') : page.index("</form>", page.index('id="follow-up-form"'))]
    names = "sources_mode|sources|also_exclude|source_group"
    fields = re.findall(rf'<input type="hidden" name="({names})" value="([^"]+)">', form)
    assert sorted(fields) == sorted(
        [
            ("sources_mode", "include"),
            ("sources", str(gazette.pk)),
            ("also_exclude", str(rumours.pk)),
            ("source_group", str(group.pk)),
        ]
    )

    def follow_up(extra: list[tuple[str, str]]) -> Question:
        data: dict[str, Any] = {"text": "When was it published?", "follows": str(earlier.pk), "strategy": "ra-rag"}
        for name, value in [*fields, *extra]:
            data.setdefault(name, []).append(value)
        response = analyst_client.post(reverse("ask"), data)
        assert response.status_code == 302, response.content.decode()[-3000:]
        return Question.objects.latest("id")

    # The group's sources and the one included, less the one excluded: as the first question asked.
    asked = follow_up([])
    assert {s["id"] for s in asked.source_selection["allowed"]} == {almanac.pk, gazette.pk}
    assert [s["id"] for s in asked.source_selection["exclude"]] == [rumours.pk]
    # A source deleted since is dropped from the exclusions rather than refusing the follow-up.
    gone = SourceFactory(name="gone")
    gone_pk = gone.pk
    gone.delete()
    asked = follow_up([("also_exclude", str(gone_pk))])
    assert [s["id"] for s in asked.source_selection["exclude"]] == [rumours.pk]
    assert blog.pk not in {s["id"] for s in asked.source_selection["allowed"]}


def test_also_exclude_means_nothing_outside_a_follow_up(analyst_client: Any, db: Any) -> None:
    from tests.factories import SourceFactory

    SourceFactory(name="almanac", chunk_count=3)
    other = SourceFactory(name="gazette", chunk_count=3)
    response = analyst_client.post(
        reverse("ask"),
        {"text": "Who wrote Dracula?", "strategy": "ra-rag", "also_exclude": [str(other.pk)]},
    )
    assert response.status_code == 302
    assert not Question.objects.latest("id").source_selection  # every active source, as the visible form says


def test_a_question_that_asked_another_analysts_private_group_says_why_it_offers_no_follow_up(
    analyst_client: Any, db: Any
) -> None:
    from core.models import SourceGroup
    from tests.factories import SourceFactory, UserFactory

    owner = UserFactory(username="bob")
    group = SourceGroup.objects.create(name="bob's desk", shared=False, owner=owner)
    group.sources.set([SourceFactory(name="almanac")])
    earlier = answered(
        asked_by=owner, source_selection={"include": [], "exclude": [], "group": {"id": group.pk, "name": group.name}}
    )
    page = analyst_client.get(reverse("question-detail", args=[earlier.pk])).content.decode()
    assert 'id="follow-up-form"' not in page
    assert 'id="no-follow-up"' in page and "another analyst's private group" in page
    assert "bob&#x27;s desk" not in page and "bob's desk" not in page  # the group's name stays private


def test_htmx_errors_go_under_the_follow_up_box(analyst_client: Any, db: Any) -> None:
    earlier = answered()
    response = analyst_client.post(
        reverse("ask"),
        {"text": "   ", "follows": str(earlier.pk), "strategy": "ra-rag"},
        headers={"HX-Request": "true"},
    )
    assert response["HX-Retarget"] == "#follow-up-errors" and response["HX-Reswap"] == "innerHTML"
    assert b"The question was not sent" in response.content
    assert Question.objects.count() == 1


def test_without_javascript_errors_show_the_earlier_page_again_with_the_text(analyst_client: Any, db: Any) -> None:
    earlier = answered()
    response = analyst_client.post(
        reverse("ask"), {"text": "x" * 2001, "follows": str(earlier.pk), "strategy": "ra-rag"}
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert f"Question #{earlier.pk}" in page and 'id="follow-up-form"' in page
    assert "at most 2000 are allowed" in page and "x" * 2001 in page


def test_following_an_unknown_question_names_the_field(analyst_client: Any, db: Any) -> None:
    response = analyst_client.post(reverse("ask"), {"text": "When was he born?", "follows": "99999"})
    assert response.status_code == 400
    assert "There is no question #99999 to follow up." in response.content.decode()
    assert 'id="follows-error"' in response.content.decode()
    assert not Question.objects.exists()


def test_earlier_turns_are_escaped(analyst_client: Any, db: Any) -> None:
    earlier = answered(text="<b>Who</b> wrote it?", answer="<script>alert(1)</script>")
    follow_up = QuestionFactory(text="And then?", follows=earlier, standalone="<i>rewritten</i>")
    page = analyst_client.get(reverse("question-detail", args=[follow_up.pk])).content.decode()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<b>Who</b>" not in page and "&lt;i&gt;rewritten&lt;/i&gt;" in page


def test_follow_ups_are_the_same_question_only_when_asked_as_the_same(analyst_client: Any, db: Any) -> None:
    dracula = answered()
    hamlet = answered(text="Who wrote Hamlet?", answer="William Shakespeare")
    plain = answered(text="When was Bram Stoker born?", answer="1847")
    one = answered(text="When was he born?", answer="1847", follows=dracula, standalone="When was Bram Stoker born?")
    two = answered(
        text="When was he born?", answer="1564", follows=hamlet, standalone="When was William Shakespeare born?"
    )
    # The second "When was he born?" is about someone else: no "asked before", no changed answer.
    page = analyst_client.get(reverse("question-detail", args=[two.pk])).content.decode()
    assert 'id="earlier-answer"' not in page
    # The first was asked as a question asked plainly before it: that earlier answer is shown.
    page = analyst_client.get(reverse("question-detail", args=[one.pk])).content.decode()
    assert 'id="earlier-answer"' in page and f'href="{reverse("question-detail", args=[plain.pk])}"' in page
    assert "Same answer." in page
    # The history groups the two Bram Stoker questions, never the two "When was he born?".
    history = analyst_client.get(reverse("history")).content.decode()
    assert history.count("When was he born?") == 2  # one row per person asked about
    rows = [row for row in history.split("<tr") if "question-detail" in row or "/questions/" in row]
    stoker = [row for row in rows if f"/questions/{one.pk}/" in row]
    assert len(stoker) == 1 and "×2" in stoker[0]
    assert not any(f"/questions/{plain.pk}/" in row for row in rows)  # grouped under its latest asking
    assert any(f"/questions/{two.pk}/" in row and "×2" not in row for row in rows)


def test_the_same_question_lookups_use_the_asked_as_index(db: Any) -> None:
    from django.db import connection

    from core.models import asked_as_norm

    # Without the model's default ordering: otherwise the planner may walk the created_at index
    # backwards and filter, a plan that depends on table statistics rather than on the index existing.
    query = (
        Question.objects.annotate(norm=asked_as_norm())
        .filter(norm="when was bram stoker born?")
        .order_by()
        .values("id")
    )
    sql, params = query.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "question_norm_asked_as" in plan, plan


def test_the_history_shows_and_searches_how_a_follow_up_was_asked(analyst_client: Any, db: Any) -> None:
    dracula = answered()
    answered(text="When was he born?", answer="1847", follows=dracula, standalone="When was Bram Stoker born?")
    history = analyst_client.get(reverse("history")).content.decode()
    assert "(asked as: When was Bram Stoker born?)" in history
    found = analyst_client.get(reverse("history"), {"q": "Stoker born"}).content.decode()
    assert "When was he born?" in found and EARLIER not in found
