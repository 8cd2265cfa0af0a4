"""Full Flights' wrong items, attributed to a stage, and AccuCopy's copy model swept (issue 37).

Attribution: the product's claim resolution (AccuCopy, the mapping's tolerance) on full
Flights; each item it gets wrong is put in one stage:

- "no site holds the truth": no source claims the gold value;
- otherwise the item is voted again with AccuCopy's rule (log-odds weight floored at zero,
  a copy's vote multiplied by prod (1 - c P(dependent)) over the more accurate sources giving
  the same value) under four swaps, using the gold (an oracle, to locate the loss, not a
  method): (A) the sites' true accuracies with the product's dependence; (B) the estimated
  accuracies with mirrors (sites identical on 50+ items, ``identify.mirror_pairs``) counted
  once; (C) both; (D) true accuracies per attribute, mirrors once. The stage is the first
  swap that wins it: "estimate" (A), "copy detection" (B), "estimate + copy detection" (C),
  "estimate per attribute" (D), else "vote (agreement cannot reach it)".

Each row also says whether the gold's actual time equals the flight's gold scheduled time.

Sweep (``--sweep``): AccuCopy's CopyModel (prior alpha of dependence, copy rate c, number n of
false values) over a grid, through ``resolve_claims``: full Flights, the demo (and with its 3
proposed checks), the seven slices of ``bench_claim_slices.py`` (and with 1 check).

    .venv/bin/python scripts/bench_flights_errors.py --out docs/plots/results/claims-flights-wrong-items.json
    .venv/bin/python scripts/bench_flights_errors.py --sweep --out docs/plots/results/claims-copy-model-sweep.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import shutil
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.bench.paths import default_data_dir
from core.bench.truth import ClaimSet, load_claims
from core.engine.claims.resolve import resolve_claims
from core.engine.reliability.accucopy import AccuCopy, CopyModel
from core.engine.reliability.base import ESTIMATORS
from core.engine.reliability.identify import mirror_pairs

ROOT = Path(__file__).resolve().parents[1]
SCHEDULED = {"actual departure time": "scheduled departure time", "actual arrival time": "scheduled arrival time"}
Task = tuple[str, str]


def slices_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_claim_slices", ROOT / "scripts" / "bench_claim_slices.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def attribute(claims: ClaimSet) -> dict[str, Any]:
    rows = [(c.source, c.task, c.value) for c in claims.claims]
    result = resolve_claims(rows, "accucopy", tolerances=claims.tolerances)
    resolved = result.truths()
    sources = sorted(result.sources, key=str)
    estimated = {s: result.sources[s].accuracy for s in sources}
    true = claims.true_source_accuracy(1)
    hits: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for c in claims.claims:
        if c.task in claims.gold:
            hits[(c.source, c.task[1])].append(c.value == claims.gold[c.task])
    true_attribute = {k: sum(v) / len(v) for k, v in hits.items()}
    dependence: dict[tuple[str, str], float] = defaultdict(float)
    for a, b, d in result.dependence:
        dependence[(a, b)] = dependence[(b, a)] = d.probability
    listed: dict[Task, dict[str, str]] = defaultdict(dict)
    for c in claims.claims:
        listed[c.task].setdefault(c.source, c.value)
    mirror_of = _mirror_groups(listed, sources)
    rank = {s: j for j, s in enumerate(sources)}

    def vote(task: Task, accuracy: Callable[[str], float], discount: Callable[[str, list[str]], float]) -> str:
        score: dict[str, float] = defaultdict(float)
        before: dict[str, list[str]] = defaultdict(list)
        for s in sorted(listed[task], key=lambda s: (-accuracy(s), rank[s])):
            value, a = listed[task][s], min(max(accuracy(s), 0.01), 0.99)
            score[value] += (max(math.log(a / (1 - a)), 0.0) + 1e-6 * a) * discount(s, before[value])
            before[value].append(s)
        return max(sorted(score), key=score.__getitem__)

    def copy_discount(s: str, before: list[str]) -> float:
        return math.prod(1 - 0.8 * dependence[(s, b)] for b in before)

    def mirrors_once(s: str, before: list[str]) -> float:
        return 0.0 if any(mirror_of[b] == mirror_of[s] for b in before) else 1.0

    wrong = []
    labelled = [t for t in claims.gold if t in listed]
    for task in sorted(labelled):
        gold = claims.gold[task]
        if resolved.get(task) == gold:
            continue
        holders = sorted(s for s, v in listed[task].items() if v == gold)
        row: dict[str, Any] = {
            "item": list(task),
            "gold": gold,
            "resolved": resolved.get(task),
            "holders": holders,
            "sites": len(listed[task]),
            "resolved_by": sum(v == resolved.get(task) for v in listed[task].values()),
            "within_tolerance": claims.close(task, resolved.get(task), gold),
            "gold_equals_scheduled": task[1] in SCHEDULED and claims.gold.get((task[0], SCHEDULED[task[1]])) == gold,
        }
        if not holders:
            row["stage"] = "no site holds the truth"
        else:
            swaps = {
                "true_accuracy": vote(task, lambda s: true.get(s, 0.5), copy_discount) == gold,
                "mirrors_once": vote(task, lambda s: estimated[s], mirrors_once) == gold,
                "both": vote(task, lambda s: true.get(s, 0.5), mirrors_once) == gold,
                "true_per_attribute": vote(task, partial(_per_attribute, true_attribute, true, task[1]), mirrors_once)
                == gold,
            }
            row.update(swaps)
            stages = ("estimate", "copy detection", "estimate + copy detection", "estimate per attribute")
            row["stage"] = next(
                (stage for stage, won in zip(stages, swaps.values(), strict=True) if won),
                "vote (agreement cannot reach it)",
            )
        wrong.append(row)
    return {
        "accuracy": round(1 - len(wrong) / len(labelled), 4),
        "labelled": len(labelled),
        "stages": dict(Counter(r["stage"] for r in wrong)),
        "gold_actual_equals_scheduled": {
            "wrong": sum(r["gold_equals_scheduled"] for r in wrong),
            "all_actual_items": sum(
                t[1] in SCHEDULED and claims.gold.get((t[0], SCHEDULED[t[1]])) == claims.gold[t] for t in labelled
            ),
        },
        "wrong": wrong,
    }


def _per_attribute(
    by_attribute: dict[tuple[str, str], float], overall: dict[str, float], attribute: str, source: str
) -> float:
    return by_attribute.get((source, attribute), overall.get(source, 0.5))


def _mirror_groups(listed: dict[Task, dict[str, str]], sources: list[str]) -> dict[str, int]:
    """Each source's group of mirrors (connected components of ``identify.mirror_pairs``)."""
    column = {s: j for j, s in enumerate(sources)}
    labels = np.full((len(listed), len(sources)), -1, dtype=np.int64)
    for i, task in enumerate(sorted(listed)):
        code = {v: k for k, v in enumerate(sorted(set(listed[task].values())))}
        for s, v in listed[task].items():
            labels[i, column[s]] = code[v]
    parent = list(range(len(sources)))

    def find(x: int) -> int:
        while parent[x] != x:
            x = parent[x]
        return x

    for a, b in zip(*np.nonzero(mirror_pairs(labels)), strict=True):
        parent[find(int(a))] = find(int(b))
    return {s: find(column[s]) for s in sources}


