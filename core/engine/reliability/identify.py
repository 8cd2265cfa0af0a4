"""Is an estimate identified by agreement, or does it rest on which group of sources is right?

Reliability from agreement assumes that sources err independently: then the answer most
independent sources give is probably right, and a source's accuracy is how often it gives
it. A group of sources that repeats one another (copiers, a colluding campaign, sources fed
by one poisoned feed) breaks that: if the answers split into two groups that each agree
with themselves, the data fit "group A is right, group B repeats a false story" and "group
B is right, group A repeats one" about equally well, and every unsupervised estimator
(IWMV, one-coin EM, even AccuCopy, whose copy detection starts from the current truth)
then follows the larger group. With a colluding majority it trusts the colluders and
distrusts everyone else: the estimate is upside down, and nothing in the agreement says so.

This module finds that situation and what would settle it:

1. **Dissent blocs.** Two sources that share the same *non-estimated* answer on many of the
   queries they both answered (at least MIN_SHARED, and at least SHARED_SHARE of them) are
   dependent: independent sources rarely make the same mistake (open-ended answers have many
   wrong values). Each connected group of such pairs is a dissent bloc B, and every one is
   examined (largest first): two feeds copied by two blocs can put one bloc on the estimate's
   side and the other against it, while accurate sources form a third, small bloc that the
   estimate rejects; looking at the largest bloc only called that estimate settled. The
   estimate is identified only when every bloc's verdict is. Sources that mirror one listing
   (identical on 50+ queries) form a bloc from a smaller share (MIRROR_SHARED_SHARE).
2. **The estimate's side** A: the other sources that give the estimated answer on most of
   the *contested* queries (where at least two members of B agree on an answer the estimate
   rejects).
3. **What could choose between them**: reference answers (gold, confirmed feedback) on
   disputed queries. When they side with the estimate's group: identified. When there are
   none, only the groups' sizes chose the estimate: **not identified**, whichever group is
   larger (with an honest majority too: agreement cannot tell "a few sources copy one
   story" from "many sources copy one story"; measured on PoisonedRAG with the extractive
   reader, the colluders' self-agreement (0.66-0.75) did not differ from the honest
   sources' (0.70-0.81), so self-consistency is not a usable signature either). When they
   side with the other group (the estimator still followed the larger one): not identified,
   said so. A checked query counts for the group more of whose members gave its reference
   answer, where that answer is not the most given of both groups. Without reference answers,
   independent sources that outnumber the bloc settle it (see MIN_SIDE_UNITS); a group of
   mirrors whose listing the estimate itself mirrors is not one of them (the estimate may rest
   on a copied feed), nor is another group of mirrors that does not give the estimate's answer,
   nor a source that gives the bloc's answer more often than the estimate's (it leans to the
   bloc, even when most of its answers are a third one).
4. **Checks that settle it** (active gold): the contested queries, those answered by the
   most sources of both groups first (one reference answer there scores every member of
   both groups at once); the unsettled blocs' checks first, a few of each in turn.
5. **The listing the estimate rests on.** A group of mirrors whose listing the estimate
   mirrors is never a dissent bloc (the estimate rejects none of its answers), so steps 1-3
   never ask whether *it* is the wrong side; the other blocs' verdicts can then all be
   "settled" by sources that echo its common errors (AccuCopy on full Flights, at some
   settings of its copy model: five sites publishing one feed rated 0.997, the accurate
   trackers the bloc, outnumbered). So each such listing is examined as the side that may be
   wrong: where the other sources (mirrors once) most often give another answer than the
   listing the estimate follows, the sources giving that answer are counted as independent
   voices only across the estimate's own dependence (mirrors or sharing rejected answers: one
   voice), which can only merge voices and so favours the estimate; when they still reach
   MIN_SIDE_UNITS and OUTNUMBER times the listing's voices (it and those leaning to it), and
   no checked answer sides with the listing, the estimate is not identified, the listing is
   an unsettled group and its disputed queries are checks (after the unsettled blocs').

A run that is not identified must not amplify its winning group: `equalise` gives every
source one reliability and one equal vote (a majority vote), so the product never does worse
than majority vote, until checks arrive.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from core.engine.reliability.base import (
    MISSING,
    Identification,
    LabelMatrix,
    ReliabilityResult,
    as_label_matrix,
    interleave,
    interval_holding,
)
from core.engine.reliability.cells import AnswerCells, FloatArray
from core.engine.reliability.weights import voting_weight

MIN_SHARED = 3  # at least this many shared rejected answers make a pair dependent ...
SHARED_SHARE = 0.3  # ... and at least this share of the queries both answered
DEFAULT_CHECKS = 5
# Without reference answers, agreement settles an estimate only when its side has at least
# MIN_SIDE_UNITS independent sources and at least OUTNUMBER times as many as the dissenting
# bloc (sources that mirror one another count once): then the bloc, if it were right, would
# need the larger side to be a bloc of its own, a campaign at least twice its size.
MIN_SIDE_UNITS = 5
OUTNUMBER = 2.0
# Sources that answer at least this many queries in common ... (two independent sources right
# 95% of the time still agree on all of 20 items one time in eight, on all of 50 one in 170)
MIRROR_MIN_SHARED = 50
MIRROR_MAX_DIFFER = 0.02  # ... and differ on at most this share of them mirror one listing
# Mirrors that share answers the estimate rejects on at least this share of their common
# queries are a dissent bloc (other sources need SHARED_SHARE).
MIRROR_SHARED_SHARE = 0.15

NOT_IDENTIFIED_MESSAGE = (
    "These reliabilities rest on which group of sources is right: the answers split into groups "
    "that each agree with themselves, and only the groups' sizes chose between them. "
    "A few checked answers would settle it."
)


def _pair_counts(labels: LabelMatrix, truth: npt.NDArray[np.int64]) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(both answered, same answer, same rejected answer) for every pair of sources, from the
    one-hot answer cells the estimators use; a query without an estimated answer rejects nothing."""
    cells = AnswerCells.of(labels)
    both, same = cells.pair_constants()
    rejected = np.ones((cells.n_queries, cells.n_labels))
    estimated = truth != MISSING
    rejected[~estimated] = 0.0
    given = estimated & (truth < cells.n_labels)  # an estimated answer nobody gave rejects every answer
    rejected[np.flatnonzero(given), truth[given]] = 0.0
    same_rejected = cells.same_weighted(rejected.reshape(-1))
    same = same.copy()  # the cells cache it
    np.fill_diagonal(same, 0.0)
    np.fill_diagonal(same_rejected, 0.0)
    return both, same, same_rejected


