"""Checking answers: against a query's reference answers, and the share of checked answers
that were right."""

from __future__ import annotations

from core.engine.text import answer_contains_gold


def matches_reference(answer: str, references: list[str]) -> bool | None:
    """Whether an answer contains one of the query's reference answers (the containment test the
    estimator's gold labels use); None when the query has no reference answer to check against."""
    if not references:
        return None
    return bool(answer) and answer_contains_gold(answer, references)


def gold_accuracy(agreements: int | None, answers: int | None) -> float | None:
    """The share of a source's gold-checked answers that agreed with the gold (None: none checked)."""
    return agreements / answers if agreements is not None and answers else None