def sweep(grid: list[tuple[float, float, float]]) -> list[dict[str, Any]]:
    slices = slices_module()
    data = default_data_dir()
    full = load_claims("flights", data)
    sets: dict[str, ClaimSet] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "flights"
        folder.mkdir()
        shutil.copy(ROOT / "sources" / "demo_data" / "flights.csv", folder / "dirty.csv")
        shutil.copy(data / "flights" / "clean.csv", folder / "clean.csv")
        sets["demo flights"] = load_claims("flights", Path(tmp))
    for name, sites in slices.SLICES.items():
        sets[name] = ClaimSet(name, [c for c in full.claims if c.source in sites], full.gold, full.tolerances)
    sets["full flights"] = full
    default = ESTIMATORS.get("accucopy")
    out = []
    try:
        for prior, rate, false_values in grid:
            model = CopyModel(prior=prior, rate=rate, false_values=false_values)
            ESTIMATORS._items["accucopy"] = lambda model=model: AccuCopy(copy=model)  # type: ignore[misc]  # the sweep swaps the registered default for a moment
            results: dict[str, dict[str, Any]] = {}
            for name, claims in sets.items():
                rows = [(c.source, c.task, c.value) for c in claims.claims]
                resolved = resolve_claims(rows, "accucopy", tolerances=claims.tolerances)
                entry: dict[str, Any] = {
                    "product": slices.accuracy(claims, resolved.truths()),
                    "identified": resolved.identified,
                }
                if name != "full flights":
                    k = 3 if name == "demo flights" else 1
                    gold = {i: claims.gold[i] for i in resolved.checks[:k] if i in claims.gold}
                    checked = resolve_claims(rows, "accucopy", gold=gold, tolerances=claims.tolerances)
                    entry[f"product_{k}_checks"] = slices.accuracy(claims, checked.truths())
                results[name] = entry
            print(prior, rate, false_values, json.dumps(results, separators=(",", ":")), flush=True)
            out.append({"prior": prior, "rate": rate, "false_values": false_values, "results": results})
    finally:
        ESTIMATORS._items["accucopy"] = default
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--sweep", action="store_true", help="sweep AccuCopy's copy model instead")
    args = parser.parse_args()
    report: dict[str, Any]
    if args.sweep:
        grid = [
            (prior, rate, n)
            for prior in (0.05, 0.1, 0.2, 0.5)
            for rate in (0.5, 0.8, 0.9, 0.95)
            for n in (10.0, 100.0, 1000.0)
        ]
        report = {"machine": "see docs/claims.md", "sweep": sweep(grid)}
    else:
        report = {"machine": "see docs/claims.md", **attribute(load_claims("flights", default_data_dir()))}
        print(json.dumps({k: v for k, v in report.items() if k != "wrong"}, indent=1))
        for row in report["wrong"]:
            print(row["item"], row["gold"], row["resolved"], row["stage"], row["holders"])
    if args.out:
        args.out.write_text(json.dumps(report, separators=(",", ":")) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