def mirror_pairs(labels: LabelMatrix) -> npt.NDArray[np.bool_]:
    """Which pairs of sources mirror one listing (symmetric, false on the diagonal): they
    answered at least MIRROR_MIN_SHARED queries in common and differ on at most
    MIRROR_MAX_DIFFER of them. Sources that err independently differ somewhere on hundreds of
    items; sites that publish one feed differ nowhere (Flights' copiers). Needs no truth."""
    cells = AnswerCells.of(as_label_matrix(labels))
    shared, same = cells.pair_constants()
    edges: npt.NDArray[np.bool_] = (shared >= MIRROR_MIN_SHARED) & (shared - same <= MIRROR_MAX_DIFFER * shared)
    np.fill_diagonal(edges, False)
    return edges


def mirror_groups(labels: LabelMatrix) -> list[list[int]]:
    """The groups of two or more sources that mirror one listing (``mirror_pairs``, connected)."""
    return _components(mirror_pairs(labels))


def independent_units(group: Collection[int], mirrors: npt.NDArray[np.bool_]) -> int:
    """How many independent voices ``group`` has: its sources, mirrors of one another counted once."""
    members = sorted(group)
    if not members:
        return 0
    sub = mirrors[np.ix_(members, members)]
    return sum(1 for c in _components(sub) if c) + int(np.sum(~sub.any(axis=1)))


def _components(edges: np.ndarray) -> list[list[int]]:
    n = edges.shape[0]
    seen = np.zeros(n, dtype=bool)
    out: list[list[int]] = []
    for start in range(n):
        if seen[start] or not edges[start].any():
            continue
        component, stack = [], [start]
        seen[start] = True
        while stack:
            node = stack.pop()
            component.append(node)
            for other in np.flatnonzero(edges[node] & ~seen):
                seen[other] = True
                stack.append(int(other))
        out.append(sorted(component))
    return out


def _loyal(labels: LabelMatrix, bloc: list[int], bloc_answer: Mapping[int, int]) -> list[int]:
    """The bloc's members that give the bloc's answer on most of the contested queries they
    answered: the coherent alternative the estimate rejects (a dependence component can chain
    several copy groups that disagree with one another; only one of them is an alternative)."""
    loyal = []
    for j in bloc:
        answered = [q for q in bloc_answer if labels[q, j] != MISSING]
        if answered and 2 * sum(1 for q in answered if labels[q, j] == bloc_answer[q]) > len(answered):
            loyal.append(j)
    return loyal


def _opposed(
    labels: LabelMatrix, truth: npt.NDArray[np.int64], in_bloc: npt.NDArray[np.bool_], bloc_answer: Mapping[int, int]
) -> list[int]:
    """The sources outside the bloc that answered its contested queries, mostly did not give its
    answer there, and gave the estimate's answer more often than the bloc's: the voices the
    bloc's story has against it. They need not mostly agree with the estimate (with noisy
    readers many give a third answer), but a source that gives the bloc's answer more often than
    the estimate's leans to the bloc, even when most of its answers are a third one (on a
    Flights slice, "two feeds b" in scripts/bench_claim_slices.py, an accurate site gave an
    accurate pair's value on 21 of their 52 disputed items, the estimate's on none and another
    time on the rest: counted against the pair, it made the fifth voice that called settled an
    estimate below majority vote, which the pair's value was on all 52)."""
    out = []
    for j in np.flatnonzero(~in_bloc):
        answered = [q for q in bloc_answer if labels[q, j] != MISSING]
        with_bloc = sum(1 for q in answered if labels[q, j] == bloc_answer[q])
        with_estimate = sum(1 for q in answered if labels[q, j] == truth[q])
        if answered and 2 * with_bloc < len(answered) and with_estimate > with_bloc:
            out.append(int(j))
    return out


