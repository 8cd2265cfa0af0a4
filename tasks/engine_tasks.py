"""Celery tasks of the RA-RAG engine: answering questions and estimation runs.

Thin shells over core.services; see core/services/estimation.py for how a run is split
into `tasks.generate_batch` tasks (queue "gpu") and a non-blocking coordinator.
"""

from __future__ import annotations

from typing import Any

from reliability_site.celery import app
from tasks.progress import JobProgress
from tasks.runner import JobFailed, job_task


@job_task("tasks.answer_question")
def answer_question(progress: JobProgress, params: dict[str, Any]) -> dict[str, Any]:
    """Answer a stored Question through its strategy and persist the votes."""
    from core.models import Question
    from core.services.asking import answer_question as answer

    question = Question.objects.filter(pk=params["question_id"]).first()
    if question is None:
        raise JobFailed("The question was deleted before it could be answered.")
    answer(question, progress)
    return {
        "question_id": question.pk,
        "answer": question.answer,
        "confidence": question.confidence,
        "backend": question.backend,
        "votes": question.votes.count(),
    }
