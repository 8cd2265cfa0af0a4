"""The glossary page: every term the pages use (core.glossary)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from core.glossary import TERMS
from core.roles import analyst_required


@analyst_required
def glossary(request: HttpRequest) -> HttpResponse:
    return render(request, "core/glossary.html", {"terms": TERMS})
