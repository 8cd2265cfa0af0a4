"""Claim-level estimation against copy blocs (issue 37): the demo's flights, seven slices of
Flights of our own choosing (12 sites each, each with a bloc of sites that publish one feed;
the "two feeds" ones with two such blocs), full Flights and Books.

For each: majority vote, the product's claim resolution (``resolve_claims`` with AccuCopy: the
estimate where agreement identifies it, an equal vote where it does not), whether the run is
identified, the product after the first 1, 3 and 5 of the checks it proposes are answered
from the gold, and weighted voting with the sites' true accuracies (log-odds weights; the ceiling).
``product_adaptive_N``: the checks answered as the checks page offers them (the current run's
first proposed check answered, the run resolved again, N times).
In memory, no database; seconds on 2 cores.

Tolerance (2026-11-28): the data sets' mappings declare one (Flights: times a minute apart are
one value). ``product`` scores the resolved values exactly against the gold, as the literature
scores Flights; ``product_within_tolerance`` also counts a value within the tolerance of the
gold as right; ``product_no_tolerance`` is the same resolution with every value compared
exactly (the code before the tolerance). Majority vote and the oracle compare values exactly.

    .venv/bin/python scripts/bench_claim_slices.py [--out docs/plots/results/claims-identification.json]

Slices nobody chose (2026-11-29): ``--random N [--seed S]`` draws N slices of 12 Flights sites
instead, each with a bloc of 3-5 sites taken from one group of 3+ sites that mirror one listing
in full Flights (``mirror_pairs``: found without the gold) and the rest drawn from the other
sites, and prints the means. Every row also has ``estimate_alone``: AccuCopy's resolution with
no identification check (what the product would resolve if it trusted every estimate).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


from core.bench.metrics import correlations
from core.bench.paths import default_data_dir
from core.bench.truth import ClaimSet, load_claims
from core.bench.truth_methods import majority_vote
from core.engine.claims.resolve import claim_matrix, resolve_claims
from core.engine.reliability import get_estimator
from core.engine.reliability.identify import mirror_groups

ROOT = Path(__file__).resolve().parents[1]
SLICES = {
    "slice-feed5": [
        *("flightview", "panynj", "foxbusiness", "allegiantair", "gofox"),
        *("flights", "flightstats", "orbitz", "travelocity", "weather", "mytripandmore", "boston"),
    ],
    "slice-feed4": [
        *("helloflight", "airtravelcenter", "myrateplan", "flytecomm"),
        *("flightstats", "flights", "orbitz", "travelocity", "usatoday", "boston", "wunderground", "flightarrival"),
    ],
    "slice-two-feeds": [
        *("wunderground", "flightaware", "flightwise", "flightview", "panynj", "foxbusiness"),
        *("flights", "orbitz", "travelocity", "weather", "boston", "ua"),
    ],
    "slice-feed5-feed3": [
        *("flightview", "panynj", "foxbusiness", "allegiantair", "gofox", "helloflight", "airtravelcenter"),
        *("myrateplan", "flightstats", "quicktrip", "orbitz", "mytripandmore"),
    ],
    # Three more "two feeds" slices (2026-11-28), chosen after the check examined every bloc:
    # two blocs of 3 sites copying two feeds, an accurate pair, 4 others.
    "slice-two-feeds-b": [
        *("airtravelcenter", "flytecomm", "helloflight", "allegiantair", "gofox", "panynj"),
        *("flightstats", "aa", "orbitz", "usatoday", "boston", "weather"),
    ],
    "slice-two-feeds-c": [
        *("flightaware", "wunderground", "flightwise", "myrateplan", "helloflight", "flytecomm"),
        *("flights", "ifly", "travelocity", "flightarrival", "boston", "usatoday"),
    ],
    "slice-two-feeds-d": [
        *("flightview", "gofox", "foxbusiness", "flightaware", "wunderground", "flightwise"),
        *("quicktrip", "CO", "mytripandmore", "weather", "flightarrival", "boston"),
    ],
}


def accuracy(claims: ClaimSet, truths: dict[tuple[str, str], str]) -> float:
    labelled = [t for t in claims.gold if t in set(claims.tasks)]
    return round(sum(truths.get(t) == claims.gold[t] for t in labelled) / len(labelled), 4)


def oracle(claims: ClaimSet) -> dict[tuple[str, str], str]:
    true = claims.true_source_accuracy(1)
    scores: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for c in claims.claims:
        a = min(max(true.get(c.source, 0.5), 0.01), 0.99)
        scores[c.task][c.value] += max(math.log(a / (1 - a)), 0.0) + 1e-6
    return {t: max(sorted(s), key=s.__getitem__) for t, s in scores.items()}


def accuracy_within(claims: ClaimSet, truths: dict[tuple[str, str], str]) -> float:
    labelled = [t for t in claims.gold if t in set(claims.tasks)]
    return round(sum(claims.close(t, truths.get(t), claims.gold[t]) for t in labelled) / len(labelled), 4)


def estimate_alone(claims: ClaimSet) -> float:
    """AccuCopy's resolution with no identification check (exact values)."""
    matrix, items, values, _sources = claim_matrix([(c.source, c.task, c.value) for c in claims.claims])
    answers = get_estimator("accucopy").estimate(matrix).answers
    return accuracy(claims, {items[i]: values[items[i]][a] for i, a in enumerate(answers) if a is not None})


