"""Job pages: the list, and a detail page whose status panel htmx polls until it ends. Each job
reads as an entry of a person's log (tasks.describe): what it was about, links to its
question, run or source, its headline and its result as text.

Viewing never writes: stale jobs are reaped by the worker (tasks.reap_stale_jobs)."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from core.roles import analyst_required
from tasks.describe import describe_jobs
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
    return render(request, "tasks/job_detail.html", {"job": job, "view": view})


@analyst_required
def job_status(request: HttpRequest, pk: int) -> HttpResponse:
    job = public_job(get_object_or_404(Job, pk=pk))
    return render_poll(request, "tasks/_job_status.html", {"job": job}, finished=job.finished)
