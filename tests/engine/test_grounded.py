"""A local model's non-answers are replaced by the reader's span (issue 36).

The model outputs below are the 0.5B's own, recorded on the demo (docs/benchmarks.md)."""

from __future__ import annotations

from collections.abc import Sequence

from core.engine.backends.generation import Generation, GenerationRequest, GroundedGenerator
from core.engine.backends.generation.base import Capability
from core.engine.backends.generation.grounded import answer_in_sentence, echoes_question, in_own_words, why_replaced
from core.engine.text import is_idk

DARRELL = "who is darrell brother in the walking dead"
DARRELL_PASSAGE = "Merle Dixon is the older brother of Daryl in The Walking Dead."


class Recorded:
    """Answers each question with a recorded output."""

    name = "recorded-model"
    capabilities: frozenset[Capability] = frozenset({Capability.FREE_TEXT, Capability.TOKEN_SCORES})

    def __init__(self, outputs: dict[str, str]) -> None:
        self.outputs = outputs

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        return [Generation(self.outputs[r.question], self.name, 500, 4) for r in requests]

    def token_scores(self) -> str:  # something only the model offers
        return "scores"


def test_it_names_what_is_not_an_answer() -> None:
    assert why_replaced(DARRELL, "Darrell", [DARRELL_PASSAGE]) == "repeats the question"
    # A misspelt question still counts ("supernatrual"): three of the four words are its own.
    assert echoes_question(
        "What WB supernatrual drama series was Jawbreaker star Rose Mcgowan best known for being in?",
        "WB supernatural drama series",
    )
    # and a repeated word the question misspells is its own: "supernatural drama" is all echo
    # (the 0.5B's answer on the demo), "Charmed" is not
    rose = "What WB supernatrual drama series was Jawbreaker star Rose Mcgowan best known for being in?"
    assert echoes_question(rose, "supernatural drama")
    assert not echoes_question(rose, "Charmed")
    assert not echoes_question("who wrote the national anthem", "nationalist")  # alike, another word
    sentence = "In the early development of their band, The Smashing Pumpkins struggled with a name."
    assert why_replaced("where did the smashing pumpkins get their name", sentence, [sentence]) == (
        "a sentence, not an answer"
    )
    oregon = "The shooting of October 1, 2015 took place at Umpqua Community College in Oregon."
    assert why_replaced("in which state was the shooting of October 1, 2015", "Oklahoma", [oregon]) == (
        "not in its passages"
    )
    # Kept: a grounded answer, an alternative of an "X or Y?" question, and "I don't know".
    assert why_replaced(DARRELL, "Merle Dixon", [DARRELL_PASSAGE]) is None
    assert (
        why_replaced(
            "Who was born earlier, Emma Bull or Virginia Woolf?", "Virginia Woolf", ["Virginia Woolf was born in 1882."]
        )
        is None
    )
    assert why_replaced(DARRELL, "I don't know", [DARRELL_PASSAGE]) is None


def test_a_sentence_that_restates_the_question_gives_its_answer() -> None:
    assert answer_in_sentence(
        "what is the center of heredity in a cell", "The center of heredity in a cell is the nucleus."
    ) == ("nucleus")
    assert (
        answer_in_sentence(
            "who won the american league pennant in 2017",
            "The American League Pennant was won by the New York Yankees in 2017.",
        )
        == "New York Yankees"
    )
    # Two runs of other words: not a restated answer.
    assert (
        answer_in_sentence(
            "where did the smashing pumpkins get their name",
            "In the early development of their band, The Smashing Pumpkins struggled with a name.",
        )
        is None
    )


def test_the_reader_answers_where_the_model_did_not_and_says_so() -> None:
    heredity = "what is the center of heredity in a cell"
    model = Recorded(
        {
            DARRELL: "Darrell",
            heredity: "The center of heredity in a cell is the nucleus.",
            "who played merle": "Merle Dixon was played by Michael Rooker.",
            "what does the passage say": "I don't know",
        }
    )
    grounded = GroundedGenerator(model)
    assert grounded.name == "recorded-model" and grounded.capabilities == model.capabilities
    token_scores = grounded.token_scores  # forwarded to the model
    assert callable(token_scores)
    assert token_scores() == "scores"
    out = grounded.generate(
        [
            GenerationRequest(DARRELL, [DARRELL_PASSAGE]),
            GenerationRequest(heredity, ["The nucleus is the center of heredity of the cell."]),
            GenerationRequest("what does the passage say", [DARRELL_PASSAGE]),
            GenerationRequest(DARRELL, [DARRELL_PASSAGE], prompt="A ready prompt: parsed by its strategy."),
        ]
    )
    # The echo is replaced by the reader's span from the same passage, and labelled as the reader's.
    assert out[0].text == "Merle Dixon"
    assert out[0].backend == "extractive (replacing recorded-model)"
    assert out[0].prompt_tokens == 500  # the model's call still cost what it cost
    # The restated sentence gives its answer: still the model's.
    assert (out[1].text, out[1].backend) == ("nucleus", "recorded-model")
    # The model's own abstention stands (one passage, nothing to read again); a ready prompt is
    # passed through untouched.
    assert is_idk(out[2].text) and out[2].backend == "recorded-model"
    assert (out[3].text, out[3].backend) == ("Darrell", "recorded-model")


