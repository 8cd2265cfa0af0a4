"""Real multi-source claims for truth discovery: Flights and Books.

A claim is one source's value for one task, a task being (object, attribute). Values are
normalised so that spelling variants of the same fact agree: Flights times of day become
"HH:MM" on a 24-hour clock; Books author lists become the sorted set of surnames.
"""

from __future__ import annotations

import csv
import html
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

FLIGHT_ATTRIBUTES = ("sched_dep_time", "act_dep_time", "sched_arr_time", "act_arr_time")


@dataclass(frozen=True)
class Claim:
    source: str
    task: str
    value: str


@dataclass
class ClaimSet:
    name: str
    claims: list[Claim]
    gold: dict[str, str]  # task -> normalised true value (only the labelled tasks)

    @property
    def sources(self) -> list[str]:
        return sorted({c.source for c in self.claims})

    @property
    def tasks(self) -> list[str]:
        return sorted({c.task for c in self.claims})

    def true_source_accuracy(self, min_claims: int = 1) -> dict[str, float]:
        """Share of each source's claims on labelled tasks that equal the gold (sources with
        at least ``min_claims`` labelled claims)."""
        hits: dict[str, list[int]] = {}
        for c in self.claims:
            if c.task in self.gold:
                hits.setdefault(c.source, []).append(int(c.value == self.gold[c.task]))
        return {s: sum(h) / len(h) for s, h in hits.items() if len(h) >= min_claims}


_TIME = re.compile(r"(\d{1,2}):(\d{2})\s*(a\.?m\.?|p\.?m\.?|a\b|p\b|noon)?", re.IGNORECASE)
_TIME_TIGHT = re.compile(r"(\d{1,2}):(\d{2})([ap])(?=[A-Z])")  # "7:10aDec 1"


def normalize_time(raw: str) -> str | None:
    """A time of day as "HH:MM" (24 h), or None for an empty or non-time value.

    Handles "7:10 a.m.", "7:10 AM", "7:10aDec 1", "12/02 7:10 p.m.", "19:10",
    "7:10 p.m. (Estimated runway)"; a date prefix is dropped.
    """
    text = raw.strip()
    if not text:
        return None
    match = _TIME_TIGHT.search(text) or _TIME.search(re.sub(r"\d{1,2}/\d{1,2}(/\d{2,4})?", " ", text))
    if not match:
        return None
    hour, minute = int(match.group(1)), int(match.group(2))
    marker = (match.group(3) or "").lower()
    if marker.startswith("p") and hour < 12:
        hour += 12
    elif marker.startswith("a") and hour == 12:
        hour = 0
    if hour > 23 or minute > 59:
        return None
    return f"{hour:02d}:{minute:02d}"


def load_flights(data_dir: Path) -> ClaimSet:
    """Flights (Li, Dong et al., VLDB 2012; Raha version): 38 sources, 100 flights.

    Tasks are (flight, attribute); ``clean.csv`` is row-aligned with ``dirty.csv`` and gives
    the gold value of every row's task (constant per task).
    """
    folder = Path(data_dir) / "flights"
    with open(folder / "dirty.csv", encoding="utf-8") as fh:
        dirty = list(csv.DictReader(fh))
    with open(folder / "clean.csv", encoding="utf-8") as fh:
        clean = {row["tuple_id"]: row for row in csv.DictReader(fh)}
    claims: list[Claim] = []
    gold: dict[str, str] = {}
    seen: set[tuple[str, str]] = set()
    for row in dirty:
        for attribute in FLIGHT_ATTRIBUTES:
            task = f"{row['flight']}|{attribute}"
            truth = normalize_time(clean[row["tuple_id"]][attribute])
            if truth is not None:
                gold.setdefault(task, truth)
            value = normalize_time(row[attribute])
            if value is None or (row["src"], task) in seen:
                continue
            seen.add((row["src"], task))
            claims.append(Claim(row["src"], task, value))
    return ClaimSet("flights", claims, gold)


_AUTHOR_SPLIT = re.compile(r";|/|&|\band\b|\|")
_NOT_A_NAME = {
    "none",
    "not",
    "available",
    "edited",
    "editor",
    "editors",
    "ed",
    "eds",
    "by",
    "author",
    "phd",
    "jr",
    "sr",
}


