from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from core.views.access import analyst_required


@analyst_required
def ask(request: HttpRequest) -> HttpResponse:
    return redirect("job-list")
