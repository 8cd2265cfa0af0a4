"""What the engine produces, persisted: fact-checking queries, estimation runs with every
(query, source) response and per-source reliability scores (``estimation``), and asked
questions with every source's vote and the feedback on them (``questions``). The engine
itself (core/engine/) knows nothing of these models."""

from core.models.estimation import (
    MAX_QUESTION_BYTES,
    ClaimResolution,
    EstimationRun,
    FactQuery,
    QueryCollection,
    ReliabilityScore,
    RunAnswer,
    RunResponse,
    SourceDependence,
    validate_question_bytes,
)
from core.models.questions import (
    LOW_EVIDENCE_CONFIDENCE,
    MAX_CORRECTED_ANSWER_CHARS,
    MAX_FEEDBACK_COMMENT_CHARS,
    AnswerFeedback,
    Question,
    SourceGroup,
    Vote,
    asked_as_norm,
    evidence_field_validator,
    graph_field_validator,
)

__all__ = [
    "MAX_QUESTION_BYTES",
    "validate_question_bytes",
    "LOW_EVIDENCE_CONFIDENCE",
    "MAX_CORRECTED_ANSWER_CHARS",
    "MAX_FEEDBACK_COMMENT_CHARS",
    "AnswerFeedback",
    "ClaimResolution",
    "EstimationRun",
    "FactQuery",
    "QueryCollection",
    "Question",
    "ReliabilityScore",
    "RunAnswer",
    "RunResponse",
    "SourceDependence",
    "SourceGroup",
    "Vote",
    "asked_as_norm",
    "evidence_field_validator",
    "graph_field_validator",
]