def _mean_agreement(group: list[int], both: np.ndarray, same: np.ndarray) -> float:
    rates = [same[a, b] / both[a, b] for i, a in enumerate(group) for b in group[i + 1 :] if both[a, b] > 0]
    return float(np.mean(rates)) if rates else 0.0


def identify(
    votes: LabelMatrix,
    result: ReliabilityResult,
    gold: Mapping[int, int] | Collection[int] = (),
    *,
    checks: int = DEFAULT_CHECKS,
) -> Identification:
    """Whether ``result`` (an estimate of ``votes``) is identified by agreement; see the module.

    Every dissent bloc is examined, largest first: the estimate is identified only when each
    bloc's verdict is. The verdict reported is the first unsettled bloc's (the largest bloc's
    when all are settled); ``checks`` are drawn from every unsettled bloc in turn, then from
    the blocs settled only by outnumbering, then from the others, at most ``checks`` in all.

    ``gold``: the checked rows, with their gold labels when known (a mapping); a row whose
    reference answer matches none of the answers (GOLD_NONE, below zero) settles nothing."""
    labels = as_label_matrix(votes)
    n_queries, n_sources = labels.shape
    truth = np.array([MISSING if a is None else int(a) for a in result.answers], dtype=np.int64)
    if n_queries == 0 or n_sources < 3 or len(truth) != n_queries:
        return Identification(True, "Too few sources or queries for groups to form.")
    both, same, same_rejected = _pair_counts(labels, truth)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(both > 0, same_rejected / np.maximum(both, 1), 0.0)
    mirrors = mirror_pairs(labels)
    # Sources that mirror one listing are dependent by construction: a smaller share of shared
    # answers the estimate rejects makes them a bloc (an accurate pair that a copied feed
    # outvotes disagrees with the estimate on a quarter of its items).
    dependent = (same_rejected >= MIN_SHARED) & ((share >= SHARED_SHARE) | (mirrors & (share >= MIRROR_SHARED_SHARE)))
    blocs = sorted((c for c in _components(dependent) if len(c) >= 2), key=len, reverse=True)
    if not blocs and not mirrors.any():
        return Identification(True, "No group of sources shares answers that the estimate rejects.")
    settling = (
        {int(q) for q, label in gold.items() if int(label) >= 0}
        if isinstance(gold, Mapping)
        else {int(q) for q in gold}
    )
    checked = sorted(q for q in settling if 0 <= q < n_queries and truth[q] != MISSING)
    resting = _resting(labels, truth, mirrors)
    stories = [_bloc_answers(labels, truth, bloc, settling) for bloc in blocs]
    verdicts: list[Identification] = []
    for k, bloc in enumerate(blocs):
        verdicts.append(
            _examine(labels, truth, bloc, stories[k], checked, (both, same), mirrors, resting, checks=checks)
        )
    # The listing the estimate rests on is examined as the side that may be wrong: the estimate
    # rejects none of its answers, so it is never a dissent bloc (on full Flights, at some settings
    # of AccuCopy's copy model, the estimate follows one copied feed and the accurate trackers are
    # the bloc, outnumbered by sites that echo the feed's common errors). Only a verdict that
    # leaves it unsettled counts: it adds that listing as an unsettled group, its checks after
    # the unsettled blocs' (an identified verdict changes nothing the run reports).
    linked = dependent | mirrors
    listings = [
        _examine_resting(labels, truth, group, linked, mirrors, settling, checked, (both, same), checks=checks)
        for group in _components(mirrors)
        if resting[group[0]]
    ]
    disputed = [v for v in listings if not v.identified]
    if not verdicts and not disputed:
        return Identification(True, "No group of sources shares answers that the estimate rejects.")
    split = [v for v in verdicts if not v.identified]
    unsettled = split + disputed
    if not unsettled:
        found = next((v for v in verdicts if v.dissent_bloc), verdicts[0])
    else:
        found = unsettled[0]
        if len(unsettled) > 1:
            found = replace(
                found,
                reason=found.reason
                + (
                    f" ({len(unsettled)} groups of sources are unsettled.)"
                    if disputed
                    else f" ({len(unsettled)} groups of sources each share answers the estimate rejects; each is unsettled.)"
                ),
            )
    # The unsettled blocs' checks first (a few on each), then the disputed listings', then those of
    # the blocs settled only by outnumbering, then the others'.
    settled = [v for v in verdicts if v.identified]
    ordered = interleave([v.checks for v in split])
    for group in (disputed, [v for v in settled if v.outnumbered], [v for v in settled if not v.outnumbered]):
        ordered += [q for q in interleave([v.checks for v in group]) if q not in ordered]
    return replace(
        found,
        contested=sorted({q for v in verdicts + disputed for q in v.contested}),
        checks=ordered[: max(checks, 0)],
        unsettled_blocs=[v.dissent_bloc for v in unsettled],
    )


