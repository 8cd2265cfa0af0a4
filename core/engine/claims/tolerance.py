"""Tolerances: values of one item that differ by less than what the mapping declares are one value.

A claim mapping may give an attribute a ``tolerance`` (docs/claims.md):

- ``time``: minutes (``1``: "15:19" and "15:20" are one value; distances wrap at midnight);
- ``date``: days;
- ``number``: an absolute amount (``0.5``) or a relative one (``"1%"`` of the larger magnitude).

It is stored with every claim it loaded (``Claim.tolerance``, as text: ``"1"``, ``"0.5"``,
``"1%"``), so a claim run, the claim pages, MultiRAG and ``manage.py truth_discovery`` read the
very same tolerance.

Grouping (``value_groups``): the resolved value of a claim run first, then the values of one
item by descending support (the number of claims, ties by value), each become the *centre* of
a group in turn, taking every value not yet grouped that lies within the tolerance of that
centre. Each member lies within the tolerance of its centre, so a group spans at most twice
the tolerance and chains never grow (15:18, 15:19, 15:20, 15:21 with one minute is not one
value). The grouping depends on the claims and the resolved value only, so a claim run, the
claim pages and the API group alike.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from core.engine.claims.types import ClaimRecord

TOLERANT_NORMALIZERS = {"time": "minutes", "date": "days", "number": "the number's own unit, or a percentage"}
MINUTES_PER_DAY = 24 * 60
MAX_TIME_MINUTES = MINUTES_PER_DAY // 2  # beyond half a day every time of day would be one value
MAX_RELATIVE_PERCENT = 50.0


class ToleranceError(ValueError):
    """A tolerance that cannot be used (the mapping names the attribute)."""


@dataclass(frozen=True)
class Tolerance:
    normalizer: str
    amount: float  # minutes, days, or the number's unit; a fraction when relative
    relative: bool = False

    @property
    def spec(self) -> str:
        """As stored with the claims: "1", "0.5", "1%"."""
        if self.relative:
            return f"{self.amount * 100:g}%"
        return f"{self.amount:g}"

    def describe(self) -> str:
        unit = {"time": "minute", "date": "day"}.get(self.normalizer)
        if self.relative:
            return f"within {self.spec}"
        if unit:
            return f"within {self.amount:g} {unit}{'' if self.amount == 1 else 's'}"
        return f"within {self.amount:g}"

    def position(self, value: str) -> float | None:
        """The value as a number on the tolerance's scale (None: not comparable)."""
        return _position(self.normalizer, value)

    def same(self, a: str, b: str) -> bool:
        """Whether two values are one value under this tolerance."""
        if a == b:
            return True
        x, y = self.position(a), self.position(b)
        return x is not None and y is not None and self.close(x, y)

    def close(self, a: float, b: float) -> bool:
        gap = abs(a - b)
        if self.normalizer == "time":
            gap = min(gap, MINUTES_PER_DAY - gap)
        limit = self.amount * max(abs(a), abs(b)) if self.relative else self.amount
        return gap <= limit + 1e-9 * max(1.0, limit)


