"""Value normalisers: the raw text of a claim's value to a canonical string, or None.

None means "no usable value" (empty, "Not Available", a time that is not a time): such a
cell yields no claim, as a source that says nothing about the item. Every normaliser is a
pure function of one string; ``NORMALIZERS`` names them for claim mappings.
"""

from __future__ import annotations

import datetime as dt
import html
import re
from collections.abc import Callable

Normalizer = Callable[[str], "str | None"]

_NONE_WORDS = {"", "n/a", "na", "none", "null", "unknown", "notavailable", "-", "--"}


def _is_empty(text: str) -> bool:
    return text.replace(" ", "").lower() in _NONE_WORDS


def normalize_text(raw: str) -> str | None:
    """Whitespace collapsed, case folded; empty and "N/A"-like values are None."""
    text = " ".join(html.unescape(raw).split())
    return None if _is_empty(text) else text.casefold()


def normalize_raw(raw: str) -> str | None:
    """The value as given, trimmed (None only when empty)."""
    text = raw.strip()
    return text or None


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


_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?|[-+]?\.\d+")


def normalize_number(raw: str) -> str | None:
    """The first number in the text, thousands separators dropped, without trailing zeros:
    "1,234.50 USD" -> "1234.5", "$ 12" -> "12", "-0.0" -> "0"; None when there is none."""
    match = _NUMBER.search(raw.replace("\u2212", "-"))
    if not match:
        return None
    try:
        number = float(match.group(0).replace(",", ""))
    except ValueError:
        return None
    if number != number or number in (float("inf"), float("-inf")):
        return None
    if number == int(number) and abs(number) < 1e15:
        return str(int(number))
    return f"{number:.10g}"


_DATE_FORMATS = (
    "%Y-%m-%d",
    "%Y/%m/%d",
    "%d.%m.%Y",
    "%m/%d/%Y",
    "%m/%d/%y",
    "%d %B %Y",
    "%d %b %Y",
    "%B %d, %Y",
    "%b %d, %Y",
    "%B %d %Y",
    "%b %d %Y",
    "%Y%m%d",
)


def normalize_date(raw: str) -> str | None:
    """A calendar date as ISO "YYYY-MM-DD" (US month-first for slashed dates, as in the
    data sets at hand); an ISO datetime keeps its date; None when no format matches."""
    text = " ".join(raw.replace(",", ", ").split()).replace(" ,", ",").strip()
    if not text:
        return None
    head = text[:10]
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", head) and (len(text) == 10 or text[10] in "T "):
        text = head
    for fmt in _DATE_FORMATS:
        try:
            return dt.datetime.strptime(text, fmt).date().isoformat()
        except ValueError:
            continue
    return None


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


def normalize_name_list(raw: str) -> str | None:
    """The sorted, de-duplicated surnames of a list of person names, joined by ";".

    "Knuth, Donald E.", "Donald E. Knuth" and "knuth, donald e.;" all give "knuth";
    order, punctuation, initials and "Not Available" do not matter.
    """
    text = html.unescape(html.unescape(raw)).strip().lower()
    if _is_empty(text):
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


def normalize_isbn(raw: str) -> str | None:
    """ISBN-13 with the 978 prefix to ISBN-10; an ISBN-10 unchanged (digits and X only);
    None when there are no digits."""
    digits = re.sub(r"[^0-9Xx]", "", raw).upper()
    if not digits:
        return None
    if len(digits) == 13 and digits.startswith("978"):
        core = digits[3:12]
        check = (11 - sum((10 - i) * int(d) for i, d in enumerate(core)) % 11) % 11
        return core + ("X" if check == 10 else str(check))
    return digits


NORMALIZERS: dict[str, Normalizer] = {
    "raw": normalize_raw,
    "text": normalize_text,
    "time": normalize_time,
    "number": normalize_number,
    "date": normalize_date,
    "name-list": normalize_name_list,
    "isbn": normalize_isbn,
}

NORMALIZER_HELP: dict[str, str] = {
    "raw": "the value as given, trimmed",
    "text": "whitespace collapsed, case folded",
    "time": 'a time of day as 24-hour "HH:MM" ("7:10 p.m." -> "19:10")',
    "number": 'the first number, separators dropped ("1,234.50" -> "1234.5")',
    "date": 'a calendar date as "YYYY-MM-DD"',
    "name-list": 'sorted surnames of a list of people ("Knuth, Donald; Graham, R." -> "graham;knuth")',
    "isbn": "an ISBN as ISBN-10",
}


def get_normalizer(name: str) -> Normalizer:
    try:
        return NORMALIZERS[name]
    except KeyError:
        raise ValueError(f"unknown normaliser {name!r}; known: {', '.join(NORMALIZERS)}") from None


# Similarities of two normalised values, for estimators that let near values support each
# other (TruthFinder's implication) and for MultiRAG's consistency scores.


def set_similarity(a: str, b: str, sep: str = ";") -> float:
    """Jaccard similarity of two separator-joined sets (author surnames)."""
    sa, sb = set(a.split(sep)), set(b.split(sep))
    return len(sa & sb) / len(sa | sb) if sa | sb else 1.0


def exact_similarity(a: str, b: str) -> float:
    return 1.0 if a == b else 0.0


SIMILARITIES: dict[str, Callable[[str, str], float]] = {"name-list": set_similarity}


def similarity_for(normalizer: str) -> Callable[[str, str], float]:
    """How alike two values normalised by ``normalizer`` are, in [0, 1] (exact by default)."""
    return SIMILARITIES.get(normalizer, exact_similarity)
