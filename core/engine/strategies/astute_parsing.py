"""Reading Astute RAG's outputs (the prompts are in astute_prompts): internal passages,
consolidated groups, per-group answers with their confidence and the final answer, with the
fallbacks a model that breaks the format needs.

- ``parse_internal_passages``: a p_gen output split on "Document <n>:" headers, "I don't
  know" passages and duplicates dropped, at most m_hat, each bounded.
- ``parse_groups``: "Group <n> (source: ...; documents: ...): summary" lines of a p_con /
  p_ans output; a group must cite at least one valid document number.
- ``parse_proposals``: step 2's "Answer for group <n>: <answer> (confidence: <c>)" lines.
- ``parse_final``: the answer between ``<<<ANSWER>>>`` tags (``<ANSWER>`` accepted), else an
  unclosed tag, a "Final answer:" line, the most confident group answer or a short one-line
  reply, saying which.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass

from core.engine.strategies.astute_prompts import EXTERNAL, MEMORY, ContextDocument
from core.engine.text import IDK, bound, is_idk, normalize_answer
from core.engine.types import JSONObject

MAX_INTERNAL_CHARS = 1000  # an internal passage is cut here
MAX_GROUP_CHARS = 800  # a consolidated group's summary is cut here
MAX_ANSWER_CHARS = 300
SHORT_REPLY_WORDS = 12  # an untagged one-line reply this short is taken as the answer

_PREFIX = r"^\s*(?:[-*#>]+\s*)?(?:\*\*)?\s*"
_GROUP = re.compile(
    _PREFIX + r"(?:new\s+|consolidated\s+)?(?:group|document)\s*(?P<n>\d+)\s*(?:\*\*)?\s*"
    r"\(\s*sources?\s*:\s*(?P<origins>[^;)]*?)\s*;\s*(?:original\s+)?(?:document|doc)s?\s*(?:numbers?)?\s*:?\s*"
    r"(?P<docs>[^)]*?)\s*\)\s*(?:\*\*)?\s*:?\s*(?P<text>.*)$",
    re.IGNORECASE,
)
_PROPOSAL = re.compile(
    _PREFIX + r"(?:proposed\s+)?answer\s+(?:for|of|to)\s+group\s*(?P<n>\d+)\s*(?:\*\*)?\s*:\s*(?P<answer>.*)$",
    re.IGNORECASE,
)
_STRUCTURE = re.compile(_PREFIX + r"(?:step\s*\d|answer\s+(?:for|of|to)\s+group|final\s+answer)", re.IGNORECASE)
_CONFIDENCE = re.compile(r"\(?\s*confidence(?:\s+score)?\s*[:=]?\s*(?P<value>\d+(?:\.\d+)?)\s*(?P<pct>%)?\s*\)?", re.I)
_TAGGED = re.compile(r"<{1,3}\s*answer\s*>{1,3}(?P<body>.*?)<{1,3}\s*/\s*answer\s*>{1,3}", re.IGNORECASE | re.DOTALL)
_OPEN_TAG = re.compile(r"<{1,3}\s*answer\s*>{1,3}(?P<body>[^\n<]*)", re.IGNORECASE)
_FINAL_LINE = re.compile(
    _PREFIX + r"final\s+answer\s*(?:\*\*)?\s*[:\-]\s*(?P<answer>.+)$", re.IGNORECASE | re.MULTILINE
)
_DOC_HEADER = re.compile(r"^\s*(?:\*\*)?\s*document\s*\d+\s*(?:\*\*)?\s*:\s*", re.IGNORECASE | re.MULTILINE)
_RANGE = re.compile(r"(\d+)\s*(?:-|–|to)\s*(\d+)")
_PLACEHOLDERS = {"your answer", "answer", "short answer", "exact answer", "a few words"}
_MEMORY_WORDS = ("memory", "memorized", "internal", "own knowledge")
_EXTERNAL_WORDS = ("external", "retriev", "web")


def parse_confidence(text: str) -> float | None:
    """A confidence written as a number in [0, 1] or a percentage ("0.8", "80%"; a bare number
    in (1, 100] is read as a percentage); None when there is none or it is out of range."""
    match = _CONFIDENCE.search(text)
    if not match:
        return None
    value = float(match.group("value"))
    if match.group("pct") or value > 1.0:
        value /= 100.0
    return value if 0.0 <= value <= 1.0 else None


def clean_answer(text: str) -> str:
    """An answer without markup, surrounding quotes, a trailing period or a confidence remark."""
    text = _CONFIDENCE.sub(" ", text)
    text = " ".join(text.replace("*", " ").split()).strip(" \"'`:;,.")
    if normalize_answer(text) in _PLACEHOLDERS:
        return ""
    return bound(text, MAX_ANSWER_CHARS) if text else ""


def parse_internal_passages(output: str, m_hat: int) -> list[str]:
    """The passages of a p_gen output: split on "Document <n>:" headers (the whole output is one
    passage without them), "I don't know" passages and duplicates dropped, at most ``m_hat``."""
    if m_hat <= 0:
        return []
    parts = [p for p in _DOC_HEADER.split(output) if p.strip()]
    passages: list[str] = []
    seen: set[str] = set()
    for part in parts:
        text = bound(part, MAX_INTERNAL_CHARS)
        norm = normalize_answer(text)
        if not norm or is_idk(text) or norm.startswith(("i dont know", "i do not know")) or norm in seen:
            continue
        seen.add(norm)
        passages.append(text)
    return passages[:m_hat]


def _origins(claimed: str) -> list[str]:
    low = claimed.lower()
    out = []
    if "both" in low or any(w in low for w in _MEMORY_WORDS):
        out.append(MEMORY)
    if "both" in low or any(w in low for w in _EXTERNAL_WORDS):
        out.append(EXTERNAL)
    return out


def _cited(docs: str, count: int) -> tuple[list[int], int]:
    """The valid document numbers (1..count) a group cites, and how many it cited out of range."""
    numbers: list[int] = []
    for a, b in _RANGE.findall(docs):
        lo, hi = int(a), int(b)
        if lo <= hi and hi - lo <= count:
            numbers.extend(range(lo, hi + 1))
    numbers.extend(int(n) for n in re.findall(r"\d+", _RANGE.sub(" ", docs)))
    valid = sorted({n for n in numbers if 1 <= n <= count})
    return valid, len({n for n in numbers if not 1 <= n <= count})


@dataclass
class Group:
    """One consolidated group: the documents it cites (initial numbering) and their origins."""

    number: int
    documents: list[int]
    memory: bool
    external: bool
    claimed: list[str]  # the origins the model wrote (the flags above come from the citations)
    text: str
    answer: str | None = None
    confidence: float | None = None
    chosen: bool = False

    def as_json(self) -> JSONObject:
        return dataclasses.asdict(self)  # the fields are JSON values


def parse_groups(output: str, initial: Sequence[ContextDocument]) -> tuple[list[Group], int]:
    """The groups of a p_con / p_ans output and how many header lines were rejected (no valid
    document number). A summary runs from its header to the next header, blank or step line."""
    origin_of = {d.number: d.origins for d in initial}
    groups: list[Group] = []
    rejected = 0
    current: Group | None = None
    for line in output.splitlines():
        match = _GROUP.match(line)
        if match:
            current = None
            docs, _ = _cited(match.group("docs"), len(initial))
            if not docs:
                rejected += 1
                continue
            origins = {o for n in docs for o in origin_of[n]}
            current = Group(
                number=int(match.group("n")),
                documents=docs,
                memory=MEMORY in origins,
                external=EXTERNAL in origins,
                claimed=_origins(match.group("origins")),
                text=match.group("text").strip(),
            )
            groups.append(current)
        elif current is not None and line.strip() and not _STRUCTURE.match(line) and not _TAGGED.search(line):
            current.text = f"{current.text} {line.strip()}"
        else:
            current = None
    for group in groups:
        group.text = bound(group.text, MAX_GROUP_CHARS)
    return [g for g in groups if g.text], rejected


def parse_proposals(output: str) -> dict[int, tuple[str, float | None]]:
    """Step 2's "Answer for group <n>: <answer> (confidence: <c>)" lines, by group number."""
    out: dict[int, tuple[str, float | None]] = {}
    for line in output.splitlines():
        match = _PROPOSAL.match(line)
        if match:
            body = match.group("answer")
            out[int(match.group("n"))] = (clean_answer(body), parse_confidence(body))
    return out