def _examine_resting(
    labels: LabelMatrix,
    truth: npt.NDArray[np.int64],
    group: list[int],
    linked: npt.NDArray[np.bool_],
    mirrors: npt.NDArray[np.bool_],
    settling: set[int],
    checked: list[int],
    pairs: tuple[FloatArray, FloatArray],
    *,
    checks: int,
) -> Identification:
    """The verdict on a group of mirrors whose listing the estimate mirrors, taken as the side
    that may be wrong. Its disputed queries: those where the estimate gives the group's answer
    and the other sources, mirrors counted once, most often give another. The voices against it
    are the sources that mostly give that other answer there, counted as independent only across
    the estimate's own dependence (mirrors, or sharing answers it rejects: one voice); when at
    least MIN_SIDE_UNITS of them outnumber the group and those leaning to it OUTNUMBER to one,
    the estimate follows one listing against agreement, and only checks can settle it."""
    both, same = pairs
    n_sources = labels.shape[1]
    in_group = np.zeros(n_sources, dtype=bool)
    in_group[group] = True
    unit = _unit_of(linked)
    mirror_unit = _unit_of(mirrors)
    other: dict[int, int] = {}
    for q in range(labels.shape[0]):
        if truth[q] == MISSING or q in settling:
            continue
        row = labels[q]
        given = row[group]
        given = given[given != MISSING]
        if not len(given) or int(np.bincount(given).argmax()) != truth[q]:
            continue
        best = _outvoting(row, ~in_group, mirror_unit, int(truth[q]))
        if best is not None:
            other[q] = best
    if not other and not checked:
        return Identification(True, "No other answer is given by more sources where the estimate follows one listing.")
    voices: dict[int, list[int]] = {}  # unit -> each answering member: 1 against, -1 leaning to it, 0
    leaning: list[int] = list(group)
    against: list[int] = []
    for j in np.flatnonzero(~in_group):
        answered = [q for q in other if labels[q, j] != MISSING]
        if not answered:
            continue
        with_group = sum(1 for q in answered if labels[q, j] == truth[q])
        with_other = sum(1 for q in answered if labels[q, j] == other[q])
        says = (
            1 if 2 * with_group < len(answered) and with_other > with_group else (-1 if with_group > with_other else 0)
        )
        voices.setdefault(unit[int(j)], []).append(says)
        if says > 0:
            against.append(int(j))
        elif says < 0:
            leaning.append(int(j))
    group_units = {unit[j] for j in group} | {u for u, says in voices.items() if 2 * says.count(-1) > len(says)}
    against_units = {u for u, says in voices.items() if u not in group_units and 2 * says.count(1) > len(says)}
    contested = sorted(other)

    def reach(q: int) -> tuple[int, int, int]:
        row = labels[q]
        a = int(sum(1 for j in group if row[j] == truth[q]))
        b = int(sum(1 for j in against if row[j] == other[q]))
        return (a + b, min(a, b), -q)

    found = Identification(
        True,
        "",
        estimate_side=sorted(leaning),
        dissent_bloc=list(group),
        contested=contested,
        checks=sorted(contested, key=reach, reverse=True)[: max(checks, 0)],
        agreement=(_mean_agreement(sorted(leaning), both, same), _mean_agreement(against, both, same)),
    )
    for_group, for_other = _gold_verdicts(labels, truth, set(checked), list(group), against)
    found = replace(found, settled_by_gold=for_group + for_other)
    if for_other >= for_group and for_other:
        return replace(
            found,
            identified=False,
            reason=f"Checked answers side against the listing the estimate follows on {for_other} of the queries "
            f"where it is disputed ({for_group} with it). More checked answers on the disputed queries would settle it.",
        )
    if for_group:
        return replace(
            found,
            reason=f"Checked answers side with the listing the estimate follows on {for_group} of "
            "the queries where it is disputed.",
        )
    n_against, n_group = len(against_units), len(group_units)
    if n_against >= MIN_SIDE_UNITS and n_against >= OUTNUMBER * n_group:
        return replace(
            found,
            identified=False,
            reason=f"The estimate follows the listing that a group of {len(group)} sources publishes as one, where "
            f"{n_against} independent sources give another answer ({n_group} side with it): agreement does not "
            "make that listing right. A few checked answers would settle it.",
        )
    return replace(found, reason="The listing the estimate follows is not disputed by enough independent sources.")


def _outvoting(
    row: npt.NDArray[np.int64], voters: npt.NDArray[np.bool_], mirror_unit: list[int], answer: int
) -> int | None:
    """The value that more independent voices among ``voters`` give on ``row`` than ``answer``
    (mirrors counted once: ``mirror_unit``): their most given value (ties to the smaller), None
    when that is ``answer`` or no more of them give it."""
    units: dict[int, set[int]] = {}
    for j in np.flatnonzero(voters & (row != MISSING)):
        units.setdefault(int(row[j]), set()).add(mirror_unit[int(j)])
    if not units:
        return None
    best = max(units, key=lambda a: (len(units[a]), -a))
    return best if best != answer and len(units[best]) > len(units.get(answer, ())) else None


def _unit_of(edges: npt.NDArray[np.bool_]) -> list[int]:
    """Each source's independent voice: its connected component of ``edges`` (or itself)."""
    out = list(range(edges.shape[0]))
    for k, component in enumerate(_components(edges)):
        for j in component:
            out[j] = edges.shape[0] + k
    return out


