"""Build the demo's structured data (sources/demo_data/flights.csv) from the Flights data set
(../shared/data/flights/dirty.csv): every listing of the first FLIGHTS flights (in file order)
by DEMO_SOURCES, ten of its 38 sources chosen to show what claim-level estimation is for:
two accurate trackers, a mostly accurate travel site, one middling, a bloc of three sites that
copy one feed, and a pair that copies another, worse one. Deterministic; not run by the
product (the file is committed).

    .venv/bin/python scripts/build_demo_claims.py [--data ../shared/data] [--out sources/demo_data/flights.csv]

Flights: Li, Dong et al., "Truth finding on the deep web: is the problem solved?" (VLDB 2012),
in the Raha version (Mahdavi et al., 2019), Apache-2.0.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FLIGHTS = 25
DEMO_SOURCES = (
    "flightstats",
    "flights",
    "orbitz",
    "travelocity",
    "flightview",
    "panynj",
    "foxbusiness",
    "helloflight",
    "airtravelcenter",
    "boston",
)


def build(data: Path, out: Path) -> int:
    with open(data / "flights" / "dirty.csv", encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    chosen: list[str] = []
    for row in rows:
        if row["flight"] not in chosen:
            chosen.append(row["flight"])
    keep = set(chosen[:FLIGHTS])
    kept = [r for r in rows if r["flight"] in keep and r["src"] in DEMO_SOURCES]
    with open(out, "w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0].keys()))
        writer.writeheader()
        writer.writerows(kept)
    return len(kept)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, default=ROOT / "sources" / "demo_data" / "flights.csv")
    args = parser.parse_args()
    print(f"{build(args.data, args.out)} listings written to {args.out}")


if __name__ == "__main__":
    main()
