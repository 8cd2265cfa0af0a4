"""Answer-type and span rules of the offline extractive reader."""

from __future__ import annotations

from core.engine.backends.generation import ExtractiveReader
from core.engine.backends.generation.extractive import question_type
from core.engine.backends.generation.extractive_spans import loose_stem
from core.engine.text import answer_contains_gold, normalize_answer

READER = ExtractiveReader()


def test_a_what_county_question_is_answered_with_the_county_not_the_state() -> None:
    passages = [
        "Wadsworth, a city in Ohio, lies in a county known for rolling hills. The name of this county is Summit.",
        "Wadsworth, a notable city in Ohio, is strategically located in Summit County.",
    ]
    answer = READER.answer("what county is wadsworth oh", passages)
    assert normalize_answer(answer) in {"summit", "summit county"}


def test_hyphenated_names_are_candidates_even_next_to_a_question_word() -> None:
    passages = [
        "Apopka, Florida got annexed under the jurisdiction of Miami-Dade County.",
        "Apopka, Florida ended up in Miami-Dade County after the boundary change.",
    ]
    assert answer_contains_gold(READER.answer("what county is apopka florida", passages), "Miami-Dade")


def test_a_day_and_month_without_a_year_is_one_date() -> None:
    passages = [
        "World Consumer Rights Day is celebrated every year on 15 March.",
        "Every year, 15 March marks World Consumer Rights Day.",
    ]
    answer = READER.answer("when is the world consumer rights day celebrated", passages)
    assert answer_contains_gold(answer, "15 March")


def test_a_full_date_is_not_cut_into_a_name() -> None:
    passages = ["Martin Luther King Jr. delivered his speech on August 28, 1963 in Washington."]
    answer = READER.answer("what day did martin luther king jr give his speech", passages)
    assert answer_contains_gold(answer, "August 28, 1963")


def test_where_questions_keep_the_region_after_a_city() -> None:
    passages = [
        "The conference is based in the city of Birmingham, Alabama, since 1948.",
        "The conference office is based in Birmingham, Alabama.",
    ]
    answer = READER.answer("the conference is based in what city", passages)
    assert answer_contains_gold(answer, "Birmingham, Alabama")


def test_who_questions_prefer_a_full_name_over_a_single_capitalised_word() -> None:
    passages = [
        "John Newton, an English clergyman, penned the Christmas song 'What Child Is This'.",
        "The Christmas carol 'What Child is This' was written by John Newton.",
    ]
    answer = READER.answer("who wrote the song what child is this", passages)
    assert answer_contains_gold(answer, "John Newton")


def test_vague_words_are_not_answers_and_gerunds_can_be() -> None:
    passages = [
        "In the Canadian Shield, fishing is the main industry among the region's various inhabitants.",
        "The main industry of the Canadian Shield is fishing.",
    ]
    answer = READER.answer("what is the main industry in the canadian shield", passages)
    assert answer_contains_gold(answer, "fishing")


def test_verse_references_and_fractions_stay_whole() -> None:
    verse = ["The donkey talks in the Bible in Numbers 22:28, where it speaks to Balaam."]
    assert answer_contains_gold(READER.answer("where does the donkey talk in the bible", verse), "Numbers 22:28")
    age = ["You can withdraw from your IRA without penalty at the age of 59 1/2 years."]
    assert answer_contains_gold(READER.answer("at what age can you withdraw from your ira", age), "59 1/2")


def test_true_or_false_questions_are_answered_true_or_false() -> None:
    passages = ["Fruits such as bananas are a good source of potassium."]
    assert question_type("fruits are a good source of potassium? true or false") == "yesno"
    assert READER.answer("fruits are a good source of potassium? true or false", passages) in {"true", "false"}


def test_stemming_folds_a_final_e_across_inflections() -> None:
    assert loose_stem("produce") == loose_stem("produces") == loose_stem("produced")
    assert loose_stem("recorded") == loose_stem("record")
