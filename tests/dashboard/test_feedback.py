"""Feedback on an answered question: the buttons on the answer page ("Answer is right / wrong",
"Wrong here" per vote), what posting them stores, who may, and the curator's review in the
admin that turns confirmed feedback into gold-checked queries."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from core.models import AnswerFeedback, FactQuery, QueryCollection
from core.services.feedback import FEEDBACK_QUERY_SET, record_feedback
from tests.dashboard.helpers import World
from tests.factories import CuratorFactory, QuestionFactory
from tests.helpers import must_search

HTMX = {"HX-Request": "true"}
THANKS = "Thanks — a curator will review this."
MARKED_WRONG = "Marked as wrong; a curator will review it. If you know the right answer, add it below."
CORRECTION_THANKS = "Thanks — a curator will review your correction."


def page_of(client: Client, world: World) -> str:
    assert world.question is not None
    return client.get(reverse("question-detail", args=[world.question.pk])).content.decode()


def feedback_url(world: World) -> str:
    assert world.question is not None
    return reverse("question-feedback", args=[world.question.pk])


def element(html: str, element_id: str) -> str:
    """The opening tag of the element with this id."""
    match = re.search(rf'<[^<>]*\bid="{re.escape(element_id)}"[^<>]*>', html)
    assert match, f"no element #{element_id}"
    return match.group(0)


def status_line(html: str, element_id: str) -> str:
    match = re.search(rf'id="{re.escape(element_id)}"[^<>]*>([^<]*)</p>', html)
    assert match, f"no status line #{element_id}"
    return match.group(1).strip()


@pytest.fixture
def staff_curator(db: Any) -> Client:
    """A curator as `create_demo_user` makes one: staff, with the admin permissions on the core app."""
    user = CuratorFactory(username="reviewer", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="core"))
    client = Client()
    client.force_login(user)
    return client


# --- The buttons ---------------------------------------------------------------------------


def test_an_answered_question_shows_the_answer_buttons_and_a_wrong_here_button_for_each_source_that_answered(
    analyst_client: Client, world: World
) -> None:
    page = page_of(analyst_client, world)
    q = world.question.pk
    assert "Is this answer right?" in page
    right, wrong = element(page, f"feedback-right-{q}"), element(page, f"feedback-wrong-{q}")
    for button in (right, wrong):
        assert button.startswith("<button") and 'type="submit"' in button and 'aria-pressed="false"' in button
    assert 'value="answer_right"' in right and 'value="answer_wrong"' in wrong
    assert f'hx-post="{feedback_url(world)}"' in page and 'name="csrfmiddlewaretoken"' in page
    assert status_line(page, f"feedback-status-{q}") == ""  # nothing given yet
    assert 'role="status"' in element(page, f"feedback-status-{q}")
    assert "<th>Your feedback</th>" in page
    sources = world.sources
    for answered in sources[:3]:
        assert f'id="feedback-source-wrong-{q}-{answered.pk}"' in page
    assert f'id="feedback-source-wrong-{q}-{sources[3].pk}"' not in page  # it said "I don't know"


def test_an_unanswered_question_has_no_feedback_buttons_and_an_i_don_t_know_answer_cannot_be_called_right(
    analyst_client: Client, db: Any
) -> None:
    pending = QuestionFactory(text="Still thinking?")
    page = analyst_client.get(reverse("question-detail", args=[pending.pk])).content.decode()
    assert "Is this answer right?" not in page
    idk = QuestionFactory(answered=True, answer="I don't know")
    page = analyst_client.get(reverse("question-detail", args=[idk.pk])).content.decode()
    assert f'id="feedback-wrong-{idk.pk}"' in page and f'id="feedback-right-{idk.pk}"' not in page


# --- Posting ---------------------------------------------------------------------------------


def test_calling_the_answer_wrong_stores_pending_feedback_and_shows_the_thanks_state_which_a_reload_keeps(
    analyst_client: Client, analyst: Any, world: World
) -> None:
    q = world.question.pk
    response = analyst_client.post(feedback_url(world), {"kind": "answer_wrong"}, headers=HTMX)
    assert response.status_code == 200
    swapped = response.content.decode()
    assert 'aria-pressed="true"' in element(swapped, f"feedback-wrong-{q}")
    assert 'aria-pressed="false"' in element(swapped, f"feedback-right-{q}")
    # The status line is swapped out of band: the live region stays, its text changes.
    assert 'hx-swap-oob="innerHTML"' in element(swapped, f"feedback-status-{q}")
    assert status_line(swapped, f"feedback-status-{q}") == MARKED_WRONG  # no thanks before the correction
    assert f'id="feedback-corrected-{q}"' in swapped  # now it asks for the right answer
    feedback = AnswerFeedback.objects.get()
    assert (feedback.user, feedback.question_id, feedback.kind) == (analyst, q, "answer_wrong")
    assert (feedback.status, feedback.answer, feedback.source) == ("pending", "paris", None)

    page = page_of(analyst_client, world)
    assert status_line(page, f"feedback-status-{q}") == MARKED_WRONG
    assert 'aria-pressed="true"' in element(page, f"feedback-wrong-{q}")

    # Sending the right answer thanks for it.
    sent = analyst_client.post(
        feedback_url(world), {"kind": "answer_wrong", "corrected_answer": "Lyon"}, headers=HTMX
    ).content.decode()
    assert status_line(sent, f"feedback-status-{q}") == CORRECTION_THANKS


def test_a_second_click_updates_the_feedback_and_a_bare_click_keeps_the_right_answer_given(
    analyst_client: Client, world: World
) -> None:
    url = feedback_url(world)
    analyst_client.post(url, {"kind": "answer_wrong"}, headers=HTMX)
    analyst_client.post(
        url, {"kind": "answer_wrong", "corrected_answer": "  Lyon ", "comment": "The atlas says Lyon."}, headers=HTMX
    )
    analyst_client.post(url, {"kind": "answer_wrong"}, headers=HTMX)
    feedback = AnswerFeedback.objects.get()
    assert (feedback.corrected_answer, feedback.comment) == ("Lyon", "The atlas says Lyon.")
    page = page_of(analyst_client, world)
    assert 'value="Lyon"' in element(page, f"feedback-corrected-{world.question.pk}")


def test_changing_one_s_mind_replaces_the_pending_verdict(analyst_client: Client, world: World) -> None:
    url = feedback_url(world)
    analyst_client.post(url, {"kind": "answer_wrong"}, headers=HTMX)
    analyst_client.post(url, {"kind": "answer_right"}, headers=HTMX)
    assert list(AnswerFeedback.objects.values_list("kind", flat=True)) == ["answer_right"]


def test_a_source_is_flagged_wrong_in_its_row_and_a_source_that_said_i_don_t_know_cannot_be(
    analyst_client: Client, world: World
) -> None:
    q, lyon, silent = world.question.pk, world.sources[2], world.sources[3]
    response = analyst_client.post(feedback_url(world), {"kind": "source_wrong", "source": lyon.pk}, headers=HTMX)
    swapped = response.content.decode()
    assert 'aria-pressed="true"' in element(swapped, f"feedback-source-wrong-{q}-{lyon.pk}")
    assert status_line(swapped, f"feedback-source-status-{q}-{lyon.pk}") == THANKS
    flag = AnswerFeedback.objects.get()
    assert (flag.kind, flag.source, flag.answer) == ("source_wrong", lyon, "lyon")
    page = page_of(analyst_client, world)
    assert status_line(page, f"feedback-source-status-{q}-{lyon.pk}") == THANKS
    assert status_line(page, f"feedback-status-{q}") == ""  # the answer itself was not judged

    refused = analyst_client.post(feedback_url(world), {"kind": "source_wrong", "source": silent.pk}, headers=HTMX)
    assert "source: The source 'src-3' said “I don't know” here" in html.unescape(refused.content.decode())
    assert AnswerFeedback.objects.count() == 1


@pytest.mark.parametrize(
    ("form", "field"),
    [
        ({"kind": "answer_wrong", "corrected_answer": "x" * 501}, "corrected_answer"),
        ({"kind": "answer_wrong", "corrected_answer": "Paris"}, "corrected_answer"),  # the answer called wrong
        ({"kind": "answer_right", "corrected_answer": "Lyon"}, "corrected_answer"),
        ({"kind": "answer_wrong", "comment": "y" * 2001}, "comment"),
        ({"kind": "answer_perfect"}, "kind"),
        ({"kind": "source_wrong"}, "source"),
        ({"kind": "source_wrong", "source": "abc"}, "source"),
        ({"kind": "answer_wrong", "source": "99999999999999999999"}, "source"),
    ],
)
def test_bad_feedback_names_the_field_and_stores_nothing(
    analyst_client: Client, world: World, form: dict[str, str], field: str
) -> None:
    response = analyst_client.post(feedback_url(world), form, headers=HTMX)
    assert response.status_code == 200
    assert re.search(rf'role="alert">[^<]*\b{field}: ', response.content.decode()), response.content.decode()
    assert not AnswerFeedback.objects.exists()


def test_feedback_on_a_question_not_answered_yet_is_refused(analyst_client: Client, db: Any) -> None:
    pending = QuestionFactory(text="Still thinking?")
    response = analyst_client.post(
        reverse("question-feedback", args=[pending.pk]), {"kind": "answer_wrong"}, headers=HTMX
    )
    assert "question: Question #" in response.content.decode() and "has no answer yet" in response.content.decode()
    assert not AnswerFeedback.objects.exists()


def test_without_script_the_form_posts_and_comes_back_to_the_question_with_a_message(
    analyst_client: Client, world: World
) -> None:
    response = analyst_client.post(feedback_url(world), {"kind": "answer_right"}, follow=True)
    assert response.redirect_chain[-1][0] == reverse("question-detail", args=[world.question.pk])
    page = response.content.decode()
    assert THANKS in page and AnswerFeedback.objects.get().kind == "answer_right"
    failed = analyst_client.post(feedback_url(world), {"kind": "answer_right", "corrected_answer": "x"}, follow=True)
    assert "Your feedback was not saved. corrected_answer:" in failed.content.decode()


# --- Who may ---------------------------------------------------------------------------------


def test_only_signed_in_analysts_and_curators_may_give_feedback_and_only_by_post(
    client: Client, nobody_client: Client, curator_client: Client, analyst_client: Client, world: World
) -> None:
    url = feedback_url(world)
    anonymous = client.post(url, {"kind": "answer_right"})
    assert anonymous.status_code == 302 and anonymous["Location"].startswith(reverse("login"))
    assert nobody_client.post(url, {"kind": "answer_right"}).status_code == 403
    assert analyst_client.get(url).status_code == 405
    assert not AnswerFeedback.objects.exists()
    assert curator_client.post(url, {"kind": "answer_right"}, headers=HTMX).status_code == 200
    assert AnswerFeedback.objects.count() == 1


def test_posting_feedback_needs_the_csrf_token(analyst: Any, world: World) -> None:
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(analyst)
    assert browser.post(feedback_url(world), {"kind": "answer_wrong"}, headers=HTMX).status_code == 403
    assert not AnswerFeedback.objects.exists()
    page = browser.get(reverse("question-detail", args=[world.question.pk])).content.decode()
    token = must_search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    assert browser.post(feedback_url(world), {"kind": "answer_wrong", "csrfmiddlewaretoken": token}).status_code == 302
    assert AnswerFeedback.objects.count() == 1


def test_each_user_has_their_own_feedback(analyst_client: Client, curator_client: Client, world: World) -> None:
    curator_client.post(feedback_url(world), {"kind": "answer_right"}, headers=HTMX)
    page = page_of(analyst_client, world)
    q = world.question.pk
    assert status_line(page, f"feedback-status-{q}") == ""
    assert 'aria-pressed="false"' in element(page, f"feedback-right-{q}")


# --- The curator's review in the admin ---------------------------------------------------------


def review(client: Client, action: str, *feedback: AnswerFeedback) -> str:
    response = client.post(
        "/admin/core/answerfeedback/",
        {"action": action, "_selected_action": [f.pk for f in feedback]},
        follow=True,
    )
    assert response.status_code == 200
    return response.content.decode()


def feedback_set_queries() -> dict[str, list[str]]:
    return dict(
        FactQuery.objects.filter(query_set__name=FEEDBACK_QUERY_SET).values_list("question", "reference_answers")
    )


def test_the_admin_lists_feedback_and_confirming_a_right_answer_makes_it_a_gold_checked_query(
    staff_curator: Client, analyst: Any, world: World
) -> None:
    feedback, _ = record_feedback(world.question, analyst, "answer_right")
    listing = staff_curator.get("/admin/core/answerfeedback/").content.decode()
    assert "What is the capital?" in listing and "The answer is right" in listing and "Pending review" in listing
    assert "Answer feedback" in listing  # not "Answer feedbacks"
    assert staff_curator.get(f"/admin/core/answerfeedback/{feedback.pk}/change/").status_code == 200

    page = review(staff_curator, "confirm", feedback)
    assert "Confirmed 1 feedback item(s); 1 became gold-checked queries" in page
    assert feedback_set_queries() == {"What is the capital?": ["paris"]}
    feedback.refresh_from_db()
    query = FactQuery.objects.get(query_set__name=FEEDBACK_QUERY_SET)
    assert (feedback.status, feedback.gold_query, feedback.gold_answer) == ("confirmed", query, "paris")
    assert feedback.reviewed_by is not None and feedback.reviewed_by.username == "reviewer"
    assert query.origin == FactQuery.Origin.FEEDBACK


def test_confirming_gold_offers_the_run_that_uses_it_and_the_run_form_opens_on_the_feedback_set(
    staff_curator: Client, analyst: Any, world: World
) -> None:
    feedback, _ = record_feedback(world.question, analyst, "answer_right")
    page = review(staff_curator, "confirm", feedback)
    feedback_set = QueryCollection.objects.get(name=FEEDBACK_QUERY_SET)
    link = f"/runs/?start=1&amp;query_set={feedback_set.pk}#start-run"
    assert f'<a href="{link}">start an estimation run over “{FEEDBACK_QUERY_SET}”</a>' in page
    assert "“Ask again” on the question answers with the updated reliabilities" in page
    form = staff_curator.get(f"/runs/?start=1&query_set={feedback_set.pk}").content.decode()
    assert '<details open id="start-run">' in " ".join(form.split())
    assert f'<option value="{feedback_set.pk}" selected>' in form
    # Rejecting (no new gold) offers nothing.
    other, _ = record_feedback(world.question, analyst, "answer_wrong")
    assert "start an estimation run over" not in review(staff_curator, "reject", other)


def test_a_corrected_answer_becomes_gold_and_a_wrong_answer_without_one_is_kept_as_known_wrong(
    staff_curator: Client, analyst: Any, curator: Any, world: World
) -> None:
    corrected, _ = record_feedback(world.question, analyst, "answer_wrong", corrected_answer="Lyon")
    bare, _ = record_feedback(world.question, curator, "answer_wrong")
    review(staff_curator, "confirm", corrected, bare)
    assert feedback_set_queries() == {"What is the capital?": ["Lyon"]}
    bare.refresh_from_db()
    assert bare.status == "confirmed" and bare.gold_query is None
    listing = staff_curator.get("/admin/core/answerfeedback/?outcome=known-wrong").content.decode()
    assert "known wrong answer (not used by estimation)" in listing


def test_a_source_flagged_wrong_becomes_gold_only_with_the_right_answer(
    staff_curator: Client, analyst: Any, curator: Any, world: World
) -> None:
    lyon = world.sources[2]
    without, _ = record_feedback(world.question, analyst, "source_wrong", source=lyon)
    review(staff_curator, "confirm", without)
    assert feedback_set_queries() == {}
    with_answer, _ = record_feedback(world.question, curator, "source_wrong", source=lyon, corrected_answer="Paris")
    review(staff_curator, "confirm", with_answer)
    assert feedback_set_queries() == {"What is the capital?": ["Paris"]}


def test_confirming_an_answer_that_contradicts_confirmed_gold_is_refused_and_rejecting_takes_gold_back(
    staff_curator: Client, analyst: Any, curator: Any, world: World
) -> None:
    right, _ = record_feedback(world.question, analyst, "answer_right")
    review(staff_curator, "confirm", right)
    contrary, _ = record_feedback(world.question, curator, "answer_wrong", corrected_answer="Lyon")
    page = review(staff_curator, "confirm", contrary)
    assert f"Not confirmed, #{contrary.pk}: Fact query #" in page and f"(from feedback #{right.pk})" in page
    contrary.refresh_from_db()
    assert contrary.status == "pending" and feedback_set_queries() == {"What is the capital?": ["paris"]}

    review(staff_curator, "reject", right)
    right.refresh_from_db()
    assert right.status == "rejected" and right.gold_query is None
    assert feedback_set_queries() == {"What is the capital?": []}  # the query stays (runs may have answered it)
    review(staff_curator, "confirm", contrary)
    assert feedback_set_queries() == {"What is the capital?": ["Lyon"]}


def test_feedback_edited_after_review_goes_back_to_pending_and_its_gold_follows_the_new_confirmation(
    staff_curator: Client, analyst: Any, world: World
) -> None:
    feedback, _ = record_feedback(world.question, analyst, "answer_wrong", corrected_answer="Lyon")
    review(staff_curator, "confirm", feedback)
    again, created = record_feedback(world.question, analyst, "answer_wrong", corrected_answer="Marseille")
    assert not created and again.pk == feedback.pk and again.status == "pending"
    assert feedback_set_queries() == {"What is the capital?": ["Lyon"]}  # until reviewed again
    review(staff_curator, "confirm", again)
    assert feedback_set_queries() == {"What is the capital?": ["Marseille"]}


def test_an_analyst_cannot_review_feedback_in_the_admin(analyst_client: Client, analyst: Any, world: World) -> None:
    feedback, _ = record_feedback(world.question, analyst, "answer_right")
    response = analyst_client.post(
        "/admin/core/answerfeedback/", {"action": "confirm", "_selected_action": [feedback.pk]}
    )
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    feedback.refresh_from_db()
    assert feedback.status == "pending" and not feedback_set_queries()


def test_the_page_says_what_became_of_reviewed_feedback(
    staff_curator: Client, analyst_client: Client, analyst: Any, world: World
) -> None:
    feedback, _ = record_feedback(world.question, analyst, "answer_wrong", corrected_answer="Lyon")
    review(staff_curator, "confirm", feedback)
    q = world.question.pk
    assert status_line(page_of(analyst_client, world), f"feedback-status-{q}").startswith(
        "A curator confirmed this: “Lyon” is now a checked answer"
    )
    review(staff_curator, "reject", feedback)
    assert status_line(page_of(analyst_client, world), f"feedback-status-{q}") == (
        "A curator reviewed this and did not accept it."
    )


def test_two_requests_creating_the_same_feedback_at_once_end_as_one(
    analyst: Any, world: World, monkeypatch: Any
) -> None:
    """The unique constraint refuses the second insert; that request then updates the row."""
    from django.db import IntegrityError

    import core.services.feedback as service

    real, calls = service._record, []

    def racing(*args: Any) -> Any:
        calls.append(args)
        if len(calls) == 1:  # this insert loses to the other request's...
            raise IntegrityError("answer_feedback_unique_without_source")
        # ...whose row (committed on its own connection) the retry finds.
        AnswerFeedback.objects.create(question=world.question, user=analyst, kind="answer_wrong", answer="paris")
        return real(*args)

    monkeypatch.setattr(service, "_record", racing)
    feedback, created = record_feedback(world.question, analyst, "answer_wrong", corrected_answer="Lyon")
    assert not created and len(calls) == 2
    assert list(AnswerFeedback.objects.values_list("kind", "corrected_answer")) == [("answer_wrong", "Lyon")]


def test_the_database_keeps_one_feedback_per_user_question_kind_and_source(analyst: Any, world: World) -> None:
    from django.db import IntegrityError, transaction

    lyon = world.sources[2]
    AnswerFeedback.objects.create(question=world.question, user=analyst, kind="answer_wrong")
    AnswerFeedback.objects.create(question=world.question, user=analyst, kind="source_wrong", source=lyon)
    for duplicate in ({"kind": "answer_wrong"}, {"kind": "source_wrong", "source": lyon}, {"kind": "source_wrong"}):
        with pytest.raises(IntegrityError), transaction.atomic():
            AnswerFeedback.objects.create(question=world.question, user=analyst, **duplicate)
