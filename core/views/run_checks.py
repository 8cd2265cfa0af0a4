"""A run's checks (curators): the queries whose right answer would settle its estimate most
(active gold), each with the answers the sources gave. One click records an answer as the
right one (or type it) and the run is estimated again from its stored responses."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from core.forms.runs import RunCheckForm
from core.models import EstimationRun
from core.roles import curator_required
from core.services.estimation.checks import identification_view, record_check, reestimate_run


@curator_required
@require_http_methods(["GET", "POST"])
def run_checks(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(EstimationRun.objects.select_related("query_set", "job", "created_by"), pk=pk)
    errors: dict[str, list[str]] = {}
    if request.method == "POST":
        form = RunCheckForm(request.POST)
        if form.is_reestimate():
            return _reestimate(request, run)
        if not form.is_valid():
            errors = form.errors_by_field()
        else:
            try:
                started = record_check(run, form.cleaned_data["query"], form.cleaned_data["answer"], user=request.user)
            except ValidationError as exc:
                errors = exc.message_dict if hasattr(exc, "error_dict") else {"answer": exc.messages}
            else:
                _say_recorded(request, run, started)
                return redirect("run-checks", pk=run.pk)
    view = identification_view(run)
    status = 400 if errors else 200
    return render(
        request, "core/run_checks.html", {"run": run, "identification": view, "errors": errors}, status=status
    )


def _reestimate(request: HttpRequest, run: EstimationRun) -> HttpResponse:
    """ "Estimate again" with the checks recorded so far; back to the checks with a message."""
    try:
        started = reestimate_run(run, user=request.user)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect("run-checks", pk=run.pk)
    if started:
        messages.success(request, f"Run #{run.pk} is being estimated again with the checks recorded so far.")
    else:
        messages.error(
            request,
            f"Run #{run.pk} is being estimated right now (or you are at your run limit): try again when it ends.",
        )
    return redirect("run-checks", pk=run.pk)


def _say_recorded(request: HttpRequest, run: EstimationRun, started: bool) -> None:
    if started:
        messages.success(
            request,
            f"Recorded as the right answer; run #{run.pk} is being estimated again with it (its page "
            "shows the new estimate in a few seconds).",
        )
    else:
        messages.warning(
            request,
            f"Recorded as the right answer. Run #{run.pk} is being estimated right now (or you are at "
            'your run limit): press "Estimate again" when it ends so this answer counts.',
        )