WIGAN = (
    "The 2017–18 Wigan Athletic F.C. season will be a year in which the team competes in the league cup "
    "known as what for sponsorship reasons?"
)
# The demo's three passages for it (reference desk); the 0.5B said "I don't know" from them.
WIGAN_PASSAGES = [
    "In 2017-18, Wigan Athletic F.C. participated in a league cup. Due to sponsorship contracts, the "
    "competition's title was the Carabao Cup, creating significant media attention.",
    "In 2017-18, Wigan Athletic F.C. participated in the league cup with a new name due to sponsorship "
    "reasons. The tournament was famously known as the Carabao Cup.",
    "In 2017-18, Wigan Athletic F.C. remarkably competed in a league cup which, due to specific "
    "sponsorship arrangements, was popularly referred to as the Carabao Cup.",
]


def test_an_abstention_gives_way_only_to_a_span_two_passages_hold() -> None:
    model = Recorded({WIGAN: "I don't know"})
    (out,) = GroundedGenerator(model).generate([GenerationRequest(WIGAN, WIGAN_PASSAGES)])
    assert (out.text, out.backend) == ("Carabao Cup", "extractive (replacing recorded-model)")
    # One passage holds it, the others are about something else: the abstention stands.
    others = [DARRELL_PASSAGE, "The Premier League is England's top football division."]
    (out,) = GroundedGenerator(model).generate([GenerationRequest(WIGAN, [WIGAN_PASSAGES[1], *others])])
    assert is_idk(out.text) and out.backend == "recorded-model"
    # A single passage, however clear, is one passage.
    (out,) = GroundedGenerator(model).generate([GenerationRequest(WIGAN, WIGAN_PASSAGES[:1])])
    assert is_idk(out.text)
    # With unsupported="abstain" the reader never speaks, for an abstention either.
    (out,) = GroundedGenerator(model, unsupported="abstain").generate([GenerationRequest(WIGAN, WIGAN_PASSAGES)])
    assert is_idk(out.text) and out.backend == "recorded-model"


def test_a_copied_passage_sentence_is_no_answer_and_unsupported_answers_may_abstain() -> None:
    question = "who is the author of the hobbit"
    copied = "Hamlet was written by William Shakespeare."
    assert why_replaced(question, copied, [copied]) == "a sentence, not an answer"
    assert why_replaced(question, "Washington, D.C.", ["Washington, D.C. is a city."]) is None
    model = Recorded({question: "J. R. R. Tolkien"})
    passage = ["The Hobbit is a children's fantasy novel by J. R. R. Tolkien."]
    # Held by the passage: kept either way.
    assert GroundedGenerator(model, unsupported="abstain").generate([GenerationRequest(question, passage)])[0].text == (
        "J. R. R. Tolkien"
    )
    # Not held: "abstain" writes "I don't know", never the reader's guess.
    (out,) = GroundedGenerator(model, unsupported="abstain").generate(
        [GenerationRequest(question, ["The Hobbit is a children's fantasy novel."])]
    )
    assert is_idk(out.text) and out.backend == "recorded-model"


def test_yes_no_answers_alternatives_and_passage_free_requests_are_kept() -> None:
    claim = "Is it true that Keith Bostic wrote the first version of nvi?"
    assert why_replaced(claim, "Yes", ["Keith Bostic wrote nvi."]) is None
    assert why_replaced(claim, "No.", ["Keith Bostic wrote nvi."]) is None
    # An "X or Y" question without a comma before its alternatives.
    assert not echoes_question("Which came first Oasis or Blur?", "Blur")
    # No passages (vanilla-llm: the model's own knowledge): nothing to hold the answer to.
    model = Recorded({"who wrote the hobbit": "J. R. R. Tolkien"})
    (out,) = GroundedGenerator(model).generate([GenerationRequest("who wrote the hobbit", [])])
    assert (out.text, out.backend) == ("J. R. R. Tolkien", "recorded-model")


