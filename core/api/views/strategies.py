"""The answer strategies: what each does, what it needs, whether this deployment can run it,
and the parameters it takes."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.views.base import ApiViewMixin
from core.engine.params import describe
from core.engine.strategies import available_strategies, missing_requirements, strategy_class
from core.services.engine_context import configured_offers, strategy_defaults


class StrategyParamSerializer(serializers.Serializer[object]):
    name = serializers.CharField()
    type = serializers.CharField()
    default = serializers.JSONField()
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)
    choices = serializers.ListField(child=serializers.CharField(), allow_null=True)
    help = serializers.CharField()


class StrategySerializer(serializers.Serializer[object]):
    name = serializers.CharField()
    description = serializers.CharField()
    requires = serializers.ListField(child=serializers.CharField())
    product = serializers.BooleanField(
        help_text="Meant for users (offered by default when asking); false: a research baseline or ablation."
    )
    runnable = serializers.BooleanField(help_text="The configured backends can run it.")
    unavailable_because = serializers.ListField(child=serializers.CharField())
    params = StrategyParamSerializer(many=True)


def strategy_catalogue() -> list[dict[str, object]]:
    offers = configured_offers()
    defaults = strategy_defaults()
    out: list[dict[str, object]] = []
    for name in available_strategies():
        cls = strategy_class(name)
        reasons = missing_requirements(cls, offers)
        params = [{**p, "default": defaults.get(p["name"], p["default"])} for p in describe(cls.Params)]
        out.append(
            {
                "name": name,
                "description": cls.description,
                "requires": sorted(r.value for r in cls.requires),
                "product": cls.product,
                "runnable": not reasons,
                "unavailable_because": reasons,
                "params": params,
            }
        )
    return out


class StrategiesView(ApiViewMixin, APIView):
    pagination_class = None  # a short, fixed list

    @extend_schema(responses=StrategySerializer(many=True), summary="List the answer strategies")
    def get(self, request: Request) -> Response:
        return Response(StrategySerializer(strategy_catalogue(), many=True).data)
