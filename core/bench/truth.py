"""Real multi-source claims for truth discovery: Flights and Books.

A claim is one source's value for one item, an item being (subject, attribute). The claims
are read with the engine's claim mappings (core.engine.claims.mapping), the same ones the
product's ``truth_discovery`` command loads the files with, so both paths see the same
claims: Flights times of day become "HH:MM" on a 24-hour clock; Books author lists become
the sorted set of surnames; ISBN-13s become ISBN-10s.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from core.engine.claims.mapping import ClaimMapping
from core.engine.claims.normalize import normalize_isbn, normalize_name_list, normalize_time
from core.engine.claims.tolerance import Tolerance
from core.engine.claims.types import ExtractedClaim, dedupe_first

FLIGHT_ATTRIBUTES = ("sched_dep_time", "act_dep_time", "sched_arr_time", "act_arr_time")
# The claims' attribute names: what an analyst would call them (questions are matched to them).
FLIGHT_ATTRIBUTE_NAMES = {
    "sched_dep_time": "scheduled departure time",
    "act_dep_time": "actual departure time",
    "sched_arr_time": "scheduled arrival time",
    "act_arr_time": "actual arrival time",
}


Task = tuple[str, str]  # (subject, attribute)


@dataclass(frozen=True)
class Claim:
    source: str
    task: Task
    value: str


@dataclass
class ClaimSet:
    name: str
    claims: list[Claim]
    gold: Mapping[Task, str]  # task -> normalised true value (only the labelled tasks)
    # attribute -> the tolerance its mapping declares (values this close are one value)
    tolerances: Mapping[str, Tolerance] = field(default_factory=dict)

    def close(self, task: Task, value: str | None, truth: str) -> bool:
        """Whether ``value`` is ``truth`` within the tolerance of the task's attribute (exact
        without one): the within-tolerance score; the exact score compares the values."""
        if value is None:
            return False
        if value == truth:
            return True
        tolerance = self.tolerances.get(task[1])
        return tolerance is not None and tolerance.same(value, truth)

    @property
    def sources(self) -> list[str]:
        return sorted({c.source for c in self.claims})

    @property
    def tasks(self) -> list[Task]:
        return sorted({c.task for c in self.claims})

    def true_source_accuracy(self, min_claims: int = 1) -> dict[str, float]:
        """Share of each source's claims on labelled tasks that equal the gold (sources with
        at least ``min_claims`` labelled claims)."""
        hits: dict[str, list[int]] = {}
        for c in self.claims:
            if c.task in self.gold:
                hits.setdefault(c.source, []).append(int(c.value == self.gold[c.task]))
        return {s: sum(h) / len(h) for s, h in hits.items() if len(h) >= min_claims}


FLIGHT_TOLERANCE_MINUTES = 1
FLIGHTS_MAPPING = ClaimMapping.from_json(
    {
        "subject": "flight",
        "source": "src",
        # As sources/demo_data/flights-mapping.json: times a minute apart are one value.
        "attributes": {
            name: {"field": column, "normalizer": "time", "tolerance": FLIGHT_TOLERANCE_MINUTES}
            for column, name in FLIGHT_ATTRIBUTE_NAMES.items()
        },
    }
)
BOOKS_MAPPING = ClaimMapping.from_json(
    {
        "subject": "isbn",
        "subject_normalizer": "isbn",
        "source": "store",
        "columns": ["store", "isbn", "title", "authors"],
        "attributes": {"authors": "name-list"},
    }
)
MAPPINGS = {"flights": FLIGHTS_MAPPING, "books": BOOKS_MAPPING}
DATA_FILES = {"flights": ("flights", "dirty.csv"), "books": ("books", "book.txt")}


def read_records(dataset: str, data_dir: Path) -> list[tuple[int, dict[str, str]]]:
    """(line, record) of a data set's claim file: a CSV with a header (Flights) or a
    headerless TSV (Books, one listing per line, no quoting)."""
    folder, name = DATA_FILES[dataset]
    path = Path(data_dir) / folder / name
    columns = MAPPINGS[dataset].columns
    with open(path, encoding="utf-8", newline="") as fh:
        if columns:
            reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
            return [(n, dict(zip(columns, row, strict=False))) for n, row in enumerate(reader, start=1)]
        dict_reader = csv.DictReader(fh)
        return [(n, row) for n, row in enumerate(dict_reader, start=2)]


def extract_claims(mapping: ClaimMapping, records: Iterable[tuple[int, Mapping[str, object]]]) -> list[ExtractedClaim]:
    claims: list[ExtractedClaim] = []
    for line, record in records:
        claims.extend(mapping.extract(record, {"line": line}))
    return dedupe_first(claims)


def _claim_set(
    name: str, extracted: list[ExtractedClaim], gold: dict[tuple[str, str], str], mapping: ClaimMapping
) -> ClaimSet:
    claims = [Claim(str(c.source), (c.subject, c.attribute), c.value) for c in extracted]
    return ClaimSet(name, claims, gold, mapping.tolerances())


def load_flights_gold(data_dir: Path) -> dict[tuple[str, str], str]:
    """Flights' gold: ``clean.csv`` is row-aligned with ``dirty.csv``; the first usable value
    of every (flight, attribute)."""
    gold: dict[tuple[str, str], str] = {}
    with open(Path(data_dir) / "flights" / "clean.csv", encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh):
            for attribute in FLIGHT_ATTRIBUTES:
                truth = normalize_time(row[attribute])
                if truth is not None:
                    gold.setdefault((row["flight"], FLIGHT_ATTRIBUTE_NAMES[attribute]), truth)
    return gold


def load_books_gold(data_dir: Path) -> dict[tuple[str, str], str]:
    """Books' gold author lists for 100 books (ISBN-13 in the file, ISBN-10 in the claims)."""
    gold: dict[tuple[str, str], str] = {}
    with open(Path(data_dir) / "books" / "book_golden.txt", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 2:
                continue
            value, isbn = normalize_name_list(parts[1]), normalize_isbn(parts[0])
            if value is not None and isbn is not None:
                gold[(isbn, "authors")] = value
    return gold


def load_gold(dataset: str, data_dir: Path) -> dict[tuple[str, str], str]:
    if dataset not in MAPPINGS:
        raise ValueError(f"not a truth discovery data set: {dataset!r}")
    return load_flights_gold(data_dir) if dataset == "flights" else load_books_gold(data_dir)


def load_flights(data_dir: Path) -> ClaimSet:
    """Flights (Li, Dong et al., VLDB 2012; Raha version): 38 sources, 100 flights x 4 times."""
    return load_claims("flights", data_dir)


def load_books(data_dir: Path) -> ClaimSet:
    """Books (TruthFinder, KDD 2007): bookstores' author lists, gold for 100 books."""
    return load_claims("books", data_dir)


def load_claims(dataset: str, data_dir: Path) -> ClaimSet:
    gold = load_gold(dataset, data_dir)
    mapping = MAPPINGS[dataset]
    return _claim_set(dataset, extract_claims(mapping, read_records(dataset, data_dir)), gold, mapping)


def group_by_task(claims: Iterable[Claim]) -> dict[Task, list[Claim]]:
    grouped: dict[Task, list[Claim]] = {}
    for claim in claims:
        grouped.setdefault(claim.task, []).append(claim)
    return grouped
