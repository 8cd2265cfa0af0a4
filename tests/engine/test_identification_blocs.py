"""Every dissenting bloc is examined (issue 37): two feeds, each copied by a bloc of sites, one
feed mediocre and followed by the estimate, the other poor; two accurate trackers are the small
bloc the estimate rejects. Looking at the largest dissenting bloc only (the poor feed's copies,
rightly rejected) called the run settled and resolved it below majority vote."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from core.bench.paths import default_data_dir
from core.bench.truth import ClaimSet, load_claims
from core.bench.truth_methods import majority_vote
from core.engine.claims.resolve import Item, resolve_claims

TRACKERS = ("tracker1", "tracker2")
COPIES = tuple(f"copy-{feed}{k}" for feed in "ab" for k in range(3))


def two_feeds(seed: int, items: int = 120) -> tuple[list[tuple[str, Item, str]], dict[Item, str]]:
    """Feed B (right 60% of the time) copied by three sites and mostly taken up by three more;
    feed A (right 35%) copied by three sites; two trackers right 97%, their errors scattered."""
    rng = np.random.default_rng(seed)
    claims: list[tuple[str, Item, str]] = []
    truth: dict[Item, str] = {}
    for i in range(items):
        item = (f"F{i}", "actual departure time")
        truth[item] = "true"
        feed_b = "true" if rng.random() < 0.6 else "b"
        feed_a = "true" if rng.random() < 0.35 else "a"
        for k in range(3):
            claims += [(f"copy-b{k}", item, feed_b), (f"copy-a{k}", item, feed_a)]
        for name in TRACKERS:
            claims.append((name, item, "true" if rng.random() < 0.97 else f"x{rng.integers(100)}"))
        for k in range(3):
            r = rng.random()
            claims.append((f"site{k}", item, feed_b if r < 0.7 else ("true" if r < 0.85 else f"y{rng.integers(100)}")))
    return claims, truth


def accuracy(truths: dict[Item, str], truth: dict[Item, str]) -> float:
    return sum(truths.get(item) == value for item, value in truth.items()) / len(truth)


def plurality(claims: list[tuple[str, Item, str]]) -> dict[Item, str]:
    votes: dict[Item, Counter[str]] = defaultdict(Counter)
    for _, item, value in claims:
        votes[item][value] += 1
    return {item: min(c, key=lambda v, c=c: (-c[v], v)) for item, c in votes.items()}  # type: ignore[misc]  # a lambda with a default


@pytest.mark.parametrize("seed", range(4))
def test_the_accurate_pair_a_copied_feed_outvotes_makes_the_run_unsettled_not_below_majority(seed: int) -> None:
    claims, truth = two_feeds(seed)
    resolution = resolve_claims(claims, "accucopy")
    found = resolution.identification
    assert found is not None and not resolution.identified
    names = sorted(resolution.sources)
    # The largest dissenting bloc is feed A's three copies (rightly rejected); the trackers are
    # a smaller bloc, and it is theirs that agreement does not settle.
    assert [[names[j] for j in bloc] for bloc in found.unsettled_blocs] == [list(TRACKERS)]
    assert resolution.truths() == plurality(claims)  # an equal vote: never below majority vote
    assert 1 <= len(resolution.checks) <= 5
    # The checks proposed first are the trackers' disputed items (the unsettled bloc's).
    assert all(truth[item] in {v for s, i, v in claims if i == item and s in TRACKERS} for item in resolution.checks)


GOLD = default_data_dir() / "flights" / "clean.csv"
SLICE = (
    *("wunderground", "flightaware", "flightwise", "flightview", "panynj", "foxbusiness"),
    *("flights", "orbitz", "travelocity", "weather", "boston", "ua"),
)


def flights_slice(
    name: str, sites: tuple[str, ...]
) -> tuple[ClaimSet, list[tuple[str, Item, str]], Callable[[dict[Item, str]], float]]:
    """The Flights claims of ``sites``, as rows for resolve_claims, and the share of the slice's
    gold items a resolution gets right."""
    full = load_claims("flights", Path(GOLD).parents[1])
    claims = ClaimSet(name, [c for c in full.claims if c.source in sites], full.gold)
    rows = [(c.source, c.task, c.value) for c in claims.claims]
    labelled = [t for t in claims.gold if t in set(claims.tasks)]

    def score(truths: dict[Item, str]) -> float:
        return sum(truths.get(t) == claims.gold[t] for t in labelled) / len(labelled)

    return claims, rows, score


@pytest.mark.skipif(not GOLD.is_file(), reason="the shared Flights gold is not here")
def test_the_two_feeds_flights_slice_is_unsettled_and_one_check_reaches_the_oracle() -> None:
    claims, rows, score = flights_slice("two feeds", SLICE)
    resolution = resolve_claims(rows, "accucopy")
    assert not resolution.identified  # was identified at 0.665 (majority vote 0.658)
    assert score(resolution.truths()) == score(majority_vote(claims).truths)
    first = resolution.checks[0]
    settled = resolve_claims(rows, "accucopy", gold={first: claims.gold[first]})
    assert settled.identified and score(settled.truths()) >= 0.92  # oracle weighted vote 0.933


# "Two feeds b" (scripts/bench_claim_slices.py): an accurate pair (aa, flightstats) that the
# mediocre feed's copies outvote. The pair was settled by five voices, one of them orbitz, an
# accurate site whose times differ from both groups' by a minute: it gave the pair's value on 21
# of their 52 disputed items and the estimate's on none, and leans to the pair, not against it.
SLICE_B = (
    *("airtravelcenter", "flytecomm", "helloflight", "allegiantair", "gofox", "panynj"),
    *("flightstats", "aa", "orbitz", "usatoday", "boston", "weather"),
)


@pytest.mark.skipif(not GOLD.is_file(), reason="the shared Flights gold is not here")
def test_a_slice_whose_accurate_pair_a_copied_feed_outvotes_is_unsettled_not_below_majority() -> None:
    claims, rows, score = flights_slice("two feeds b", SLICE_B)
    resolution = resolve_claims(rows, "accucopy")
    found = resolution.identification
    assert found is not None and not resolution.identified  # was identified at 0.673 (majority vote 0.681)
    names = sorted(resolution.sources)
    assert ["aa", "flightstats"] in [[names[j] for j in bloc] for bloc in found.unsettled_blocs]
    assert score(resolution.truths()) == score(majority_vote(claims).truths)
    assert 1 <= len(resolution.checks) <= 5
    first = resolution.checks[0]
    settled = resolve_claims(rows, "accucopy", gold={first: claims.gold[first]})
    assert settled.identified and score(settled.truths()) >= 0.93  # oracle weighted vote 0.932


def leaning_world(seed: int, items: int = 200) -> tuple[list[tuple[str, Item, str]], dict[Item, str]]:
    """A small "two feeds b": feed R (right 60%) copied by three sites and echoed by a fourth;
    feed Q copied by three sites and taking R's wrong value on most of R's errors; two accurate
    trackers; two sites that mostly take up R; and a site that gives another time (the gate's)
    on 60% of the items and the true one otherwise: on the trackers' disputed items it gives
    their value or a third one, never the estimate's."""
    rng = np.random.default_rng(seed)
    claims: list[tuple[str, Item, str]] = []
    truth: dict[Item, str] = {}
    for i in range(items):
        item = (f"F{i}", "departure")
        truth[item] = "t"
        r = "t" if rng.random() < 0.6 else f"r{i}"
        if r != "t":
            x = rng.random()
            q = r if x < 0.6 else (f"q{i}" if x < 0.9 else "t")
        else:
            q = f"q{i}" if rng.random() < 0.5 else "t"
        for k in range(3):
            claims += [(f"feed-r{k}", item, r), (f"feed-q{k}", item, q)]
        for name in TRACKERS:
            claims.append((name, item, "t"))
        claims.append(("echo", item, r if rng.random() < 0.9 else f"e{i}"))
        for k in range(2):
            claims.append((f"site{k}", item, r if rng.random() < 0.6 else ("t" if rng.random() < 0.5 else f"s{k}{i}")))
        claims.append(("gate", item, f"g{i}" if rng.random() < 0.6 else "t"))
    return claims, truth


@pytest.mark.parametrize("seed", range(1, 5))
def test_a_site_leaning_to_the_trackers_is_no_voice_against_them(seed: int) -> None:
    """The gate site counted as a fifth voice against the trackers (it mostly did not give
    their value): the run was called settled and resolved below majority vote."""
    claims, truth = leaning_world(seed)
    resolution = resolve_claims(claims, "accucopy")
    found = resolution.identification
    assert found is not None and not resolution.identified
    names = sorted(resolution.sources)
    groups = [[names[j] for j in bloc] for bloc in found.unsettled_blocs]
    # The trackers first; the copies of the feed the estimate rests on may be named too (the
    # listing examined as the side that may be wrong).
    assert groups[0] == list(TRACKERS) and all(g == [f"feed-r{k}" for k in range(3)] for g in groups[1:])
    assert resolution.truths() == plurality(claims)
    first = resolution.checks[0]
    settled = resolve_claims(claims, "accucopy", gold={first: truth[first]})
    assert settled.identified and accuracy(settled.truths(), truth) >= 0.95
