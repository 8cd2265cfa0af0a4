"""Input fields and the strict-serializer rule shared by every writable endpoint."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from django.db import models
from rest_framework import serializers

_M = TypeVar("_M", bound=models.Model)

MAX_ID = 2**63 - 1  # the largest database id (bigint)


def no_nul(value: str) -> None:
    # PostgreSQL text cannot hold NUL; say so instead of failing at the database.
    if "\x00" in value:
        raise serializers.ValidationError("Must not contain NUL characters.")


class Text(serializers.CharField):
    def __init__(self, **kwargs: Any) -> None:  # CharField's options, passed on as DRF's stubs type them
        super().__init__(**kwargs)
        self.validators.append(no_nul)


class IdRelatedField(serializers.PrimaryKeyRelatedField[_M]):
    """An object by its id: a JSON integer (or digits, from a form), from 1 to MAX_ID.

    DRF hands any value to ``queryset.get(pk=...)``, where Django casts it with int(): 180.9
    found question 180 and true found id 1. A float, a boolean or an id past a bigint is a 400
    on the field instead."""

    default_error_messages = {
        **serializers.PrimaryKeyRelatedField.default_error_messages,
        "not_an_id": "Expected an id (a whole number from 1 to {max_id}), got {value}.",
    }

    def to_internal_value(self, data: object) -> _M:
        if isinstance(data, str) and data.strip().isdigit() and data.strip().isascii():
            number = int(data.strip())
        elif isinstance(data, int) and not isinstance(data, bool):
            number = data
        else:
            self.fail("not_an_id", max_id=MAX_ID, value=repr(data)[:40])
        if not 1 <= number <= MAX_ID:
            self.fail("not_an_id", max_id=MAX_ID, value=repr(data)[:40])
        return super().to_internal_value(number)  # type: ignore[arg-type]  # the stubs say a model; DRF takes the pk


class StrictMixin:
    """Reject keys the serializer does not know (and read-only ones), naming each.

    A typo such as "kapa" must not be silently ignored by a tool that thinks it set it.
    """

    def to_internal_value(self, data: object) -> object:
        if isinstance(data, Mapping):
            fields = self.fields  # type: ignore[attr-defined]  # a mixin: the serializer's fields
            errors: dict[str, list[str]] = {}
            for key in data:
                field = fields.get(key)
                if field is None:
                    errors[str(key)] = ["Unknown field."]
                elif field.read_only:
                    errors[str(key)] = ["This field is read-only."]
            if errors:
                raise serializers.ValidationError(errors)
        return super().to_internal_value(data)  # type: ignore[misc]  # a mixin: the serializer's method


class StrictSerializer(StrictMixin, serializers.Serializer[object]):
    pass


class StrictModelSerializer(StrictMixin, serializers.ModelSerializer[_M]):
    serializer_related_field = IdRelatedField

    def build_standard_field(
        self, field_name: str, model_field: models.Field[object, object]
    ) -> tuple[type[serializers.Field[Any, Any, Any, Any]], dict[str, Any]]:  # the stubs' types: any field, its kwargs
        field_class, kwargs = super().build_standard_field(field_name, model_field)
        if issubclass(field_class, serializers.CharField):
            kwargs.setdefault("validators", []).append(no_nul)
        return field_class, kwargs