def _resting(
    labels: LabelMatrix, truth: npt.NDArray[np.int64], mirrors: npt.NDArray[np.bool_]
) -> npt.NDArray[np.bool_]:
    """The sources of mirror groups whose every member the estimate mirrors too (it differs
    from the member on at most MIRROR_MAX_DIFFER of the member's estimated items)."""
    out = np.zeros(labels.shape[1], dtype=bool)
    estimated = truth != MISSING
    for group in _components(mirrors):
        follows = []
        for j in group:
            given = estimated & (labels[:, j] != MISSING)
            differ = int(np.sum(labels[given, j] != truth[given]))
            follows.append(bool(given.any()) and differ <= MIRROR_MAX_DIFFER * int(given.sum()))
        if all(follows):
            out[group] = True
    return out


def _bloc_answers(
    labels: LabelMatrix, truth: npt.NDArray[np.int64], bloc: list[int], settling: set[int]
) -> dict[int, int]:
    """The bloc's contested queries (at least two of its members agree on an answer the
    estimate rejects, and some source gives the estimated answer), each with that answer."""
    in_bloc = np.zeros(labels.shape[1], dtype=bool)
    in_bloc[bloc] = True
    bloc_answer: dict[int, int] = {}
    for q in range(labels.shape[0]):
        if truth[q] == MISSING or q in settling:
            continue
        row = labels[q]
        rejected = row[in_bloc & (row != MISSING) & (row != truth[q])]
        if len(rejected) < 2:
            continue
        values, counts = np.unique(rejected, return_counts=True)
        if counts.max() >= 2 and (row == truth[q]).any():
            bloc_answer[q] = int(values[np.argmax(counts)])
    return bloc_answer


def _examine(
    labels: LabelMatrix,
    truth: npt.NDArray[np.int64],
    bloc: list[int],
    bloc_answer: dict[int, int],
    checked: list[int],
    pairs: tuple[FloatArray, FloatArray],
    mirrors: npt.NDArray[np.bool_],
    resting: npt.NDArray[np.bool_],
    *,
    checks: int,
) -> Identification:
    """One dissent bloc's verdict (steps 2-4 of the module)."""
    both, same = pairs
    n_sources = labels.shape[1]
    in_bloc = np.zeros(n_sources, dtype=bool)
    in_bloc[bloc] = True
    contested = sorted(bloc_answer)
    if not contested and not checked:
        return Identification(True, "The sources sharing rejected answers never outvote the estimate together.")

    side: list[int] = []
    basis = contested or checked
    for j in np.flatnonzero(~in_bloc):
        answered = [q for q in basis if labels[q, j] != MISSING]
        with_estimate = sum(1 for q in answered if labels[q, j] == truth[q])
        if answered and with_estimate * 2 > len(answered):
            side.append(int(j))
    agreement = (_mean_agreement(side, both, same), _mean_agreement(bloc, both, same))
    for_side, for_bloc = _gold_verdicts(labels, truth, set(checked), side, bloc)
    if not contested and not (for_side or for_bloc):
        return Identification(True, "The sources sharing rejected answers never outvote the estimate together.")

    def reach(q: int) -> tuple[int, int, int]:
        row = labels[q]
        a = int(sum(1 for j in side if row[j] == truth[q]))
        b = int(sum(1 for j in bloc if row[j] == bloc_answer[q]))
        return (a + b, min(a, b), -q)

    found = Identification(
        True,
        "",
        estimate_side=side,
        dissent_bloc=bloc,
        contested=contested,
        checks=sorted(contested, key=reach, reverse=True)[: max(checks, 0)],
        agreement=agreement,
        settled_by_gold=for_side + for_bloc,
    )
    if for_bloc >= for_side and for_bloc:
        return replace(
            found,
            identified=False,
            reason=f"Checked answers side with the group the estimate rejects on {for_bloc} of the queries where the groups "
            f"disagree ({for_side} with the estimate's group). More checked answers on the disputed queries would settle it.",
        )
    if for_side:
        return replace(
            found,
            identified=True,
            reason=f"Checked answers side with the estimate on {for_side} of the queries where the groups disagree"
            + (f" (with the other group on {for_bloc})." if for_bloc else "."),
        )
    if not side:
        return replace(
            found, identified=True, reason="The estimate does not follow a group of its own on the disputed queries."
        )
    # A group of mirrors whose listing the estimate itself mirrors is what the estimate rests on
    # (a copied feed can be): it witnesses nothing for the estimate against another bloc.
    opposed = [
        j
        for j in _opposed(labels, truth, in_bloc, bloc_answer)
        if not resting[j] and (not mirrors[j].any() or j in side)
    ]
    side_units = independent_units(opposed, mirrors)
    bloc_units = independent_units(_loyal(labels, bloc, bloc_answer) or bloc, mirrors)
    if side_units >= MIN_SIDE_UNITS and side_units >= OUTNUMBER * bloc_units:
        return replace(
            found,
            identified=True,
            outnumbered=True,
            reason=f"{side_units} independent sources reject the answers that a group of {bloc_units} shares: for "
            "that group to be right, the sources against it would have to repeat one story as a bloc at least twice "
            "its size.",
        )
    return replace(found, identified=False, reason=NOT_IDENTIFIED_MESSAGE)


