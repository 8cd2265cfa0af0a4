"""Token exchange: POST /api/token/."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers


class TokenRequestSerializer(serializers.Serializer[Any]):
    username = serializers.CharField()
    password = serializers.CharField(trim_whitespace=False)  # a password is taken as typed


class TokenSerializer(serializers.Serializer[Any]):
    token = serializers.CharField()