def parse_tolerance(normalizer: str, value: object) -> Tolerance | None:
    """A mapping's tolerance for an attribute normalised by ``normalizer`` (None: exact).

    ``value``: a non-negative number (minutes for times, days for dates, the number's own
    unit for numbers) or, for numbers, a percentage string ("1%"). 0 is exact. Raises
    ToleranceError saying what is allowed."""
    if normalizer not in TOLERANT_NORMALIZERS:
        allowed = ", ".join(f"{n} ({u})" for n, u in TOLERANT_NORMALIZERS.items())
        raise ToleranceError(f"a tolerance applies to the normalisers {allowed}, not to {normalizer!r}")
    relative = False
    if isinstance(value, str) and normalizer == "number" and value.strip().endswith("%"):
        relative = True
        text = value.strip()[:-1].strip()
        try:
            amount = float(text)
        except ValueError:
            raise ToleranceError(f"expected a percentage such as '1%', got {value!r}") from None
    elif isinstance(value, int | float) and not isinstance(value, bool):
        amount = float(value)
    else:
        hint = ' or a percentage such as "1%"' if normalizer == "number" else ""
        raise ToleranceError(f"expected a number of {TOLERANT_NORMALIZERS[normalizer]}{hint}, got {value!r}")
    if not math.isfinite(amount) or amount < 0:
        raise ToleranceError(f"expected a non-negative amount, got {value!r}")
    if relative:
        if amount > MAX_RELATIVE_PERCENT:
            raise ToleranceError(f"a relative tolerance is at most {MAX_RELATIVE_PERCENT:g}%, got {value!r}")
        amount /= 100.0
    elif normalizer == "time" and amount >= MAX_TIME_MINUTES:
        raise ToleranceError(f"a time tolerance is less than {MAX_TIME_MINUTES} minutes, got {value!r}")
    if amount == 0:
        return None
    return Tolerance(normalizer, amount, relative)


def tolerance_of(normalizer: str, spec: str | None) -> Tolerance | None:
    """The tolerance stored with a claim (its normaliser and its ``tolerance`` text); None when
    there is none or it cannot be read (a claim is then compared exactly)."""
    if not spec:
        return None
    text = spec.strip()
    try:
        value: object = text if text.endswith("%") else float(text)
        return parse_tolerance(normalizer, value)
    except (ToleranceError, ValueError):
        return None


def common_tolerance(tolerances: list[Tolerance | None]) -> Tolerance | None:
    """The tolerance of an item whose claims were loaded with possibly different mappings: the
    one they all declare, else none (the claims are compared exactly)."""
    first = tolerances[0] if tolerances else None
    return first if first is not None and all(t == first for t in tolerances) else None


def value_groups(counts: Mapping[str, int], tolerance: Tolerance | None, centres: Sequence[str] = ()) -> dict[str, str]:
    """Each value of one item -> its group's centre: ``centres`` first (a claim run's resolved
    value), then the values by descending support (ties by value); each centre takes the
    values not yet grouped within the tolerance of it. Every value maps to itself without a
    tolerance."""
    if tolerance is None or (len(counts) < 2 and not centres):
        return {v: v for v in counts}
    order = sorted(counts, key=lambda v: (-counts[v], v))
    positions = {v: tolerance.position(v) for v in order}
    out: dict[str, str] = {}
    taken: set[str] = set()
    for centre in [*centres, *order]:
        if centre in out or centre in taken:
            continue
        taken.add(centre)
        if centre in counts:
            out[centre] = centre
        at = positions[centre] if centre in positions else tolerance.position(centre)
        if at is None:
            continue
        for value in order:
            where = positions[value]
            if value not in out and where is not None and tolerance.close(at, where):
                out[value] = centre
    return out


def record_tolerance(records: Sequence[ClaimRecord]) -> Tolerance | None:
    """The tolerance of one item's stored claims (``common_tolerance`` of theirs)."""
    declared = {(r.normalizer, r.tolerance) for r in records}
    return common_tolerance([tolerance_of(normalizer, spec) for normalizer, spec in declared])


def record_groups(records: Sequence[ClaimRecord]) -> dict[str, str]:
    """Each value of one item's stored claims -> its group's value (as ``value_groups``, one
    claim per source; the claims pages and MultiRAG group exactly as a claim run does)."""
    return value_groups(Counter(r.value for r in records), record_tolerance(records))


def _position(normalizer: str, value: str) -> float | None:
    try:
        if normalizer == "time":
            hours, minutes = value.split(":")
            return float(int(hours) * 60 + int(minutes))
        if normalizer == "date":
            return float(dt.date.fromisoformat(value).toordinal())
        if normalizer == "number":
            number = float(value)
            return number if math.isfinite(number) else None
    except ValueError:
        return None
    return None