def _rate(row: npt.NDArray[np.int64], group: list[int], answer: int) -> tuple[float, bool] | None:
    """The share of the group's members answering ``row`` that give ``answer``, and whether
    it is one of the group's most given answers (None: none of them answered)."""
    answers = row[group]
    answers = answers[answers != MISSING]
    if not len(answers):
        return None
    _, counts = np.unique(answers, return_counts=True)
    given = int(np.sum(answers == answer))
    return given / len(answers), given == int(counts.max())


def _gold_verdicts(
    labels: LabelMatrix, truth: npt.NDArray[np.int64], gold: set[int], side: list[int], bloc: list[int]
) -> tuple[int, int]:
    """On checked queries where the two groups disagree (the reference answer is not the most
    given answer of both): (how many the reference answer gives to the estimate's group, how
    many to the dissent bloc), each query to the group more of whose members gave the reference
    answer (a side split two against two between the reference and another value still sides
    with it against a bloc that never gave it). A checked query's estimated answer is its
    reference answer (estimators fix it)."""
    for_side = for_bloc = 0
    for q in sorted(gold):
        if not 0 <= q < labels.shape[0] or truth[q] == MISSING:
            continue
        a, b = _rate(labels[q], side, int(truth[q])), _rate(labels[q], bloc, int(truth[q]))
        if a is None or b is None or (a[1] and b[1]):
            continue
        for_side += int(a[0] > b[0])
        for_bloc += int(b[0] > a[0])
    return for_side, for_bloc


def equalise(result: ReliabilityResult, identification: Identification, *, scheme: str) -> ReliabilityResult:
    """The estimate as the product uses it: when agreement does not identify it, every source
    with answers on record gets the same reliability (their mean accuracy) and so one equal
    vote under ``scheme``: a majority vote (with kappa selection keeping ties at the cut
    whole), never worse than majority vote, until checks arrive. Every source, not only the
    two groups: the others' accuracies were measured against answers the larger group chose,
    so they are as unsettled. Sources without answers keep the prior. The result carries
    ``identification``.

    (Measured before settling on this, PoisonedRAG and RAMDocs, 3 seeds: equal votes for the
    two groups only fell below majority vote on RAMDocs (0.246 against 0.251 at 3 colluders
    of 9), because a source outside both groups kept a weight measured against the larger
    group's answers; shifting each group's accuracies to a common mean fell below it at 5.)"""
    if identification.identified or not identification.dissent_bloc:
        return replace(result, identification=identification)
    members = [j for j, s in enumerate(result.sources) if s.answers > 0]
    if not members:
        return replace(result, identification=identification)
    mean = float(np.mean([result.sources[j].accuracy for j in members]))
    weight = voting_weight(mean, len(result.sources), scheme=scheme)
    sources = list(result.sources)
    for j in members:
        source = sources[j]
        sources[j] = replace(source, accuracy=mean, weight=weight, interval=interval_holding(source.interval, mean))
    return replace(result, sources=sources, identification=identification)


def proposed_checks(result: ReliabilityResult, n: int, *, exclude: Collection[int] = ()) -> list[int]:
    """The ``n`` queries whose reference answers a curator should give first: the checks that
    settle an unidentified estimate (the disputed queries answered by most sources of both
    groups). Fewer, or none, when fewer queries are disputed: a check elsewhere settles
    nothing agreement has not (measured: five checks on the least certain queries of an
    identified estimate made it worse, 0.745 against 0.779 at one adversary of nine, since a
    noisy query's reference often matches no answer and counts against every source). With
    topics, each topic's verdict proposes its disputed queries as the overall one does, and the
    open verdicts take turns (see below)."""
    if n <= 0 or result.identification is None:
        return []
    skip = {int(q) for q in exclude}
    found = result.identification
    topical = result.topical
    topics = topical.identification if topical is not None else []
    # Every open verdict, the overall one and each topic's, gets checks in turn: the first of
    # each unsettled one, then of each settled only by outnumbering, then the seconds, ... (the
    # overall verdict's other checks last). A bloc can be the larger side on one topic only:
    # that topic's verdict is then "settled" by outnumbering, the wrong way, while the overall
    # one is about other sources; with the overall verdict's checks ahead of every topic's, all
    # of a run's checks went to topics already right (topic-hammer, 6 colluding, 5 checks, seed
    # 4). One check on a disputed query scores every member of both groups at once, so a
    # verdict's first check is worth more than another's second: with the unsettled verdicts'
    # checks exhausted before any outnumbered one's, seed 6 got all five on one topic and their
    # confirmations tipped the overall estimate (docs/benchmarks.md, 2026-11-28).
    verdicts = [found, *(v for v in topics if v is not None)]
    unsettled = [v for v in verdicts if not v.identified]
    outnumbered = [v for v in verdicts if v.identified and v.outnumbered]
    ordered = interleave([[q for q in v.checks if q not in skip] for v in [*unsettled, *outnumbered]])
    ordered += [q for q in found.checks if q not in skip and q not in ordered]
    return ordered[:n]