@dataclass
class FinalAnswer:
    answer: str
    confidence: float | None
    tagged: bool  # the answer sat between well-formed tags
    how: str  # where a fallback took it from ("" when tagged)


def parse_final(output: str, proposals: dict[int, tuple[str, float | None]]) -> FinalAnswer:
    """The final answer of a p_ans output and the confidence the model gave it."""
    tagged = [m for m in _TAGGED.finditer(output) if clean_answer(m.group("body"))]
    if tagged:
        last = tagged[-1]
        answer = clean_answer(last.group("body"))
        confidence = parse_confidence(last.group("body"))
        if confidence is None:
            confidence = parse_confidence(output[last.end() : last.end() + 120])
        return FinalAnswer(answer, confidence, True, "")
    answer, how, confidence = "", "", None
    opened = [m for m in _OPEN_TAG.finditer(output) if clean_answer(m.group("body"))]
    final_lines = list(_FINAL_LINE.finditer(output))
    lines = [line.strip() for line in output.strip().splitlines() if line.strip()]
    scored = [(a, c) for a, c in proposals.values() if a and c is not None]
    if opened:
        body = opened[-1].group("body")
        answer, how, confidence = clean_answer(body), "an unclosed answer tag", parse_confidence(body)
    elif final_lines:
        body = final_lines[-1].group("answer")
        answer, how, confidence = clean_answer(body), 'a "Final answer:" line', parse_confidence(body)
    elif scored:
        answer, confidence = max(scored, key=lambda ac: ac[1] or 0.0)
        how = "the group answer it gave most confidence"
    elif len(lines) == 1 and len(lines[0].split()) <= SHORT_REPLY_WORDS and not _GROUP.match(lines[0]):
        answer, how = clean_answer(lines[0]), "its one-line reply"
    return FinalAnswer(answer or IDK, confidence if answer else None, False, how if answer else "")


