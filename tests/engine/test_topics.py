"""Reliability per topic (issue 39): topics found from the queries, per-topic estimates,
and answering that weighs a source by the question's topic."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from core.engine.backends.generation import ExtractiveReader
from core.engine.backends.nli import EmbeddingLexicalNLI
from core.engine.params import parse_params
from core.engine.reliability import get_estimator
from core.engine.reliability.base import MISSING
from core.engine.reliability.identify import proposed_checks
from core.engine.reliability.topical import topical_reliability
from core.engine.steps.memory_retriever import InMemoryRetriever
from core.engine.strategies import EngineContext, get_strategy
from core.engine.topics import LEXICAL_DIM, TopicModel, find_topics, lexical_idf, lexical_vectors, match_topics
from core.engine.types import SourceInfo
from tests.fakes import HashEmbedder

SPORT = [f"which team won the {y} football cup final match" for y in range(1990, 2010)]
MUSIC = [f"which singer recorded the {y} album song of the year" for y in range(1990, 2010)]


def _labels(n_per_topic: int, seed: int = 0) -> np.ndarray:
    """Queries 0..n-1 on topic A, n..2n-1 on topic B; 6 sources; the truth is label 0.
    Source 0 is right on A and wrong on B; sources 1-5 are right 90% of the time."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(2 * n_per_topic):
        on_b = q >= n_per_topic
        row = [1 if on_b else 0]
        row += [0 if rng.random() < 0.9 else 2 + i for i in range(5)]
        rows.append(row)
    return np.array(rows, dtype=np.int64)


def _topical(labels: np.ndarray, n_per_topic: int):
    estimator = get_estimator("iwmv")
    result = estimator.estimate(labels)
    membership = np.zeros((labels.shape[0], 2))
    membership[:n_per_topic, 0] = 1.0
    membership[n_per_topic:, 1] = 1.0
    return result, topical_reliability(labels, result, membership, ["a", "b"], scheme="paper")


def test_a_source_right_on_one_topic_and_wrong_on_another_gets_two_numbers() -> None:
    labels = _labels(30)
    result, topical = _topical(labels, 30)
    overall = result.sources[0].accuracy
    on_a, on_b = topical.accuracy(0, 0), topical.accuracy(1, 0)
    assert on_a > 0.85 and on_b < 0.2, (on_a, on_b)
    assert on_b < overall < on_a
    # The honest sources keep about one number on both topics.
    for j in range(1, 6):
        assert abs(topical.accuracy(0, j) - topical.accuracy(1, j)) < 0.15


def test_a_topic_with_few_answers_stays_near_the_overall_number() -> None:
    labels = _labels(30)
    labels = labels[:33]  # topic B has three queries only, all answered wrong by source 0
    estimator = get_estimator("iwmv")
    result = estimator.estimate(labels)
    membership = np.zeros((33, 2))
    membership[:30, 0] = 1.0
    membership[30:, 1] = 1.0
    topical = topical_reliability(labels, result, membership, ["a", "b"])
    assert topical.accuracy(1, 0) > 0.4  # three wrong answers do not swing it to 0
    assert topical.cells[1][0].answers == 3


def test_topics_are_found_named_and_assign_new_questions() -> None:
    embedder = HashEmbedder()
    texts = SPORT + MUSIC
    fit = find_topics(texts, embedder.encode(texts))
    assert len(fit.model.topics) == 2
    assert set(fit.labels[:20]) != set(fit.labels[20:])  # the two kinds of query are split
    names = " ".join(t.name for t in fit.model.topics)
    assert any(w in names for w in ("football", "cup", "team", "match")) and any(
        w in names for w in ("singer", "album", "song", "recorded")
    )
    share = fit.model.membership(embedder.encode(["which team won the 2015 football cup final"]))[0]
    sport = fit.labels[0]
    assert share[sport] > 0.5 and abs(share.sum() - 1.0) < 1e-9
    # A new run keeps the earlier keys and (curator-edited) names.
    renamed = TopicModel(
        [t.__class__(t.key, f"curated {t.key}", t.centroid, t.size, t.prototypes) for t in fit.model.topics]
    )
    again = match_topics(find_topics(texts[::-1], embedder.encode(texts[::-1])).model, renamed)
    assert sorted(t.name for t in again.topics) == sorted(t.name for t in renamed.topics)
    # Round trip through JSON.
    assert TopicModel.from_dict(fit.model.as_dict()).keys == fit.model.keys