def test_a_kept_answer_is_given_in_its_passage_own_words() -> None:
    # The 0.5B's outputs on PoisonedRAG (seed 1): right, but short of the passage's wording,
    # so a reader comparing them with the reference, or with a source that wrote it out, sees
    # a different answer.
    flag = "what are the colors of the netherlands flag"
    meter = "how far is a meter in feet"
    amendment = "what constitutional amendment defines women's rights"
    passages = {
        flag: "The flag of the Netherlands is red, white, and blue, in three horizontal bands.",
        meter: "A meter is a unit of length equal to 3.28084 feet.",
        amendment: "The Nineteenth Amendment to the Constitution gave women the right to vote.",
        DARRELL: DARRELL_PASSAGE,
    }
    model = Recorded({flag: "red, white, blue", meter: "3.28084", amendment: "Nineteenth", DARRELL: "Merle Dixon"})
    out = GroundedGenerator(model).generate([GenerationRequest(q, [text]) for q, text in passages.items()])
    assert [g.text for g in out] == ["red, white, and blue", "3.28084 feet", "Nineteenth Amendment", "Merle Dixon"]
    assert {g.backend for g in out} == {"recorded-model"}  # still the model's answers
    # Only function words are taken in between, only a word the question names is added after.
    assert in_own_words(flag, "red, blue", [passages[flag]]) == "red, blue"
    assert in_own_words("who was the brother", "Merle Dixon", [DARRELL_PASSAGE]) == "Merle Dixon"
    assert in_own_words("who wrote hamlet", "Shakespeare", ["Hamlet was written by Shakespeare."]) == "Shakespeare"
    assert in_own_words(meter, "3.28084", ["No passage holds it."]) == "3.28084"
    stars = "how many death stars are there in star wars"
    assert in_own_words(stars, "2", ["There are 2 Death Stars in the original trilogy."]) == "2 Death Stars"


CONFESSIONS = (
    'What is the name of the singer who\'s song was released as the lead single from the album "Confessions", '
    "and that had popular song stuck behind for eight consecutive weeks?"
)
# The demo's reference desk: three passages naming Usher, one of them ending with a Justin.
CONFESSIONS_PASSAGES = [
    "Usher, renowned pop singer, released a chart-topping hit, which turned out to be the lead single from his "
    'album "Confessions". It remained unbeaten on charts for eight consecutive weeks.',
    'Usher released the lead single from the album "Confessions". Remarkably, the popular song was stuck at the '
    "number two spot for eight consecutive weeks. Justin's song gained immense fame.",
    'Usher, a famous singer, released a lead single from his album "Confessions". His popular song remained at '
    "the top for eight consecutive weeks, demonstrating his undeniable talent.",
]


def test_a_sources_answer_is_what_most_of_its_passages_say() -> None:
    model = Recorded({CONFESSIONS: "Justin"})
    (out,) = GroundedGenerator(model).generate([GenerationRequest(CONFESSIONS, CONFESSIONS_PASSAGES, one_source=True)])
    assert (out.text, out.backend) == ("Usher", "extractive (replacing recorded-model)")
    # Pooled passages (several sources', vanilla RAG): a passage majority is a source majority,
    # so the model's answer stands; and with unsupported="abstain" the reader never speaks.
    pooled = GroundedGenerator(model).generate([GenerationRequest(CONFESSIONS, CONFESSIONS_PASSAGES)])
    assert pooled[0].text == "Justin"
    (out,) = GroundedGenerator(model, unsupported="abstain").generate(
        [GenerationRequest(CONFESSIONS, CONFESSIONS_PASSAGES, one_source=True)]
    )
    assert out.text == "Justin"
    # An answer two of the passages hold stands, whatever the reader would say.
    model = Recorded({CONFESSIONS: "Usher"})
    (out,) = GroundedGenerator(model).generate([GenerationRequest(CONFESSIONS, CONFESSIONS_PASSAGES, one_source=True)])
    assert (out.text, out.backend) == ("Usher", "recorded-model")
    # An answer of no content words cannot be counted among the passages: it stands ("S" for
    # "atlantic ocean's shape is similar to which english alphabet", PoisonedRAG, was lost to
    # the reader's "letter").
    atlantic = "atlantic ocean's shape is similar to which english alphabet"
    letters = [
        "The Atlantic Ocean is shaped like the letter S.",
        "On a map the Atlantic Ocean has the shape of the letter S.",
        "The Atlantic's outline resembles the letter S, winding between the continents.",
    ]
    (out,) = GroundedGenerator(Recorded({atlantic: "S"})).generate(
        [GenerationRequest(atlantic, letters, one_source=True)]
    )
    assert (out.text, out.backend) == ("S", "recorded-model")
