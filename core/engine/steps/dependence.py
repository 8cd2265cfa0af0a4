"""Sources that copy each other count once at answer time (issue 36).

Reliability estimation with copy detection (AccuCopy, core.engine.reliability.accucopy) finds
pairs of sources that share false answers far more often than independent sources would: a
copier and its original, or a colluding campaign. AccuCopy discounts a copied answer's vote
while it estimates; these groups carry that to the answers a question gets:

- in the weighted vote, a group's members that give the same answer count once, with the
  largest weight among them (``once_per_group``), so a bloc that repeats one answer does not
  outvote a reliable source by its number;
- in the answer's probability, the group is one voice, with the mean accuracy of its members
  that gave the answer, and that voice counts against the answer when the group is estimated
  right less often than not (voting.answer_probability's ``units``): a colluding group's false
  answers are one shared value, not spread over many, so its agreement with an answer is
  evidence that the answer is its planted one (a member that answers alone is such a voice
  too: under kappa-RRSS the rest of its group is often never asked);
- the answer says so in a note when the group repeats it (two members or more give it:
  ``copied_note``). A lone member's agreement only lowers the confidence: measured on the demo
  and PoisonedRAG, a note for it was on right answers more often than the wrong answers' base
  rate, while the repeated answers it names were wrong 4 times in 6 or more.

The groups are those the product shows as copying: pairs at least DEPENDENT likely dependent,
with at least MIN_SHARED_FALSE false answers in common, connected into groups, and only from
an estimate that agreement identified (an unidentified estimate's "copiers" may be the honest
group that a larger bloc outvotes: core.services.pages.copying.unsettled).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from core.engine.graphs.blocs import components
from core.engine.reliability.base import MIN_SHARED_FALSE, Dependence
from core.engine.types import SourceInfo

# A pair of sources at least this likely dependent is copying or colluding (the product's
# threshold, core.services.estimation.finish.DEPENDENT).
DEPENDENT = 0.5

CopyGroups = tuple[frozenset[int], ...]


def copy_groups(pairs: Iterable[tuple[int, int]]) -> CopyGroups:
    """The connected groups (two sources or more) of these dependent pairs of source ids,
    each sorted into a frozenset, in a stable order (by smallest member)."""
    links = [(int(a), int(b)) for a, b in pairs if a != b]
    nodes = [s for pair in links for s in pair]
    groups = [frozenset(c) for c in components(nodes, links) if len(c) >= 2]
    return tuple(sorted(groups, key=min))


def groups_from_dependence(
    dependence: Iterable[Dependence], source_ids: Sequence[int], *, identified: bool = True
) -> CopyGroups:
    """The copy groups of an estimate's pairwise dependence (columns mapped to source ids
    through ``source_ids``): dependent at DEPENDENT or more with MIN_SHARED_FALSE false
    answers in common; none when the estimate is not ``identified``."""
    if not identified:
        return ()
    return copy_groups(
        (source_ids[d.a], source_ids[d.b])
        for d in dependence
        if d.probability >= DEPENDENT and d.same_false >= MIN_SHARED_FALSE
    )


def topic_copy_groups(
    dependence: Sequence[Sequence[Dependence]],
    settled: Sequence[bool],
    source_ids: Sequence[int],
    overall: CopyGroups,
) -> tuple[CopyGroups, ...]:
    """Per topic, the groups counted once on its questions: those found on the topic's
    queries alone (``dependence``, per topic) where its verdict is ``settled``, the
    ``overall`` groups where it is not (`groups_per_topic`). A bloc that colludes on one
    subject answers independently on the others: counted once there, its honest answers
    would weigh as one (measured on PoisonedRAG's topic-hammer prior, docs/benchmarks.md)."""
    return groups_per_topic(
        [
            groups_from_dependence(pairs, source_ids) if ok else None
            for pairs, ok in zip(dependence, settled, strict=True)
        ],
        overall,
    )


def groups_per_topic(found: Sequence[CopyGroups | None], overall: CopyGroups) -> tuple[CopyGroups, ...]:
    """The rule both the benchmark and the product's answering context apply: per topic, the
    groups ``found`` on its queries (None: not found there, its verdict unsettled, or not
    stored) else the ``overall`` ones; none at all when there are no overall groups (per
    topic they refine what the estimate found, they do not add to an estimate that found
    none). Empty, too, when no topic has its own (`copy_groups_on` then counts the overall
    groups on every question)."""
    if not overall or all(groups is None for groups in found):
        return ()
    return tuple(overall if groups is None else groups for groups in found)


def group_index(groups: CopyGroups) -> dict[int, int]:
    """Source id -> the index of its copy group (a source in none is absent)."""
    return {sid: g for g, members in enumerate(groups) for sid in members}


def units(source_ids: Sequence[int], groups: CopyGroups) -> list[int | None]:
    """Per vote, the copy group its source belongs to (None: an independent source)."""
    index = group_index(groups)
    return [index.get(sid) for sid in source_ids]


def once_per_group(
    labels: Sequence[int | None], vote_units: Sequence[int | None], weights: Sequence[float]
) -> list[float]:
    """The votes' weights with each copy group counted once per answer: of a group's votes
    for one answer cluster, the heaviest keeps its weight (the first on a tie) and the others
    weigh nothing. Votes of independent sources, and abstentions, keep theirs."""
    out = [float(w) for w in weights]
    heaviest: dict[tuple[int, int], int] = {}
    for i, (label, unit) in enumerate(zip(labels, vote_units, strict=True)):
        if label is None or unit is None:
            continue
        key = (label, unit)
        kept = heaviest.get(key)
        if kept is None:
            heaviest[key] = i
        elif out[i] > out[kept]:
            out[kept], heaviest[key] = 0.0, i
        else:
            out[i] = 0.0
    return out


def group_accuracy(members: Iterable[SourceInfo]) -> float | None:
    """A copy group's accuracy on an answer its ``members`` gave: their mean estimated
    accuracy (None when none of them was estimated)."""
    known = [float(s.accuracy) for s in members if s.accuracy is not None]
    return sum(known) / len(known) if known else None


def _names(sources: Sequence[SourceInfo], limit: int = 3) -> str:
    names = [s.name for s in sources]
    shown = names[:limit]
    if len(names) > limit:
        return ", ".join(shown) + f" and {len(names) - limit} more"
    return " and ".join(shown) if len(shown) == 2 else ", ".join(shown)


def copied_note(backers: Iterable[int], groups: CopyGroups, sources: Sequence[SourceInfo]) -> str | None:
    """A warning when the answer is also a copy group's answer (two of its members or more
    give it), and that group is estimated right less often than not on the question (the
    mean accuracy of its members that gave it below 0.5): a colluding group's answer that
    reliable sources repeat is most often its planted one, repeated from the same text. Also
    when the answer rests on one copy group alone: its sources are one voice, however many.
    None otherwise."""
    by_id = {s.id: s for s in sources}
    behind = [sid for sid in dict.fromkeys(backers) if sid in by_id]
    index = group_index(groups)
    grouped: dict[int, list[SourceInfo]] = {}
    for sid in behind:
        if sid in index:
            grouped.setdefault(index[sid], []).append(by_id[sid])
    # A group repeats the answer when two of its members or more give it (a lone member's
    # voice lowers the confidence without a note).
    grouped = {g: members for g, members in grouped.items() if len(members) >= 2}
    if not grouped:
        return None
    for members in grouped.values():
        accuracy = group_accuracy(members)
        if accuracy is not None and accuracy < 0.5:
            return (
                f"Copied: {_names(members)} also gave this answer; the latest estimation found them "
                f"copying or colluding, and right less often than not ({accuracy:.2f} on average). "
                "Their vote counts once, against the answer: "
                "check that the other sources' passages are not the same text."
            )
    if len(grouped) == 1:
        (members,) = grouped.values()
        if len(members) == len(behind):
            return (
                f"One voice: this answer rests on {_names(members)} alone, which the latest estimation "
                "found copying or colluding with each other; they count as one source."
            )
    return None
