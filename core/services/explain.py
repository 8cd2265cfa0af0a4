"""Plain language for an answer: who agreed, who disagreed, who abstained and who was never asked,
and which sentences of which passages the answer rests on (inline citations).

The ask page shows numbers (weights, alignment scores) that mean nothing to a first-time
analyst; these functions turn a question's votes into one sentence a person can act on
("3 reliable sources agree; 2 low-reliability sources say Lyon") and pick, for each cited
passage, the sentence to highlight. They take plain values (no queries), so they are unit
tested without a database; core.services.pages.answer_panel gathers the values.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from core.engine.text import is_idk

RELIABLE = 0.7  # a source's estimated accuracy at or above this: "reliable"
UNRELIABLE = 0.4  # below this: "low-reliability"

_TIERS = ("reliable", "mid-reliability", "low-reliability", "unrated")


def reliability_tier(reliability: float | None) -> str:
    """The word for a source's estimated accuracy (never estimated: "unrated")."""
    if reliability is None:
        return "unrated"
    if reliability >= RELIABLE:
        return "reliable"
    if reliability < UNRELIABLE:
        return "low-reliability"
    return "mid-reliability"


@dataclass(frozen=True)
class VoteFact:
    """What the sentence needs from one vote."""

    source: str
    response: str
    reliability: float | None
    in_answer: bool  # the vote is in the winning cluster
    filtered: bool = False  # its answer was not supported by its passages (turned into "I don't know")
    passages: int = 0


@dataclass
class Explanation:
    sentence: str
    agree: int = 0
    disagree: int = 0
    idk: int = 0
    skipped: list[str] = field(default_factory=list)
    evidence: int = 0  # passages the answer rests on


def _sources(n: int, tier: str) -> str:
    return f"{n} {tier} source{'' if n == 1 else 's'}"


def _tier_phrase(facts: Iterable[VoteFact]) -> tuple[str, int]:
    counts = dict.fromkeys(_TIERS, 0)
    for fact in facts:
        counts[reliability_tier(fact.reliability)] += 1
    parts = [_sources(n, tier) for tier, n in counts.items() if n]
    total = sum(counts.values())
    if len(parts) > 1:
        return ", ".join(parts[:-1]) + " and " + parts[-1], total
    return (parts[0] if parts else ""), total


def _verb(total: int, singular: str, plural: str) -> str:
    return singular if total == 1 else plural


def explain_votes(
    answer: str,
    votes: Sequence[VoteFact],
    *,
    skipped: Sequence[str] = (),
    kappa: int | None = None,
    evidence: int | None = None,
) -> Explanation:
    """One plain sentence on how the answer was reached from per-source votes.

    ``skipped``: the names of the sources kappa-RRSS never consulted, because ``kappa``
    sources with an answer were found before them. ``evidence``: the passages the answer
    rests on (default: the passages read by the sources that agree)."""
    idk = [v for v in votes if is_idk(v.response)]
    agreeing = [v for v in votes if v.in_answer and not is_idk(v.response)]
    others = [v for v in votes if not v.in_answer and not is_idk(v.response)]
    n_evidence = evidence if evidence is not None else sum(v.passages for v in agreeing)
    parts: list[str] = []
    if not votes:
        parts.append("This strategy did not ask the sources one by one")
    elif is_idk(answer) or not answer.strip():
        parts.append("No answer had enough support")
    else:
        phrase, total = _tier_phrase(agreeing)
        parts.append(f"{phrase} {_verb(total, 'gives', 'agree on')} this answer" if total else "No source agrees")
    by_answer: dict[str, list[VoteFact]] = {}
    for vote in others:
        by_answer.setdefault(vote.response.strip(), []).append(vote)
    for response, group in sorted(by_answer.items(), key=lambda kv: -len(kv[1])):
        phrase, total = _tier_phrase(group)
        parts.append(f"{phrase} {_verb(total, 'says', 'say')} “{response}”")
    if idk:
        filtered = sum(1 for v in idk if v.filtered)
        text = f"{len(idk)} answered “I don't know”"
        if filtered:
            text += f" ({filtered} because {_verb(filtered, 'its', 'their')} passages did not support the answer)"
        parts.append(text)
    if skipped:
        why = f"{kappa} sources with an answer were found first" if kappa else "enough sources had answered"
        names = ", ".join(skipped[:5]) + (f" and {len(skipped) - 5} more" if len(skipped) > 5 else "")
        parts.append(
            f"{len(skipped)} {_verb(len(skipped), 'source was', 'sources were')} not consulted ({names}): {why}"
        )
    sentence = "; ".join(parts) + "."
    sentence = sentence[0].upper() + sentence[1:]
    if n_evidence:
        sentence += f" The answer rests on {n_evidence} passage{'' if n_evidence == 1 else 's'}."
    return Explanation(
        sentence=sentence,
        agree=len(agreeing),
        disagree=len(others),
        idk=len(idk),
        skipped=list(skipped),
        evidence=n_evidence,
    )


_SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?]+|$)")
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Highlight:
    """A passage cut around its supporting sentence: ``before`` + <mark>``sentence``</mark> + ``after``."""

    before: str
    sentence: str
    after: str


def highlight(text: str, answer: str) -> Highlight:
    """The sentence of ``text`` that contains ``answer`` (case-insensitive), else the one with the
    most of the answer's words; nothing highlighted when no sentence shares a word with it."""
    spans = [(m.start(), m.end()) for m in _SENTENCE.finditer(text) if m.group().strip()]
    needle = answer.strip().lower()
    if not spans or not needle or is_idk(answer):
        return Highlight(text, "", "")
    best: tuple[int, int] | None = None
    for start, end in spans:
        if needle in text[start:end].lower():
            best = (start, end)
            break
    if best is None:
        words = {w.lower() for w in _WORD.findall(answer) if len(w) > 1}
        scored = [(len(words & {w.lower() for w in _WORD.findall(text[s:e])}), (s, e)) for s, e in spans]
        score, span = max(scored, key=lambda item: item[0])
        best = span if score else None
    if best is None:
        return Highlight(text, "", "")
    start, end = best
    while start < end and text[start].isspace():
        start += 1
    return Highlight(text[:start], text[start:end], text[end:])