def test_queries_without_groups_are_one_topic_and_tags_define_topics() -> None:
    embedder = HashEmbedder()
    same = [f"which team won the {y} football cup final match" for y in range(1960, 2000)]
    assert len(find_topics(same, embedder.encode(same)).model.topics) == 1
    tags = ["sport"] * 20 + ["music"] * 20
    fit = find_topics(SPORT + MUSIC, embedder.encode(SPORT + MUSIC), tags)
    assert fit.model.source == "tags" and sorted(fit.model.keys) == ["music", "sport"]


def test_a_bloc_that_is_the_majority_on_one_topic_is_flagged_there_and_checks_go_there() -> None:
    # 7 sources; on topic B (queries 20-39) sources 0-3 collude on one wrong answer (label 1)
    # while 4-6 give the truth (label 0); on topic A every source gives the truth.
    rows = []
    for q in range(40):
        if q < 20:
            rows.append([0] * 7)
        else:
            rows.append([1, 1, 1, 1, 0, 0, 0])
    labels = np.array(rows, dtype=np.int64)
    labels[0, 5] = MISSING
    result = get_estimator("iwmv").estimate(labels)
    membership = np.zeros((40, 2))
    membership[:20, 0] = 1.0
    membership[20:, 1] = 1.0
    topical = topical_reliability(labels, result, membership, ["a", "b"])
    assert topical.unsettled() == [1]
    # Not equalised (a majority vote there would follow the bloc too): its checks come first.
    checks = topical.identification[1].checks  # type: ignore[union-attr]  # an unsettled topic has a verdict
    assert set(checks) <= set(range(20, 40)) and checks
    # With the checks answered for the honest side, the topic's estimate turns.
    gold = dict.fromkeys(checks[:5], 0)
    anchored = get_estimator("iwmv").estimate(labels, gold=gold)
    settled = topical_reliability(labels, anchored, membership, ["a", "b"], gold=gold)
    assert settled.accuracy(1, 4) > settled.accuracy(1, 0) + 0.3
    # proposed_checks reads the topical checks too.
    from dataclasses import replace

    from core.engine.reliability.identify import identify

    with_topics = replace(result, identification=identify(labels, result), topical=topical)
    assert set(proposed_checks(with_topics, 3)) & set(range(20, 40))


def _ask(question: str, topic_accuracy: tuple[float, float], strategy: str = "ra-rag"):
    """Two sources: source 0 says Alpha, source 1 says Beta, on every question. Source 0's
    overall accuracy is the higher; per topic, it is reliable on sport only."""
    embedder = HashEmbedder()
    retriever = InMemoryRetriever()
    retriever.add_texts(0, [f"{question} answer: Alpha. Alpha won it."], embedder)
    retriever.add_texts(1, [f"{question} answer: Beta. Beta won it."], embedder)
    fit = find_topics(SPORT + MUSIC, embedder.encode(SPORT + MUSIC))
    sport = fit.labels[0]
    per_topic_0 = [0.0, 0.0]
    per_topic_0[sport], per_topic_0[1 - sport] = topic_accuracy
    sources = [
        SourceInfo(0, "vendor", weight=1.5, answers_count=40, accuracy=0.8, topic_accuracy=tuple(per_topic_0)),
        SourceInfo(1, "desk", weight=1.0, answers_count=40, accuracy=0.7, topic_accuracy=(0.7, 0.7)),
    ]
    ctx = EngineContext(
        retriever, embedder, ExtractiveReader(), EmbeddingLexicalNLI(embedder), sources, topics=fit.model
    )
    chosen = get_strategy(strategy)
    return chosen.answer_checked(question, ctx, parse_params(chosen.Params, {"kappa": 1, "min_relevance": 0.0}))


def test_selection_and_vote_read_the_question_topic() -> None:
    sport_q = "which team won the 2015 football cup final match"
    music_q = "which singer recorded the 2015 album song of the year"
    # kappa = 1: only the most reliable source on the question's topic is consulted.
    on_sport = _ask(sport_q, (0.95, 0.2))
    on_music = _ask(music_q, (0.95, 0.2))
    assert on_sport.trace["selected"] == [0] and "Alpha" in on_sport.answer
    assert on_music.trace["selected"] == [1] and "Beta" in on_music.answer
    topic = on_music.trace["topic"]
    assert topic["moved"] and topic["moved"][0]["source"] == "vendor"
    # One reliability per source: the vendor is asked on both.
    assert _ask(music_q, (0.95, 0.2), "ra-rag-global").trace["selected"] == [0]


