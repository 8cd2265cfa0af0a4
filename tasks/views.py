"""Job pages: the list, and a detail page whose status panel htmx polls until it ends."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from tasks.jobs import reap_stale_jobs
from tasks.models import Job
from tasks.polling import render_poll


@login_required
def job_list(request: HttpRequest) -> HttpResponse:
    reap_stale_jobs()
    jobs = Job.objects.select_related("created_by").defer("log", "result", "params")
    kind = request.GET.get("kind")
    if kind in Job.Kind.values:
        jobs = jobs.filter(kind=kind)
    page = Paginator(jobs, 50).get_page(request.GET.get("page"))
    return render(request, "tasks/job_list.html", {"page": page, "kinds": Job.Kind.choices, "kind": kind})


@login_required
def job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_object_or_404(Job, pk=pk)
    return render(request, "tasks/job_detail.html", {"job": job})


@login_required
def job_status(request: HttpRequest, pk: int) -> HttpResponse:
    reap_stale_jobs()
    job = get_object_or_404(Job, pk=pk)
    return render_poll(request, "tasks/_job_status.html", {"job": job}, finished=job.finished)
