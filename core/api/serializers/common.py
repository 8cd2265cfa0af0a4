"""Shapes shared by every area of the API: the error envelope documented on each operation."""

from __future__ import annotations

from rest_framework import serializers


class ErrorDetailSerializer(serializers.Serializer[object]):
    code = serializers.CharField()
    message = serializers.CharField()
    fields = serializers.DictField(  # type: ignore[assignment]  # a declared field (DRF's metaclass collects it), not Serializer.fields
        child=serializers.ListField(child=serializers.CharField())
    )


class ErrorSerializer(serializers.Serializer[object]):
    error = ErrorDetailSerializer()
