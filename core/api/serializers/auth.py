"""Token exchange: POST /api/token/."""

from __future__ import annotations

from rest_framework import serializers


class TokenRequestSerializer(serializers.Serializer[object]):
    username = serializers.CharField()
    password = serializers.CharField(trim_whitespace=False)  # a password is taken as typed


class TokenSerializer(serializers.Serializer[object]):
    token = serializers.CharField()
