"""Numbers as the admin shows them: rounded ("0.80"), never a raw float ("0.8043478260869565")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin


def rounded(name: str, label: str, digits: int = 2) -> Callable[[Any, Any], str]:
    """A ModelAdmin/inline display method showing the float field `name` with `digits` decimals
    ("—" when empty); list it in `list_display`, `fields` or `readonly_fields` instead of the field."""

    @admin.display(description=label, ordering=name)
    def show(model_admin: Any, obj: Any) -> str:
        value = getattr(obj, name, None)
        return "—" if value is None else f"{value:.{digits}f}"

    show.__name__ = f"{name}_rounded"
    return show
