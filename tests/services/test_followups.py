"""Follow-up questions in the asking service: validation of ``follows``, the standalone
rewrite stored when asked and used to retrieve and answer, the language model's rewrite
(and its fallback) when one is configured, and the conversation's earlier turns."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from core.engine.backends.generation.base import Capability, Generation, GenerationRequest
from core.engine.steps.followup import rewrite_follow_up
from core.engine.strategies import get_strategy
from core.models import Question
from core.services import asking
from core.services.asking import ask_now, conversation, start_question
from tasks.models import Job
from tests.corpus import build_corpus
from tests.factories import JobFactory, QuestionFactory


class CannedLLM:
    name = "canned-llm"
    capabilities = frozenset({Capability.FREE_TEXT})

    def __init__(self, text: str) -> None:
        self.text = text
        self.prompts: list[str] = []

    def generate(self, requests: Any) -> list[Generation]:
        self.prompts.extend(r.prompt or "" for r in requests if isinstance(r, GenerationRequest))
        return [Generation(self.text, self.name, 50, 10) for _ in requests]


def spy_on_answered_text(monkeypatch: Any) -> list[str]:
    """The question text each strategy is asked to answer, as the service passes it."""
    seen: list[str] = []
    real = get_strategy  # what core.services.asking imported

    def spying(name: str) -> Any:
        strategy = real(name)
        answer = strategy.answer_checked

        def recording(text: str, ctx: Any, params: Any) -> Any:
            seen.append(text)
            return answer(text, ctx, params)

        object.__setattr__(strategy, "answer_checked", recording)
        return strategy

    monkeypatch.setattr(asking, "get_strategy", spying)
    return seen


def test_a_follow_up_is_rewritten_standalone_and_retrieval_and_answering_use_it(db, embedder, monkeypatch):
    build_corpus(embedder)
    first = ask_now("Who wrote Hamlet?", strategy="ra-rag-all")
    assert first.answer == "William Shakespeare"
    seen = spy_on_answered_text(monkeypatch)

    follow_up = ask_now("And the Mona Lisa?", strategy="ra-rag-all", follows=first)
    follow_up.refresh_from_db()
    assert follow_up.follows == first and follow_up.text == "And the Mona Lisa?"
    assert follow_up.standalone == "Who wrote the Mona Lisa?"
    assert seen == ["Who wrote the Mona Lisa?"]  # the strategy never saw the bare follow-up
    assert follow_up.answer == "Leonardo da Vinci"
    passages = [p["text"] for v in follow_up.votes.all() for p in v.passages]
    assert passages and all("Mona Lisa" in text for text in passages[:1])
    assert follow_up.trace["follow_up"] == {"follows": first.pk, "method": "rules", "fallback": ""}
    assert follow_up.rewritten and follow_up.asked_as == "Who wrote the Mona Lisa?"


def test_a_standalone_follow_up_is_answered_as_typed(db, embedder, monkeypatch):
    build_corpus(embedder)
    first = ask_now("Who wrote Hamlet?", strategy="ra-rag-all")
    seen = spy_on_answered_text(monkeypatch)
    follow_up = ask_now("Which ocean is the largest?", strategy="ra-rag-all", follows=first.pk)
    assert follow_up.standalone == "Which ocean is the largest?" and not follow_up.rewritten
    assert seen == ["Which ocean is the largest?"]
    assert follow_up.trace["follow_up"]["method"] == "unchanged"


def test_the_rewrite_is_stored_when_asked_before_any_worker_runs(db):
    earlier = QuestionFactory(answered=True, text="In which city is the Eiffel Tower located?")
    follow_up = start_question("When was it completed?", follows=earlier.pk)
    stored = Question.objects.get(pk=follow_up.pk)
    assert stored.follows_id == earlier.pk
    assert stored.standalone == "When was the Eiffel Tower completed?"
    assert stored.job is not None and stored.answered_at is None


def test_with_a_language_model_the_worker_rewrites_through_the_generator(db, monkeypatch):
    earlier = QuestionFactory(answered=True, text="In which city is the Eiffel Tower located?")
    question = QuestionFactory(text="When was it finished?", follows=earlier, standalone="rules' version")
    llm = CannedLLM("When was the construction of the Eiffel Tower finished?")
    rewrite = asking._rewrite(question, llm)
    assert rewrite is not None and (rewrite.method, rewrite.calls, rewrite.tokens) == ("llm", 1, 60)
    assert question.standalone == "When was the construction of the Eiffel Tower finished?"
    (prompt,) = llm.prompts
    assert '"""Paris"""' in prompt and '"""When was it finished?"""' in prompt


def test_a_garbled_model_rewrite_falls_back_to_the_rules_and_says_why(db, embedder, monkeypatch):
    build_corpus(embedder)
    first = ask_now("Who wrote Hamlet?", strategy="ra-rag-all")
    monkeypatch.setattr(
        asking,
        "rewrite_follow_up",
        lambda earlier, text, generator: rewrite_follow_up(earlier, text, CannedLLM("%%% ### @@@ !!!")),
    )
    follow_up = ask_now("What about the Mona Lisa?", strategy="ra-rag-all", follows=first)
    assert follow_up.standalone == "Who wrote the Mona Lisa?"
    assert follow_up.trace["follow_up"]["method"] == "rules"
    assert "garbled" in follow_up.trace["follow_up"]["fallback"]
    assert follow_up.calls == first.calls + 1  # the model's call is counted with the answer's


@pytest.mark.parametrize("follows", [987654, "987654"])
def test_following_an_unknown_question_is_refused_naming_the_field(db, follows):
    with pytest.raises(ValidationError) as caught:
        start_question("When was he born?", follows=follows)
    assert caught.value.message_dict == {"follows": ["There is no question #987654 to follow up."]}
    assert not Question.objects.exists() and not Job.objects.exists()


def test_following_an_unanswered_or_failed_question_is_refused(db):
    pending = QuestionFactory(text="Who?")
    failed = QuestionFactory(answered=True, job=JobFactory(kind=Job.Kind.ASK, state=Job.State.FAILED))
    for earlier in (pending, failed):
        with pytest.raises(ValidationError) as caught:
            start_question("When was he born?", follows=earlier.pk)
        assert "has no answer yet" in caught.value.message_dict["follows"][0]
    with pytest.raises(ValidationError) as caught:
        start_question("", follows="abc")
    assert set(caught.value.message_dict) == {"text", "follows"}
    assert Question.objects.count() == 2


def test_the_conversation_lists_the_earlier_turns_oldest_first(db):
    one = QuestionFactory(answered=True, text="Who wrote the novel Dracula?", answer="Bram Stoker")
    two = QuestionFactory(answered=True, text="When was he born?", follows=one, standalone="When was Bram Stoker born?")
    three = QuestionFactory(text="Where?", follows=two)
    assert conversation(three) == [one, two]
    assert conversation(one) == []
    assert conversation(three, limit=1) == [two]
    one.delete()  # a deleted turn ends the conversation there; the follow-up keeps its rewrite
    two.refresh_from_db()
    assert conversation(three) == [two] and two.follows_id is None and two.standalone


def test_the_ask_command_takes_follows_and_prints_the_rewrite(db, embedder, capsys):
    build_corpus(embedder)
    call_command("ask", "Who wrote Hamlet?", "--strategy", "ra-rag-all")
    first = Question.objects.get()
    call_command("ask", "What about the Mona Lisa?", "--strategy", "ra-rag-all", "--follows", str(first.pk))
    out = capsys.readouterr().out
    assert "Asked as: Who wrote the Mona Lisa?" in out and "Answer: Leonardo da Vinci" in out
    with pytest.raises(CommandError, match="follows: There is no question #999999 to follow up."):
        call_command("ask", "When was he born?", "--follows", "999999")


def test_a_pronoun_alone_is_stored_beside_the_earlier_question_not_pasted_into_it(db: None) -> None:
    earlier = QuestionFactory(answered=True, text="Who wrote the novel Dracula?", answer="Bram Stoker")
    stored = Question.objects.get(pk=start_question("And him?", follows=earlier.pk).pk)
    assert stored.standalone == "And him? (following: Who wrote the novel Dracula?)"
    assert "novel him" not in stored.asked_as
