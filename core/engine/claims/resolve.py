"""Truth discovery over claims: every (subject, attribute) resolved to a value, with confidence,
and every source's reliability, by any registered estimator.

A claim set becomes the estimators' queries x sources label matrix: one row per item
(subject, attribute), sorted; one column per source; a cell holds the code of the source's
value among the item's values ordered by descending popularity (ties by value), so the
benchmark's truth-discovery path and the product's claim-level estimation run build the
very same matrix from the same claims (``core.bench.truth_methods`` calls this function).

Confidence of a resolved value: the estimator's own posterior where it has one (one-coin,
AccuCopy); otherwise the share of the item's positive voting weight behind the value.

Tolerances (``core.engine.claims.tolerance``): where the mapping gives an attribute one, the
values of an item within it of the resolved value are that value: one entry of the item's
values (its sources counted once, its shares summed, every spelling kept in
``ValueSupport.spellings``), no conflict, and a source claiming one of them agrees with the
resolution; the other values are grouped alike around the most claimed. The estimate itself
compares values exactly: on Flights the feeds differ by a minute systematically and the gold
is one feed's exact time, so a minute's difference is the evidence that tells a copied feed
from an accurate tracker (grouping before the estimate cost the demo's checked run 0.97 -> 0.70
of the items, docs/claims.md "Tolerances").

Authorities (optional, a curator's setting; docs/claims.md "Authorities"): sources a curator
declares authoritative for what they list (an airline's own site for its flights, a registry
for its records). An item that authorities claim, all with one value, and that no checked
value fixes, is resolved to that value as a checked item is: it anchors the estimate
(``authority_values``). Agreement alone never makes a source an authority; without the
setting nothing changes.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Generic, TypeVar

import numpy as np
import numpy.typing as npt

from core.engine.claims.tolerance import Tolerance, value_groups
from core.engine.reliability import (
    GOLD_NONE,
    MISSING,
    UNIFORM_PRIOR,
    Dependence,
    Prior,
    SourceReliability,
    get_estimator,
)
from core.engine.reliability.base import Identification, ReliabilityResult, gold_counts, gold_vector
from core.engine.reliability.identify import DEFAULT_CHECKS, equalise, identify, listing_probes, with_agreement_fit

S = TypeVar("S", bound=Hashable)
Item = tuple[str, str]  # (subject, attribute)


@dataclass(frozen=True)
class ValueSupport(Generic[S]):
    value: str  # the value (with a tolerance: the group's, the resolved one or its most backed spelling)
    sources: tuple[S, ...]
    share: float  # of the item's positive voting weight
    spellings: tuple[str, ...] = ()  # the values claimed within the tolerance of ``value`` (it first)

    def holds(self, value: str) -> bool:
        """Whether a claimed value is this one (or one of its spellings within the tolerance)."""
        return value == self.value or value in self.spellings


@dataclass(frozen=True)
class Resolution(Generic[S]):
    subject: str
    attribute: str
    value: str
    confidence: float
    values: tuple[ValueSupport[S], ...]  # every value claimed, the resolved one first

    @property
    def conflicting(self) -> bool:
        return len(self.values) > 1

    def agrees(self, value: str) -> bool:
        """Whether a claimed value is the resolved one (or within its tolerance)."""
        return value == self.value or (
            bool(self.values) and self.values[0].value == self.value and self.values[0].holds(value)
        )


@dataclass
class ClaimResolution(Generic[S]):
    items: list[Resolution[S]]
    sources: dict[S, SourceReliability]
    estimator: str
    iterations: int
    converged: bool
    dependence: list[tuple[S, S, Dependence]] = field(default_factory=list)
    # Whether agreement identifies the estimate (core.engine.reliability.identify); when it
    # does not, every value was resolved by an equal vote of the sources (a majority vote), or,
    # with checked values, by a vote weighed by each source's record on them (checked_vote_weights).
    identification: Identification | None = None
    checks: list[Item] = field(default_factory=list)  # the items whose true value settles it, best first
    contested: list[Item] = field(default_factory=list)  # the items where the two groups disagree

    @property
    def identified(self) -> bool:
        return self.identification is None or self.identification.identified

    def truths(self) -> dict[Item, str]:
        return {(r.subject, r.attribute): r.value for r in self.items}


def value_codes(claims: Iterable[tuple[S, Item, str]]) -> tuple[list[Item], dict[Item, list[str]], list[S]]:
    """Items (sorted), each item's values by descending popularity (ties by value), and the
    sources (in first-seen order sorted by their text)."""
    counts: dict[Item, Counter[str]] = defaultdict(Counter)
    sources: set[S] = set()
    for source, item, value in claims:
        counts[item][value] += 1
        sources.add(source)
    items = sorted(counts)
    values = {item: sorted(counts[item], key=lambda v, c=counts[item]: (-c[v], v)) for item in items}  # type: ignore[misc]  # a lambda with a default (this item's counts) cannot be inferred
    return items, values, sorted(sources, key=str)


def claim_matrix(
    claims: Sequence[tuple[S, Item, str]],
) -> tuple[npt.NDArray[np.int64], list[Item], dict[Item, list[str]], list[S]]:
    """The claims as the estimators read them: an items x sources matrix whose cell is the code
    of the value the source claims for the item (its first claim; ``value_codes``' order),
    MISSING where it claims none; with the items, their values and the sources of ``value_codes``."""
    items, values, sources = value_codes(claims)
    row = {item: i for i, item in enumerate(items)}
    col = {s: j for j, s in enumerate(sources)}
    code = {item: {v: k for k, v in enumerate(values[item])} for item in items}
    matrix = np.full((len(items), len(sources)), MISSING, dtype=np.int64)
    for source, item, value in claims:
        i, j = row[item], col[source]
        if matrix[i, j] == MISSING:
            matrix[i, j] = code[item][value]
    return matrix, items, values, sources


TolerancesOf = Mapping[str, Tolerance] | Callable[[Item], Tolerance | None]


def _tolerance_of(tolerances: TolerancesOf | None) -> Callable[[Item], Tolerance | None]:
    if tolerances is None:
        return lambda _item: None
    if isinstance(tolerances, Mapping):
        table = tolerances
        return lambda item: table.get(item[1])
    return tolerances


def resolve_claims(
    claims: Sequence[tuple[S, Item, str]],
    estimator: str,
    *,
    prior: Prior = UNIFORM_PRIOR,
    gold: Mapping[Item, str] | None = None,
    progress: Callable[[str], None] | None = None,
    tolerances: TolerancesOf | None = None,
    authorities: Collection[S] = (),
) -> ClaimResolution[S]:
    """Resolve every item of ``claims`` (source, (subject, attribute), normalised value).

    ``gold`` fixes the truth of some items (the estimators' gold anchors); a gold value no
    source claims counts as "none of the values". A source claims an item at most once
    (the first claim counts). ``tolerances`` (attribute -> Tolerance, or a function of the
    item): the values within it of the resolved value are that value (see the module).
    ``authorities``: sources whose value fixes an item as a checked value does, where they
    all give one value and ``gold`` does not fix it (see the module)."""
    tolerance_of = _tolerance_of(tolerances)
    if authorities:
        gold = {**authority_values(claims, authorities), **(gold or {})}
    matrix, items, values, sources = claim_matrix(claims)
    row = {item: i for i, item in enumerate(items)}
    col = {s: j for j, s in enumerate(sources)}
    code = {item: {v: k for k, v in enumerate(values[item])} for item in items}
    gold_rows = {row[item]: code[item].get(value, GOLD_NONE) for item, value in (gold or {}).items() if item in row}
    if progress:
        progress(f"estimating {len(sources)} sources over {len(items)} items with {estimator}")
    chosen = get_estimator(estimator)
    alone = chosen.estimate(matrix, prior=prior) if gold_rows else None
    confirmed = _confirmed(matrix, alone, gold_rows) if alone is not None else None
    # As text runs do: an estimate that rests on which group of sources is right (a bloc of
    # copiers as large as the sources it outvotes) amplifies neither group; every item is
    # resolved by an equal vote until checked values settle it (a vote weighed by the checks,
    # where there are some and they have not settled it yet).
    if confirmed is not None:
        result, found = confirmed
    else:
        result = chosen.estimate(matrix, prior=prior, gold=gold_rows)
        found = identify(matrix, result, gold=gold_rows)
        if not gold_rows:
            # Agreement alone: the accuracies must also fit how often independent sources agree
            # (an estimate anchored by checked values is not held to it; see _confirmed).
            found = with_agreement_fit(matrix, result, found)
    if (
        alone is not None
        and found.identified
        and not with_agreement_fit(matrix, alone, identify(matrix, alone)).identified
    ):
        # Settled by checks where agreement alone left it open: the next checks ask whether the
        # listing the estimate rests on is right (identify.listing_probes), then the verdicts' own.
        probes = listing_probes(matrix, result, gold_rows, same=_same_value(items, values, tolerance_of))
        if probes:
            found = replace(found, checks=(probes + [q for q in found.checks if q not in probes])[:DEFAULT_CHECKS])
    result = equalise(result, found, scheme=chosen.weight_scheme)
    weights = np.maximum(np.array(result.weights, dtype=float), 0.0)
    if not found.identified:
        # Checked values are evidence agreement is not: until they settle the estimate, each
        # site's vote is its record on them (see checked_vote_weights); without any, an equal vote.
        if gold_rows:
            weights = checked_vote_weights(matrix, gold_rows)
            values_word = "value" if len(gold_rows) == 1 else "values"
            kind = f"checked or authority-settled {values_word}" if authorities else f"checked {values_word}"
            found = replace(found, reason=found.reason + CHECKED_VOTE_NOTE.format(n=len(gold_rows), values=kind))
            # The weight each source reports is the one its vote had (its accuracy stays the
            # equal, unsettled one), so a value's share can be rebuilt from the sources' weights.
            result = replace(
                result,
                sources=[replace(s, weight=float(weights[j])) for j, s in enumerate(result.sources)],
            )
        result = replace(result, answers=_weighted_plurality(matrix, gold_rows, weights), confidence=[])
    resolved: list[Resolution[S]] = []
    checked = {row[item]: value for item, value in (gold or {}).items() if item in row}
    for i, item in enumerate(items):
        label = result.answers[i]
        if label is None and i not in checked:
            continue
        providers: dict[int, list[S]] = defaultdict(list)
        mass: dict[int, float] = defaultdict(float)
        for j in np.flatnonzero(matrix[i] >= 0).tolist():
            providers[int(matrix[i, j])].append(sources[j])
            mass[int(matrix[i, j])] += float(weights[j])
        total = sum(mass.values())
        shares = {
            k: (mass[k] / total if total > 0 else len(providers[k]) / sum(map(len, providers.values())))
            for k in providers
        }
        if label is None:  # a checked value that no source claims: the item resolves to it, every claim wrong
            order = sorted(providers, key=lambda k: (-shares[k], k))
            value, confidence = checked[i], 1.0
        else:
            order = [label] + sorted((k for k in providers if k != label), key=lambda k: (-shares[k], k))
            value = values[item][label]
            # A checked item is known: confidence 1 (not its share of an equal vote).
            confidence = (
                1.0 if i in checked else (result.confidence[i] if result.confidence else shares.get(label, 0.0))
            )
        supports = tuple(
            ValueSupport(values[item][k], tuple(sorted(providers[k], key=str)), float(shares[k])) for k in order
        )
        tolerance = tolerance_of(item) if len(supports) > 1 else None
        if tolerance is not None:
            supports = _grouped(supports, value, tolerance)
            if supports[0].spellings and label is not None and i not in checked:
                # The resolved value holds other spellings: the posterior not on the exact
                # value is shared among the other values by their voting weight, and the
                # spellings' part of it joins the value's (with shares alone: the group's share).
                exact = shares.get(label, 0.0)
                rest = 1.0 - exact
                joined = supports[0].share - exact
                confidence = confidence + (1.0 - confidence) * (joined / rest if rest > 1e-12 else 0.0)
        resolved.append(
            Resolution(
                subject=item[0],
                attribute=item[1],
                value=value,
                confidence=float(confidence),
                values=supports,
            )
        )
    return ClaimResolution(
        items=resolved,
        sources={s: result.sources[j] for s, j in col.items()},
        estimator=estimator,
        iterations=result.iterations,
        converged=result.converged,
        dependence=[(sources[d.a], sources[d.b], d) for d in result.dependence],
        identification=found,
        checks=[items[q] for q in found.checks],
        contested=[items[q] for q in found.contested],
    )


def _confirmed(
    matrix: npt.NDArray[np.int64], alone: ReliabilityResult, gold_rows: Mapping[int, int]
) -> tuple[ReliabilityResult, Identification] | None:
    """The estimate made without the checked values, where every checked value confirms it and
    agreement, with the checks' verdicts on its groups, identifies it (its gold counts added),
    with that verdict; None otherwise.

    Checks that confirm an identified estimate must not move it. A run started from the checked
    values alone can: a checked value that the estimate already had right lifts the sources
    that listed it, and an accurate source that did not list that item starts at the prior
    mean, so the run can settle in another basin (a random slice of Flights: 0.9375 identified,
    0.7975 after its first check confirmed it; docs/claims.md "Checks that confirm"). Kept, it
    costs what a run without checks does; otherwise the checked run also pays for this estimate,
    and for a second identification check where every checked value agrees but that is unsettled."""
    if any(alone.answers[q] != label for q, label in gold_rows.items()):
        return None
    # The checks' verdict on its groups too; an estimate whose accuracies do not fit agreement
    # was not identified without the checks, so checks that agree with it do not keep it.
    found = with_agreement_fit(matrix, alone, identify(matrix, alone, gold=gold_rows))
    if not found.identified:
        return None
    checked, right = gold_counts(matrix, gold_vector(gold_rows, matrix.shape[0]))
    sources = [
        replace(source, gold_answers=int(checked[j]), gold_agreements=int(right[j]))
        for j, source in enumerate(alone.sources)
    ]
    return replace(alone, sources=sources), found


def _same_value(
    items: Sequence[Item], values: Mapping[Item, Sequence[str]], tolerance_of: Callable[[Item], Tolerance | None]
) -> Callable[[int, int, int], bool]:
    """Whether two coded values of an item are one value within the item's tolerance."""

    def same(q: int, a: int, b: int) -> bool:
        tolerance = tolerance_of(items[q])
        return tolerance is not None and tolerance.same(values[items[q]][a], values[items[q]][b])

    return same


def authority_values(claims: Iterable[tuple[S, Item, str]], authorities: Collection[S]) -> dict[Item, str]:
    """The items the authorities settle: those that authorities claim, every authority with the
    same value (a source's first claim of an item counts, as in ``resolve_claims``); an item
    they disagree on is left to the estimate."""
    chosen = set(authorities)
    seen: set[tuple[S, Item]] = set()
    values: dict[Item, set[str]] = defaultdict(set)
    for source, item, value in claims:
        if source in chosen and (source, item) not in seen:
            seen.add((source, item))
            values[item].add(value)
    return {item: next(iter(held)) for item, held in values.items() if len(held) == 1}


def _grouped(supports: tuple[ValueSupport[S], ...], resolved: str, tolerance: Tolerance) -> tuple[ValueSupport[S], ...]:
    """An item's values (the resolved one first) with the values within the tolerance of
    each other merged (``tolerance.value_groups``, the resolved value the first centre): one
    entry per group, its sources and shares summed (a source claims an item once), shown as
    the resolved value or, for another group, its spelling with the largest share."""
    groups = value_groups({v.value: len(v.sources) for v in supports}, tolerance, centres=(resolved,))
    members: dict[str, list[ValueSupport[S]]] = defaultdict(list)
    for support in supports:
        members[groups[support.value]].append(support)
    out = []
    for held in members.values():
        held.sort(key=lambda v: (v.value != resolved, -v.share, -len(v.sources), v.value))
        out.append(
            ValueSupport(
                held[0].value,
                tuple(sorted((s for v in held for s in v.sources), key=str)),
                float(sum(v.share for v in held)),
                tuple(v.value for v in held) if len(held) > 1 else (),
            )
        )
    first = [v for v in out if v.value == resolved]
    rest = sorted((v for v in out if v.value != resolved), key=lambda v: (-v.share, v.value))
    return (*first, *rest)


CHECKED_VOTE_NOTE = (
    " Until checks settle it, each item goes to the value with the most support, each site's vote weighed"
    " by its record on the {n} {values}: (right + 1) / (checked + 2), a site never checked 1/2."
)


def checked_vote_weights(matrix: npt.NDArray[np.int64], gold_rows: Mapping[int, int]) -> npt.NDArray[np.float64]:
    """Per site: its Laplace-smoothed accuracy on the checked items, (right + 1) / (checked + 2),
    as a vote weight (a site with no checked answer: 1/2, so every site keeps a vote).

    An unsettled run without checks gives every site one equal vote, since agreement could not
    tell the groups apart. Checked values are a curator's evidence, so they weigh the sites they
    check even before the estimate is settled: five checks on which the accurate trackers were
    right and a copied feed of four wrong outvote that feed instead of counting it four times.
    The vote is linear and smoothed so that one or two checks move it only a little (one
    checked value: 2/3 against 1/3), unlike the estimate's log-odds weights, which would give a
    site that listed a single checked value every item."""
    checked, right = gold_counts(matrix, gold_vector(gold_rows, matrix.shape[0]))
    out: npt.NDArray[np.float64] = (right + 1.0) / (checked + 2.0)
    return out


def _weighted_plurality(
    matrix: npt.NDArray[np.int64], gold_rows: Mapping[int, int], weights: npt.NDArray[np.float64]
) -> list[int | None]:
    """Each item's value with the most weight behind it (ties: the most claimed, as values are
    coded by descending popularity, ties by value); equal weights give the most claimed value.
    A checked item keeps its checked value (None: none of the values)."""
    out: list[int | None] = []
    for row in matrix:
        given = row >= 0
        if not given.any():
            out.append(None)
            continue
        mass = np.bincount(row[given], weights=weights[given])
        out.append(int(np.flatnonzero(mass >= mass.max() - 1e-12)[0]))
    for q, label in gold_rows.items():
        out[q] = int(label) if label >= 0 else None
    return out
