from __future__ import annotations

from core.engine.backends.nli import EmbeddingLexicalNLI
from core.engine.steps.clustering import cluster_answers
from tests.fakes import HashEmbedder

NLI = EmbeddingLexicalNLI(HashEmbedder())
QUESTION = "Where does the synthesis of new dna from existing dna occur?"


def test_it_merges_paraphrased_answers_and_keeps_different_ones_apart() -> None:
    answers = [
        "origins of replication",
        "At origins of replication",
        "nucleus",
        "cell nucleus",
        "mitochondria",
        "I don't know",
    ]
    result = cluster_answers(answers, NLI, QUESTION)
    labels = result.labels
    assert labels[0] == labels[1]
    assert labels[2] == labels[3]
    assert len({labels[0], labels[2], labels[4]}) == 3
    assert labels[5] is None


def test_it_merges_plural_forms_and_separates_different_numbers() -> None:
    result = cluster_answers(["robber barons", "robber baron", "23", "24"], NLI, "Nickname?")
    assert result.labels[0] == result.labels[1]
    assert result.labels[2] != result.labels[3]


def test_it_picks_the_most_weighted_member_as_representative() -> None:
    result = cluster_answers(["Sinatra", "Frank Sinatra", "Frank Sinatra"], NLI, "who sang it", weights=[1.0, 0.4, 0.4])
    assert result.labels == [0, 0, 0]
    assert result.representatives == ["Sinatra"]


def test_it_requires_entailment_both_ways_in_strict_mode() -> None:
    loose = cluster_answers(["nucleus", "cell nucleus"], NLI, QUESTION, strict=False)
    strict = cluster_answers(["nucleus", "cell nucleus"], NLI, QUESTION, strict=True)
    # Containment of normalised forms always merges, so compare answers without it.
    assert loose.labels[0] == loose.labels[1] and strict.labels[0] == strict.labels[1]
    strict_diff = cluster_answers(["Paris France", "France capital"], NLI, "", strict=True)
    assert strict_diff.labels[0] != strict_diff.labels[1]
