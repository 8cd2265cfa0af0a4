"""Form fields shared by the admin and the pages."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.db import models
from django.forms.fields import InvalidJSONInput

from core.engine.jsondepth import json_depth_error


class BoundedJSONField(forms.JSONField):
    """Django's JSONField, refusing JSON nested deeper than JSON_MAX_DEPTH with a form error
    (json.loads would otherwise recurse into a RecursionError: a 500)."""

    def to_python(self, value: Any) -> Any:
        if isinstance(value, str) and not self.disabled:
            too_deep = json_depth_error(value, settings.JSON_MAX_DEPTH)
            if too_deep is not None:
                raise forms.ValidationError(f"Not accepted: {too_deep.reason}.", code="invalid")
        return super().to_python(value)

    def bound_data(self, data: Any, initial: Any) -> Any:
        # Re-displaying the refused input parses it too: show it as the text it was.
        if isinstance(data, str) and not self.disabled and json_depth_error(data, settings.JSON_MAX_DEPTH):
            return InvalidJSONInput(data)
        return super().bound_data(data, initial)


# ModelAdmin.formfield_overrides: every JSON model field is edited through BoundedJSONField.
JSON_FORMFIELD_OVERRIDES: dict[Any, dict[str, Any]] = {models.JSONField: {"form_class": BoundedJSONField}}