# The agreement fit (claim runs): pairs of sources that share at least FIT_MIN_SHARED items
# and are neither mirrors nor found dependent are the independent pairs the one-coin model
# speaks about; it predicts that two of them give the same value about w_i * w_j of the time
# (open-ended values: two wrong values seldom coincide). Where they agree far less often than
# that, on average over the pairs (standardised residual below FIT_MAX_DEFICIT), the estimate
# has inflated the accuracies it rests on: hard EM let a listing decide the items it lists and
# then scored it against its own answers.
FIT_MIN_SHARED = 30
FIT_MAX_DEFICIT = -1.0
FIT_DEPENDENT = 0.5  # pairs at least this likely dependent are not independent pairs
# listing_probes without a listing: the sources within this of the highest accuracy are what the
# estimate rests on (0, 0.03 and 0.1 compared on 200 random Flights slices; docs/claims.md).
PROBE_BAND = 0.1
PROBE_VOUCH = 0.9  # ... and two of them share items and agree on this share of them (_vouching)

MISFIT_MESSAGE = (
    "These reliabilities do not fit the sources' agreement: sources estimated as accurate agree "
    "with one another far less often than their estimated accuracies imply (mean standardised "
    "difference {z:.1f} over {pairs} pairs of independent sources), so the estimate rates some of "
    "them higher than agreement supports. The group named is the sources whose agreement with the "
    "others fits their estimates worst. A few checked values would settle it."
)


def agreement_fit(votes: LabelMatrix, result: ReliabilityResult) -> tuple[float, int, list[int]]:
    """How well ``result``'s accuracies explain how often independent sources agree: (the mean
    standardised residual (observed - predicted agreement) over the independent pairs, how many
    pairs, the sources whose own pairs fall short by more than FIT_MAX_DEFICIT on average).
    (0.0, 0, []) when no pair qualifies. See FIT_MIN_SHARED."""
    labels = as_label_matrix(votes)
    n_sources = labels.shape[1]
    accuracy = np.array([s.accuracy for s in result.sources], dtype=float)
    if n_sources < 3 or len(accuracy) != n_sources:
        return 0.0, 0, []
    cells = AnswerCells.of(labels)
    both, same = cells.pair_constants()
    both = np.asarray(both, dtype=float)
    same = np.asarray(same, dtype=float)
    excluded = mirror_pairs(labels).copy()
    for d in result.dependence:
        if d.probability >= FIT_DEPENDENT:
            excluded[d.a, d.b] = excluded[d.b, d.a] = True
    upper = np.triu(np.ones((n_sources, n_sources), dtype=bool), k=1)
    usable = upper & (both >= FIT_MIN_SHARED) & ~excluded
    if not usable.any():
        return 0.0, 0, []
    predicted = np.outer(accuracy, accuracy)
    observed = np.divide(same, np.maximum(both, 1.0))
    spread = np.sqrt(np.maximum(predicted * (1.0 - predicted), 0.01) / np.maximum(both, 1.0))
    z = np.where(usable, (observed - predicted) / spread, 0.0)
    n_pairs = int(usable.sum())
    mean_z = float(z[usable].mean())
    # The sources whose own pairs fall short on average. A pair's shortfall is charged to both of
    # its sources, so this names the sources the estimate does not fit, not only the inflated
    # ones: an accurate source that the estimate rates low, paired mostly with inflated sources,
    # falls short too (attributing the shortfall per source by least squares, or peeling the worst
    # source first, still named such sources on the slices measured; docs/claims.md).
    sym = z + z.T
    counted = (usable | usable.T).sum(axis=1)
    per_source = np.divide(sym.sum(axis=1), np.maximum(counted, 1))
    misfit = [int(j) for j in np.flatnonzero((counted > 0) & (per_source < FIT_MAX_DEFICIT))]
    return mean_z, n_pairs, misfit


def fit_checks(votes: LabelMatrix, result: ReliabilityResult, sources: Collection[int], *, checks: int) -> list[int]:
    """The items that best test an estimate that ``sources`` do not fit: where the estimated
    value is given by one of them and another value by more sources (mirrors counted once),
    those answered by the most sources first."""
    labels = as_label_matrix(votes)
    mirror_unit = _unit_of(mirror_pairs(labels))
    chosen = set(sources)
    scored: list[tuple[int, int]] = []
    for q, answer in enumerate(result.answers):
        if answer is None:
            continue
        row = labels[q]
        givers = np.flatnonzero(row == answer)
        if not any(int(j) in chosen for j in givers):
            continue
        if _outvoting(row, np.ones(len(row), dtype=bool), mirror_unit, answer) is not None:
            scored.append((int(np.sum(row != MISSING)), q))
    return [q for _, q in sorted(scored, key=lambda t: (-t[0], t[1]))][: max(checks, 0)]