def groups_as_context(groups: Sequence[Group]) -> list[ContextDocument]:
    """Consolidated groups as the next prompt's context, numbered from 1 (Group 1, 2, ...)."""
    return [
        ContextDocument(
            i,
            g.text,
            tuple(o for o, on in ((MEMORY, g.memory), (EXTERNAL, g.external)) if on),
            cites=tuple(g.documents),
        )
        for i, g in enumerate(groups, start=1)
    ]


_ANSWER_PREFIX = re.compile(_PREFIX + r"(?:final\s+)?answer\s*[:=-]\s*", re.IGNORECASE)
_TEMPLATE = re.compile(r"<[^<>]*>")  # the format line copied back: "<a few words> (confidence: <...>)"


def parse_compact(output: str) -> FinalAnswer:
    """The answer of a compact-prompt reply: an "Answer:" line if the reply has one, else its
    first line that is not a preface ending with a colon (the prompt itself ends with
    "Answer:"), with the confidence written on it. A line longer than a short reply, or the
    format copied back, is no answer (``tagged`` and ``how`` empty: the caller falls back). An
    answer between tags counts as well: a model may fall back on the paper's format."""
    if _TAGGED.search(output):
        return parse_final(output, {})
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    labelled = [rest for line in lines if (rest := _ANSWER_PREFIX.sub("", line, count=1)) != line and rest]
    line = next(iter(labelled), next((line for line in lines if not line.endswith(":")), ""))
    answer = "" if _TEMPLATE.search(line) else clean_answer(line)
    if not answer or len(answer.split()) > SHORT_REPLY_WORDS:
        return FinalAnswer(IDK, None, False, "")
    if is_idk(answer):
        return FinalAnswer(IDK, None, True, "")
    return FinalAnswer(answer, parse_confidence(line), True, "")
