"""Template filters that show a job's result and parameters as readable lines (tasks.describe)."""

from __future__ import annotations

from django import template

from tasks.describe import Line, headline, param_lines, result_lines
from tasks.models import Job

register = template.Library()


@register.filter
def readable_result(job: Job) -> list[Line]:
    """`{% for line in job|readable_result %}`: the result as labelled lines, never a dict."""
    return result_lines(job)


@register.filter
def readable_params(job: Job) -> list[Line]:
    """The job's parameters as labelled lines, without the worker's internal state."""
    return param_lines(job)


@register.filter
def job_headline(job: Job) -> str:
    """The line that sums the job up (a finished ingestion: its new and held counts)."""
    return headline(job)
