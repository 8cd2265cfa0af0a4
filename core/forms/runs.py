"""A curator's run forms: starting an estimation run (query set, sources, the estimator's
parameters), starting a claims run, and recording the right answer to one of a run's
proposed checks. The forms parse and name the field of what does not; the services
(core.services.estimation) decide what may run and name the field of what they refuse."""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import QueryDict

from core.forms.ask import SourceIdsField
from core.models import QueryCollection
from core.services import estimation

NUMBER_PARAMS = ("k", "tau", "alpha", "beta")


class NumberField(forms.Field):
    """A number as Python reads it ("nan", "inf" and "1e400" included): whether it is one the
    estimator accepts is the service's to say (core.services.estimation), with its range."""

    def __init__(self, name: str, cast: type[int] | type[float]) -> None:
        super().__init__(required=False, error_messages={"invalid": f"{name} must be a number."})
        self.cast = cast

    def to_python(self, value: Any) -> int | float | None:
        text = str(value or "").strip()
        if not text:
            return None
        try:
            return self.cast(text)
        except ValueError:
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid") from None


class RunSourcesField(SourceIdsField):
    """The run's sources: ids, or the explicit "every active source" option (ALL_SOURCES)."""

    def to_python(self, value: Any) -> list[int]:
        values = [str(v) for v in (value or [])]
        return super().to_python([v for v in values if v != estimation.ALL_SOURCES])


class RunStartForm(forms.Form):
    query_set = forms.CharField(required=False)
    sources = RunSourcesField(required=False)
    k = NumberField("k", int)
    tau = NumberField("tau", float)
    alpha = NumberField("alpha", float)
    beta = NumberField("beta", float)
    strict = forms.BooleanField(required=False)
    # Unchecked (the default): reference answers anchor the run.
    agreement_only = forms.BooleanField(required=False)
    estimator = forms.CharField(required=False)

    def clean_query_set(self) -> QueryCollection | None:
        """A query set that was named must exist: an unknown one is an error on the field, never
        a run on the default set. Left empty, the service picks the default."""
        value = str(self.cleaned_data.get("query_set") or "")
        if not value:
            return None
        found = QueryCollection.objects.filter(pk=int(value)).first() if value.isascii() and value.isdigit() else None
        if found is None:
            raise forms.ValidationError("No such query set: choose one of the list.")
        return found

    def every_source(self) -> bool:
        """Whether the explicit "every active source" option was chosen."""
        return isinstance(self.data, QueryDict) and estimation.ALL_SOURCES in self.data.getlist("sources")

    def params(self) -> dict[str, Any]:
        """The estimator's parameters given (call after is_valid())."""
        data = self.cleaned_data
        params: dict[str, Any] = {name: data[name] for name in NUMBER_PARAMS if data.get(name) is not None}
        params["strict"] = bool(data.get("strict"))
        if data.get("agreement_only"):
            params["use_gold"] = False
        if (data.get("estimator") or "").strip():
            params["estimator"] = data["estimator"].strip()
        return params

    def errors_by_field(self) -> dict[str, list[str]]:
        return {name: [str(m) for m in messages] for name, messages in self.errors.items()}


class ClaimRunForm(forms.Form):
    """A claim-level run over every active source that holds claims: the estimator, and
    optionally the sources a curator declares authorities for what they list (ids; the service
    refuses one that is not a source of the run)."""

    estimator = forms.CharField(required=False)
    authorities = forms.TypedMultipleChoiceField(
        required=False,
        coerce=int,
        error_messages={"invalid_choice": "Choose authorities among the sources listed."},
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Any id is accepted here; whether it is one of the run's sources is the service's call.
        offered = self.data.getlist("authorities") if hasattr(self.data, "getlist") else []
        self.fields["authorities"].choices = [(v, v) for v in offered if str(v).strip().isdigit()]  # type: ignore[attr-defined]  # a ChoiceField

    def estimator_name(self) -> str | None:
        return str(self.cleaned_data.get("estimator") or "").strip() or None

    def authority_ids(self) -> list[int]:
        return [int(a) for a in self.cleaned_data.get("authorities") or []]


class RunCheckForm(forms.Form):
    """A run's checks page: record the right answer to one proposed query, or estimate again."""

    action = forms.CharField(required=False)
    query = forms.IntegerField(
        required=False,
        min_value=1,
        error_messages={
            "invalid": "Choose a query of this run's checks.",
            "min_value": "Choose a query of this run's checks.",
        },
    )
    answer = forms.CharField(required=False, strip=False)

    def is_reestimate(self) -> bool:
        return self.data.get("action") == "reestimate"

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if not self.is_reestimate() and data.get("query") is None and "query" not in self.errors:
            self.add_error("query", "Choose a query of this run's checks.")
        return data

    def errors_by_field(self) -> dict[str, list[str]]:
        return {name: [str(m) for m in messages] for name, messages in self.errors.items()}
