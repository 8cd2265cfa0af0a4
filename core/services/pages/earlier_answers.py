"""An answer beside the latest earlier answer to the same question: after a curator's checks
or a new estimation run, asking again shows what changed (the ask page and a question's page)."""

from __future__ import annotations

from typing import Any

from core.models import Question, asked_as_norm

# A confidence that moved by at least this much is said to have moved (the answer the same).
CONFIDENCE_MOVED = 0.05


def earlier_answer(question: Question) -> dict[str, Any] | None:
    """The latest earlier answer to the same question (same words, case and spaces aside; a
    follow-up compared by its standalone rewrite, never by a bare "When was he born?") and
    whether this one differs from it. One query (on the asked_as_norm index)."""
    earlier = (
        Question.objects.annotate(norm=asked_as_norm())
        .filter(norm=question.asked_as.strip().lower(), created_at__lt=question.created_at)
        .exclude(pk=question.pk)
        .exclude(answered_at=None)
        .order_by("-created_at", "-id")
        .only("id", "answer", "confidence", "created_at", "strategy")
        .first()
    )
    if earlier is None:
        return None
    same = (earlier.answer or "").strip().lower() == (question.answer or "").strip().lower()
    drift = abs((earlier.confidence or 0.0) - (question.confidence or 0.0))
    return {"question": earlier, "changed": not same, "confidence_moved": same and drift >= CONFIDENCE_MOVED}
