"""Answering a page's query string that its form refused: a 400 page naming the parameter
(templates/400.html, as for a NUL in the query string: reliability_site.nul_bytes); nothing is read or changed."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from core.forms.query import QueryForm


def bad_query(request: HttpRequest, form: QueryForm) -> HttpResponse:
    return render(request, "400.html", {"message": form.problem()}, status=400)