def random_slices(full: ClaimSet, n: int, seed: int, size: int = 12) -> dict[str, list[str]]:
    """``n`` slices of ``size`` sites: a bloc of 3-5 sites from one mirror group of 3+ in
    ``full`` (which group and which of its sites drawn by ``seed``), the rest from the sites
    outside that group."""
    matrix, _items, _values, sources = claim_matrix([(c.source, c.task, c.value) for c in full.claims])
    feeds = [[sources[j] for j in group] for group in mirror_groups(matrix) if len(group) >= 3]
    rng = random.Random(seed)
    out = {}
    for k in range(n):
        feed = rng.choice(feeds)
        bloc = rng.sample(feed, rng.randint(3, min(5, len(feed))))
        others = [s for s in sources if s not in feed]
        out[f"random-{seed}-{k}"] = bloc + rng.sample(others, size - len(bloc))
    return out


def evaluate(name: str, claims: ClaimSet) -> dict[str, object]:
    rows = [(c.source, c.task, c.value) for c in claims.claims]
    product = resolve_claims(rows, "accucopy", tolerances=claims.tolerances)
    exact = resolve_claims(rows, "accucopy")
    true = claims.true_source_accuracy(3)
    names = sorted(true)
    out: dict[str, object] = {
        "data": name,
        "sites": len(claims.sources),
        "mv": accuracy(claims, majority_vote(claims).truths),
        "product": accuracy(claims, product.truths()),
        "product_within_tolerance": accuracy_within(claims, product.truths()),
        "product_no_tolerance": accuracy(claims, exact.truths()),
        "identified": product.identified,
        "estimate_alone": estimate_alone(claims),
        "oracle_wmv": accuracy(claims, oracle(claims)),
        "spearman": round(
            correlations([product.sources[s].accuracy for s in names], [true[s] for s in names])["spearman"], 3
        ),
    }
    for n in (1, 3, 5):
        gold = {item: claims.gold[item] for item in product.checks[:n] if item in claims.gold}
        checked = resolve_claims(rows, "accucopy", gold=gold, tolerances=claims.tolerances)
        out[f"checks_{n}"] = len(gold)
        out[f"product_{n}_checks"] = accuracy(claims, checked.truths())
        out[f"spearman_{n}_checks"] = round(
            correlations([checked.sources[s].accuracy for s in names], [true[s] for s in names])["spearman"], 3
        )
    # As a curator answers them on the checks page: the current run's first proposed check, the
    # run resolved again, the next one from the new run's proposals.
    adaptive: dict[tuple[str, str], str] = {}
    run = product
    for n in range(1, 6):
        todo = [item for item in run.checks if item not in adaptive and item in claims.gold]
        if todo:
            adaptive[todo[0]] = claims.gold[todo[0]]
            run = resolve_claims(rows, "accucopy", gold=adaptive, tolerances=claims.tolerances)
        if n in (1, 3, 5):
            out[f"product_adaptive_{n}"] = accuracy(claims, run.truths())
            out[f"identified_adaptive_{n}"] = run.identified
    return out


MEANS = (
    "mv",
    "product",
    "estimate_alone",
    "product_1_checks",
    "product_3_checks",
    "product_5_checks",
    "product_adaptive_1",
    "product_adaptive_3",
    "product_adaptive_5",
    "oracle_wmv",
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--random", type=int, default=0, help="N slices drawn at random instead (see above)")
    parser.add_argument("--seed", type=int, default=0, help="the draw of --random")
    args = parser.parse_args()
    data = default_data_dir()
    full = load_claims("flights", data)
    results = []
    if args.random:
        for name, sites in random_slices(full, args.random, args.seed).items():
            results.append(
                {
                    **evaluate(
                        name, ClaimSet(name, [c for c in full.claims if c.source in sites], full.gold, full.tolerances)
                    ),
                    "sites_listed": sorted(sites),
                }
            )
        means = {k: round(statistics.mean(float(r[k]) for r in results), 4) for k in MEANS}  # type: ignore[arg-type]  # the keys hold numbers
        print(json.dumps({"slices": len(results), "identified": sum(bool(r["identified"]) for r in results), **means}))
        if args.out:
            args.out.write_text(
                json.dumps({"random": args.random, "seed": args.seed, "means": means, "results": results}, indent=1)
                + "\n"
            )
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "flights"
        folder.mkdir()
        shutil.copy(ROOT / "sources" / "demo_data" / "flights.csv", folder / "dirty.csv")
        shutil.copy(data / "flights" / "clean.csv", folder / "clean.csv")
        results.append(evaluate("demo flights", load_claims("flights", Path(tmp))))
    for name, sites in SLICES.items():
        results.append(
            evaluate(name, ClaimSet(name, [c for c in full.claims if c.source in sites], full.gold, full.tolerances))
        )
    results.append(evaluate("full flights", full))
    results.append(evaluate("books", load_claims("books", data)))
    keys = list(results[0])
    print("| " + " | ".join(keys) + " |")
    print("|" + " --- |" * len(keys))
    for r in results:
        print("| " + " | ".join(str(r[k]) for k in keys) + " |")
    if args.out:
        args.out.write_text(json.dumps({"machine": "see docs/benchmarks.md", "results": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