def with_agreement_fit(
    votes: LabelMatrix, result: ReliabilityResult, found: Identification, *, checks: int = DEFAULT_CHECKS
) -> Identification:
    """``found`` as is, unless it calls the estimate identified and the estimate's accuracies do
    not fit the agreement of independent sources (``agreement_fit``): then not identified, the
    sources it fits worst as the unsettled group and the items that test them as its checks."""
    if not found.identified:
        return found
    mean_z, n_pairs, misfit = agreement_fit(votes, result)
    if not n_pairs or mean_z >= FIT_MAX_DEFICIT or not misfit:
        return found
    tests = fit_checks(votes, result, misfit, checks=checks)
    # The items that test those sources first, taking turns with the blocs' own checks
    # (measured on the slices it flags: 5 checks at once 0.845 -> 0.855 against the tests alone,
    # one at a time the same, since each new run proposes its first check from the tests).
    ordered = list(dict.fromkeys(interleave([tests, list(found.checks)])))
    return replace(
        found,
        identified=False,
        outnumbered=False,
        reason=MISFIT_MESSAGE.format(z=mean_z, pairs=n_pairs),
        dissent_bloc=misfit,
        estimate_side=[],
        agreement=(0.0, 0.0),
        contested=sorted(set(found.contested) | set(tests)),
        checks=ordered[: max(checks, 0)],
        unsettled_blocs=[misfit],
    )


def _vouching(labels: LabelMatrix, group: list[int]) -> bool:
    """Whether two of ``group`` (columns of ``labels``) share FIT_MIN_SHARED items or more and give
    the same value on at least PROBE_VOUCH of them: sources that can lift each other's rating."""
    both, same = AnswerCells.of(labels[:, group]).pair_constants()
    return any(
        both[a, b] >= FIT_MIN_SHARED and same[a, b] >= PROBE_VOUCH * both[a, b]
        for a in range(len(group))
        for b in range(a + 1, len(group))
    )


def listing_probes(
    votes: LabelMatrix,
    result: ReliabilityResult,
    gold: Collection[int] = (),
    *,
    checks: int = DEFAULT_CHECKS,
    same: Callable[[int, int, int], bool] | None = None,
) -> list[int]:
    """Checks that test what an estimate rests on: the listing it follows (the group of mirrors
    it follows on every item, the most trusted one where there are several) or, where it follows
    none, its most trusted sources (those within PROBE_BAND of the highest accuracy), where two of
    them share FIT_MIN_SHARED items or more and give the same value on at least PROBE_VOUCH of them
    (they can lift each other's rating). Their items, outside ``gold``, where they give one value
    and the other sources' log-odds vote under ``result``'s accuracies gives another value more
    weight, the widest margin first.

    For a run that checks have settled after agreement alone left it open: its checks so far
    went to the blocs the estimate rejects, and each one answered there confirms the listing
    against a poor bloc; whether the listing itself is right is what a check on these items
    asks (a feed of five mirrors, true accuracy 0.62, rated 1.0 over an accurate site rated
    0.62: docs/claims.md). Without a listing, the same holds for the sources the checks lifted:
    three travel sites (true 0.79-0.82) that listed a checked value rated 0.97-0.99, over an
    airline's own site (1.0) rated 0.83.

    ``same(q, a, b)``: whether values a and b of item q are one value (a mapping's tolerance);
    a vote for a value within it of theirs counts for theirs, so 07:21 against 07:22 is no test."""
    labels = as_label_matrix(votes)
    truth = np.array([MISSING if a is None else int(a) for a in result.answers], dtype=np.int64)
    accuracy = np.array([s.accuracy for s in result.sources], dtype=float)
    if labels.shape[1] < 3 or len(truth) != labels.shape[0] or len(accuracy) != labels.shape[1]:
        return []
    mirrors = mirror_pairs(labels)
    resting = _resting(labels, truth, mirrors)
    listings = [group for group in _components(mirrors) if resting[group[0]]]
    if listings:
        group = max(listings, key=lambda g: (float(accuracy[g].max()), len(g), -g[0]))
        speakers, listed = group[:1], labels[:, group[0]] != MISSING
    else:
        group = [int(j) for j in np.flatnonzero(accuracy >= np.nanmax(accuracy) - PROBE_BAND)]
        if not _vouching(labels, group):
            return []
        # The most trusted first: where they differ within a tolerance, the item tests its value.
        group.sort(key=lambda j: (-accuracy[j], j))
        speakers, listed = group, (labels[:, group] != MISSING).any(axis=1)
    clipped = np.clip(accuracy, 1e-6, 1.0 - 1e-6)
    weight = np.maximum(np.log(clipped / (1.0 - clipped)), 0.0)
    inside = np.zeros(labels.shape[1], dtype=bool)
    inside[group] = True
    skip = {int(q) for q in gold}
    scored: list[tuple[float, int]] = []
    for q in np.flatnonzero(listed):
        if int(q) in skip:
            continue
        row = labels[q]
        given = [int(row[j]) for j in speakers if row[j] != MISSING]
        mine = given[0]
        if any(v != mine and (same is None or not same(int(q), v, mine)) for v in given):
            continue  # the trusted sources disagree among themselves: not a test of them
        score: dict[int, float] = {}
        for j in np.flatnonzero(~inside & (row != MISSING)):
            value = int(row[j])
            if same is not None and value != mine and same(int(q), value, mine):
                value = mine
            score[value] = score.get(value, 0.0) + float(weight[j])
        others = [v for v in score if v != mine]
        if not others:
            continue
        alternative = max(others, key=lambda v: (score[v], -v))
        margin = score[alternative] - score.get(mine, 0.0)
        if margin > 0:
            scored.append((margin, int(q)))
    return [q for _, q in sorted(scored, key=lambda t: (-t[0], t[1]))][: max(checks, 0)]