def _clean_name(text: str) -> list[str]:
    words = re.findall(r"[a-z][a-z'\-]*", text.lower())
    return [w.replace("'", "") for w in words if w not in _NOT_A_NAME and len(w.replace("'", "")) > 1]


def normalize_authors(raw: str) -> str | None:
    """The sorted, de-duplicated surnames of an author list, joined by ";".

    "Knuth, Donald E.", "Donald E. Knuth" and "knuth, donald e.;" all give "knuth";
    order, punctuation, initials and "Not Available" do not matter.
    """
    text = html.unescape(html.unescape(raw)).strip().lower()
    if not text or text.replace(" ", "") in {"notavailable", "n/a", "na", "unknown", "none"}:
        return None
    surnames: list[str] = []
    if _AUTHOR_SPLIT.search(text):
        for author in _AUTHOR_SPLIT.split(text):
            # "Last, First" names the surname first; "First Last" ends with it.
            words = _clean_name(author.split(",", 1)[0]) if "," in author else _clean_name(author)[-1:]
            surnames.extend(words[-1:] if words else [])
    elif "," in text:
        parts = [p for p in text.split(",") if _clean_name(p)]
        if parts and len(_clean_name(parts[0])) == 1:
            # "Last, First[, Last, First ...]"
            surnames.extend(_clean_name(p)[-1] for p in parts[0::2])
        else:
            # "First Last, First Last"
            surnames.extend(_clean_name(p)[-1] for p in parts)
    else:
        words = _clean_name(text)
        surnames.extend(words[-1:])
    names = sorted(set(surnames))
    return ";".join(names) if names else None


def isbn10(raw: str) -> str:
    """ISBN-13 with the 978 prefix to ISBN-10; ISBN-10 unchanged."""
    digits = re.sub(r"[^0-9Xx]", "", raw).upper()
    if len(digits) == 13 and digits.startswith("978"):
        core = digits[3:12]
        check = (11 - sum((10 - i) * int(d) for i, d in enumerate(core)) % 11) % 11
        return core + ("X" if check == 10 else str(check))
    return digits


def load_books(data_dir: Path) -> ClaimSet:
    """Books (TruthFinder, KDD 2007): bookstores' author lists, gold for 100 books."""
    folder = Path(data_dir) / "books"
    claims: list[Claim] = []
    seen: set[tuple[str, str]] = set()
    with open(folder / "book.txt", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 4:
                continue
            source, isbn, _title, authors = parts
            value = normalize_authors(authors)
            task = isbn10(isbn)
            if value is None or (source, task) in seen:
                continue
            seen.add((source, task))
            claims.append(Claim(source.strip(), task, value))
    gold: dict[str, str] = {}
    with open(folder / "book_golden.txt", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 2:
                continue
            value = normalize_authors(parts[1])
            if value is not None:
                gold[isbn10(parts[0])] = value
    return ClaimSet("books", claims, gold)


def load_claims(dataset: str, data_dir: Path) -> ClaimSet:
    if dataset == "flights":
        return load_flights(data_dir)
    if dataset == "books":
        return load_books(data_dir)
    raise ValueError(f"not a truth discovery data set: {dataset!r}")


def group_by_task(claims: Iterable[Claim]) -> dict[str, list[Claim]]:
    grouped: dict[str, list[Claim]] = {}
    for claim in claims:
        grouped.setdefault(claim.task, []).append(claim)
    return grouped


# Similarities of two normalised values, for TruthFinder's implication between the facts of
# one task (core.engine.reliability.truthfinder).


def set_similarity(a: str, b: str, sep: str = ";") -> float:
    """Jaccard similarity of two separator-joined sets (author surnames)."""
    sa, sb = set(a.split(sep)), set(b.split(sep))
    return len(sa & sb) / len(sa | sb) if sa | sb else 1.0


def time_similarity(a: str, b: str, scale_minutes: float = 5.0) -> float:
    """Times "HH:MM" a few minutes apart support each other; distant ones conflict."""

    def minutes(t: str) -> int:
        h, m = t.split(":")
        return int(h) * 60 + int(m)

    delta = abs(minutes(a) - minutes(b))
    delta = min(delta, 24 * 60 - delta)
    return math.exp(-delta / scale_minutes)