def test_a_topic_settled_only_by_outnumbering_still_gets_the_checks() -> None:
    # 9 sources: on topic B (queries 20-39) six colluders (0-5) give one wrong answer against
    # three honest sources (6-8); elsewhere everyone agrees. The six outnumber the three two to
    # one, so agreement "settles" B for the colluders, but nothing checked says so: B's disputed
    # queries are the checks to make.
    rows = [[0] * 9 for _ in range(20)] + [[1] * 6 + [0] * 3 for _ in range(20)]
    labels = np.array(rows, dtype=np.int64)
    result = get_estimator("iwmv").estimate(labels)
    membership = np.zeros((40, 2))
    membership[:20, 0] = 1.0
    membership[20:, 1] = 1.0
    topical = topical_reliability(labels, result, membership, ["a", "b"])
    assert topical.unsettled() == [] and topical.outnumbered() == [1]
    checks = topical.identification[1].checks  # type: ignore[union-attr]  # an outnumbered topic has a verdict
    assert checks and set(checks) <= set(range(20, 40))


def _agreement(right_on_sport: float, right_on_music: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """SPORT + MUSIC queries x 6 sources: whether each agreed with the estimated answer.
    Source 0 agrees on a sport query with probability ``right_on_sport``, on a music one with
    ``right_on_music``; sources 1-5 agree 90% of the time; every source answers every query."""
    rng = np.random.default_rng(seed)
    agree = (rng.random((40, 6)) < 0.9).astype(np.float64)
    agree[:20, 0] = rng.random(20) < right_on_sport
    agree[20:, 0] = rng.random(20) < right_on_music
    return agree, np.ones((40, 6))


def test_topics_are_chosen_by_the_answers_they_explain() -> None:
    embedder = HashEmbedder()
    texts = SPORT + MUSIC
    vectors = embedder.encode(texts)
    # Source 0 is right on sport and wrong on music: the split the text offers explains it.
    fit = find_topics(texts, vectors, agreement=_agreement(0.95, 0.05))
    assert len(fit.model.topics) >= 2
    assert not set(fit.labels[:20]) & set(fit.labels[20:])  # sport and music never share a topic
    share = fit.model.membership(embedder.encode([SPORT[3]]), [SPORT[3]])[0]
    assert share[fit.labels[3]] > 0.5
    # The same texts with no source whose accuracy differs between them: one topic (one
    # reliability per source), whatever split the text offers.
    for seed in range(3):
        assert len(find_topics(texts, vectors, agreement=_agreement(0.6, 0.6, seed)).model.topics) == 1


def test_the_lexical_view_assigns_by_the_words_letters_and_survives_storage_and_matching() -> None:
    embedder = HashEmbedder()
    texts = SPORT + MUSIC
    idf = lexical_idf(texts)
    space = lexical_vectors(texts, idf)
    assert space.shape == (40, LEXICAL_DIM) and np.allclose(np.linalg.norm(space, axis=1), 1.0)
    fit = find_topics(texts, embedder.encode(texts))
    sport = fit.labels[0]
    centroids = [tuple(float(x) for x in space[np.array(fit.labels) == t].mean(axis=0)) for t in range(2)]
    model = TopicModel(
        [replace(t, lexical=centroids[i]) for i, t in enumerate(fit.model.topics)],
        fit.model.temperature,
        view="lexical",
        idf=tuple(float(x) for x in idf),
        lexical_temperature=0.05,
    )
    assert model.lexical
    question = "which team won the 2021 football cup final match"
    # A vector that says music, a text that says sport: the lexical view reads the text.
    music_vector = embedder.encode([MUSIC[0]])
    assert model.membership(music_vector, [question])[0][sport] > 0.5
    assert model.membership(music_vector)[0][sport] < 0.5  # no text: the embedding decides
    stored = TopicModel.from_dict(model.as_dict())
    assert stored.view == "lexical" and stored.lexical
    assert np.allclose(
        stored.membership(music_vector, [question]), model.membership(music_vector, [question]), atol=1e-3
    )
    again = match_topics(stored, model)
    assert again.view == "lexical" and again.lexical and again.keys == model.keys


def test_checks_reach_a_topic_whose_bloc_outnumbers_the_honest_sources_there() -> None:
    # 9 sources, 4 topics of 20 queries, a quarter of the answers missing; the truth is label 0.
    # Colluders 0-2 give one wrong answer on topics A and B (the overall verdict's bloc,
    # outnumbered by the six others); on topic D all six of 0-5 give it against three honest
    # sources (6-8): there the bloc wins the estimate and the honest sources are the "bloc",
    # outnumbered two to one. Overall the honest sources share too few rejected answers to
    # form a bloc, so the overall verdict's checks are all on A and B; they must not take
    # every check.
    from core.engine.reliability import DEFAULT_ESTIMATOR
    from core.engine.reliability.identify import equalise, identify

    n = 20
    labels = np.zeros((4 * n, 9), dtype=np.int64)
    labels[: 2 * n, :3] = 1
    labels[3 * n :, :6] = 1
    labels[np.random.default_rng(0).random(labels.shape) < 0.25] = MISSING
    membership = np.repeat(np.eye(4), n, axis=0)
    estimator = get_estimator(DEFAULT_ESTIMATOR)

    def run(gold: dict[int, int]):
        result = estimator.estimate(labels, gold=gold or None)
        result = equalise(result, identify(labels, result, gold=gold), scheme=estimator.weight_scheme)
        topical = topical_reliability(
            labels, result, membership, list("abcd"), scheme=estimator.weight_scheme, gold=gold
        )
        return replace(result, topical=topical)

    before = run({})
    assert before.identification is not None and before.identification.outnumbered
    assert set(before.identification.checks) <= set(range(2 * n))
    assert before.topical is not None and 3 in before.topical.outnumbered()
    checks = proposed_checks(before, 5)
    assert len(checks) == 5 and set(checks) & set(range(3 * n, 4 * n))
    # Answered, they turn topic D to the honest sources.
    after = run(dict.fromkeys(checks, 0))
    assert after.topical is not None
    assert after.topical.accuracy(3, 6) > after.topical.accuracy(3, 0) + 0.5
    assert sum(after.topical.answers[q] == 0 for q in range(3 * n, 4 * n)) == n


def test_tags_reach_new_questions_through_the_view_that_explains_the_answers() -> None:
    texts = SPORT + MUSIC
    tags = ["sport"] * 20 + ["music"] * 20
    rng = np.random.default_rng(0)
    noise = rng.normal(size=(40, 16))  # an embedding that knows nothing of the tags
    answers = _agreement(0.95, 0.05)
    # The texts' letters tell sport from music, the vectors do not: the lexical view assigns.
    fit = find_topics(texts, noise, tags, agreement=answers)
    assert fit.model.source == "tags" and fit.model.view == "lexical"
    question = "which team won the 2021 football cup final match"
    share = fit.model.membership(rng.normal(size=(1, 16)), [question])[0]
    assert share[fit.model.keys.index("sport")] > 0.7
    # Without answers to judge by, the tags are assigned by the embedding, as before.
    assert find_topics(texts, noise, tags).model.view == "embedding"
    # Vectors that tell the tags apart, texts whose letters do not: the embedding stays.
    codes = [f"item {rng.integers(10**6)} {rng.integers(10**6)}" for _ in range(40)]
    vectors = np.vstack([rng.normal(loc=3.0, size=(20, 16)), rng.normal(loc=-3.0, size=(20, 16))])
    assert find_topics(codes, vectors, tags, agreement=answers).model.view == "embedding"


def test_answers_move_a_query_to_the_topic_its_sources_agreement_points_to() -> None:
    from core.engine.topics import refine_by_answers

    rng = np.random.default_rng(1)
    truth = np.array([0] * 30 + [1] * 30)
    # Texts that barely tell the two subjects apart: a faint shift in one direction.
    space = rng.normal(size=(60, 8))
    space[:, 0] += np.where(truth == 0, 0.6, -0.6)
    space /= np.linalg.norm(space, axis=1, keepdims=True)
    start = truth.copy()
    start[:8] = 1  # the text's split put eight of the first subject's queries with the second
    start[30:36] = 0
    # Sources 0-2 are right on the first subject and wrong on the second; 3-8 right on both.
    rates = np.where(truth[:, None] == 0, 0.95, 0.05) * np.ones((1, 3))
    agree = (rng.random((60, 9)) < np.hstack([rates, np.full((60, 6), 0.9)])).astype(np.float64)
    answered = np.ones((60, 9))
    refined = refine_by_answers(space, start, agree, answered, floor=8)
    assert (refined == truth).sum() >= 58 > (start == truth).sum()
    # Texts that tell the subjects apart, and no source whose agreement differs between them:
    # chance agreement does not pull queries out of their text's topic.
    clear = rng.normal(size=(60, 8))
    clear[:, 0] += np.where(truth == 0, 3.0, -3.0)
    clear /= np.linalg.norm(clear, axis=1, keepdims=True)
    flat = (rng.random((60, 9)) < 0.9).astype(np.float64)
    assert (refine_by_answers(clear, truth, flat, answered, floor=8) != truth).sum() <= 2


def _two_topic_scores(n: int, flipped: float, gap: float) -> tuple[np.ndarray, np.ndarray]:
    """Held-out cosines of 2n queries to two topics: each query ``gap`` closer to its own
    topic, except a share ``flipped`` of each topic's queries that sit ``gap`` closer to the
    other."""
    labels = np.array([0] * n + [1] * n, dtype=np.int64)
    scores = np.full((2 * n, 2), 0.5)
    for i, label in enumerate(labels):
        toward = label if (i % n) >= flipped * n else 1 - label
        scores[i, toward] += gap
    return scores, labels


def test_the_placement_temperature_is_calibrated_on_held_out_queries() -> None:
    from core.engine.topics import MIN_TEMPERATURE, calibrated_temperature

    # A quarter of each topic's held-out queries closer to the other topic: the calibrated
    # membership of a query in the topic it is closer to is 3/4, so exp(gap / T) = 3.
    scores, labels = _two_topic_scores(40, 0.25, 0.1)
    temperature = calibrated_temperature(scores, labels)
    assert abs(temperature - 0.1 / np.log(3.0)) < 1e-3
    share = np.exp(scores / temperature)
    share /= share.sum(axis=1, keepdims=True)
    assert abs(float(share[labels == 0, 0].mean()) - 0.625) < 1e-3  # 3/4 * 3/4 + 1/4 * 1/4
    # Where more of the held-out queries are misplaced the temperature is softer.
    assert calibrated_temperature(*_two_topic_scores(40, 0.4, 0.1)) > temperature * 2
    # Perfectly separated: as sharp as allowed, never sharper.
    assert abs(calibrated_temperature(*_two_topic_scores(40, 0.0, 0.1)) - MIN_TEMPERATURE) < 1e-4


def test_topics_place_new_questions_at_the_temperature_their_held_out_queries_support() -> None:
    from core.engine.topics import _temperature, calibrated_temperature, held_out_scores, placement_temperature

    embedder = HashEmbedder()
    texts = SPORT + MUSIC
    matrix = np.asarray(embedder.encode(texts), dtype=np.float64)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    labels = np.array([0] * 20 + [1] * 20, dtype=np.int64)
    held_out = held_out_scores(matrix, labels)
    # Every query is scored against centroids its own fold did not build.
    for fold in range(5):
        test = np.arange(fold, 40, 5)
        rest = np.setdiff1d(np.arange(40), test)
        centroid = matrix[rest][labels[rest] == 0].sum(axis=0)
        assert np.allclose(held_out[test, 0], matrix[test] @ (centroid / np.linalg.norm(centroid)))
    in_sample = matrix @ np.stack([matrix[labels == t].sum(axis=0) for t in (0, 1)]).T
    assert placement_temperature(matrix, labels, in_sample, prototypes=False) == calibrated_temperature(
        held_out, labels
    )
    # A topic of two queries that fall in one fold: its fold holds no query of it, so those two
    # are not scored (no -1 or 0 standing in for a centroid that was never built), and the
    # temperature is the one the other queries support.
    small = labels.copy()
    small[[3, 8]] = 2
    held_small = held_out_scores(matrix, small)
    same_fold = np.arange(3, 40, 5)  # queries 3 and 8, and the rest of their fold
    assert np.isneginf(held_small[same_fold, 2]).all()
    assert np.isfinite(np.delete(held_small, same_fold, axis=0)).all() and np.isfinite(held_small[:, :2]).all()
    scored = np.setdiff1d(np.arange(40), [3, 8])
    assert placement_temperature(matrix, small, in_sample, prototypes=False) == calibrated_temperature(
        held_small[scored], small[scored]
    )
    # Too few queries to hold folds out: the in-sample rule.
    few = np.array([0, 0, 0, 1, 1, 1], dtype=np.int64)
    assert placement_temperature(matrix[:6], few, in_sample[:6], prototypes=False) == _temperature(in_sample[:6], few)
