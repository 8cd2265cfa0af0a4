"""Full Flights where AccuCopy's copy model lands in the copied-feed basin (issue 37).

At some settings of the copy model (prior alpha, copy rate c, n false values; see
``bench_flights_errors.py --sweep``) AccuCopy on full Flights follows one feed that five sites
publish. For those settings, one outside that basin and the defaults' neighbour: the run's
accuracy, whether the identification check calls it identified, the groups it leaves unsettled,
and the accuracy after its first 1 / 3 / 5 proposed checks (answered from the gold).

    .venv/bin/python scripts/bench_copied_feed_basin.py --out docs/plots/results/claims-copied-feed-basin.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.bench.paths import default_data_dir
from core.bench.truth import ClaimSet, load_claims
from core.engine.claims.resolve import ClaimResolution, resolve_claims
from core.engine.reliability.accucopy import AccuCopy, CopyModel
from core.engine.reliability.base import ESTIMATORS

SETTINGS = [
    (0.05, 0.8, 10.0),
    (0.05, 0.9, 100.0),
    (0.1, 0.8, 10.0),
    (0.1, 0.9, 100.0),
    (0.1, 0.95, 1000.0),
    (0.2, 0.8, 10.0),
    (0.2, 0.95, 1000.0),
    (0.05, 0.95, 1000.0),  # the 0.7875 basin: no copied feed rated first
    (0.2, 0.8, 100.0),  # the defaults
]


def accuracy(claims: ClaimSet, resolution: ClaimResolution[str]) -> float:
    truths = resolution.truths()
    return round(sum(truths.get(item) == value for item, value in claims.gold.items()) / len(claims.gold), 4)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    full = load_claims("flights", default_data_dir())
    rows = [(c.source, c.task, c.value) for c in full.claims]
    default = ESTIMATORS.get("accucopy")
    out: list[dict[str, Any]] = []
    try:
        for prior, rate, false_values in SETTINGS:
            model = CopyModel(prior=prior, rate=rate, false_values=false_values)
            ESTIMATORS._items["accucopy"] = lambda model=model: AccuCopy(copy=model)  # type: ignore[misc]  # swapped for a moment, as the sweep does
            run = resolve_claims(rows, "accucopy", tolerances=full.tolerances)
            names = list(run.sources)
            found = run.identification
            entry: dict[str, Any] = {
                "prior": prior,
                "rate": rate,
                "false_values": false_values,
                "product": accuracy(full, run),
                "identified": run.identified,
                "unsettled": [[names[j] for j in bloc] for bloc in (found.unsettled_blocs if found else [])],
                "checks": len(run.checks),
            }
            for k in (1, 3, 5):
                gold = {item: full.gold[item] for item in run.checks[:k] if item in full.gold}
                checked = resolve_claims(rows, "accucopy", gold=gold, tolerances=full.tolerances)
                entry[f"product_{k}_checks"] = accuracy(full, checked)
                entry[f"identified_{k}_checks"] = checked.identified
            print(json.dumps(entry), flush=True)
            out.append(entry)
    finally:
        ESTIMATORS._items["accucopy"] = default
    if args.out:
        args.out.write_text(
            json.dumps({"machine": "see docs/claims.md", "settings": out}, separators=(",", ":")) + "\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
