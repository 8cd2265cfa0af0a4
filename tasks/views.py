"""Job pages: the list, and a detail page whose status panel htmx polls until it ends. Each job
reads as an entry of a person's log (tasks.describe): what it was about, links to its
question, run or source, its headline and its result as text.

Viewing never writes: stale jobs are reaped by the worker (tasks.reap_stale_jobs)."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from core.roles import analyst_required
from tasks.describe import describe_jobs
from tasks.jobs import cancel_job, may_cancel
from tasks.models import Job
from tasks.polling import render_poll
from tasks.public import public_job


@analyst_required
def job_list(request: HttpRequest) -> HttpResponse:
    # params stay loaded: public_job needs them to show file names instead of server paths;
    # the result too: a finished ingestion's headline (new and held documents) comes from it.
    jobs = Job.objects.select_related("created_by").defer("log")
    kind = request.GET.get("kind")
    if kind in Job.Kind.values:
        jobs = jobs.filter(kind=kind)
    page = Paginator(jobs, 50).get_page(request.GET.get("page"))
    page.object_list = describe_jobs([public_job(job) for job in page.object_list])  # type: ignore[assignment]  # the page lists the jobs' public views
    return render(request, "tasks/job_list.html", {"page": page, "kinds": Job.Kind.choices, "kind": kind})


@analyst_required
def job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    job = public_job(get_object_or_404(Job, pk=pk))
    [view] = describe_jobs([job])
    can_cancel = not job.finished and may_cancel(job, request.user)
    return render(request, "tasks/job_detail.html", {"job": job, "view": view, "can_cancel": can_cancel})


@analyst_required
@require_POST
def job_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    """Cancel a job (who started it, or a curator): it ends now; its worker stops at the next batch."""
    job = get_object_or_404(Job, pk=pk)
    if not may_cancel(job, request.user):
        raise PermissionDenied("Only who started this job, or a curator, may cancel it.")
    if cancel_job(job.pk, by=request.user.get_username()):
        messages.success(request, f"Job #{job.pk} was cancelled; its worker stops at its next batch.")
    else:
        messages.info(request, f"Job #{job.pk} had already ended.")
    return redirect("job-detail", pk=job.pk)


@analyst_required
def job_status(request: HttpRequest, pk: int) -> HttpResponse:
    job = public_job(get_object_or_404(Job, pk=pk))
    return render_poll(request, "tasks/_job_status.html", {"job": job}, finished=job.finished)
