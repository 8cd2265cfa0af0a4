"""A strategy that does nothing: it always abstains. It exists to show (and test) that a new
strategy is one file plus one line in core.engine.strategies.registry.BUILTIN_MODULES, and
that the contract suite then covers it."""

from __future__ import annotations

from core.engine.params import NoParams
from core.engine.strategies.base import AnswerStrategy, EngineContext, StrategyResult
from core.engine.strategies.registry import register
from core.engine.text import IDK


@register("do-nothing")
class DoNothing(AnswerStrategy[NoParams]):
    description = "always says I don't know"
    Params = NoParams

    def answer(self, question: str, ctx: EngineContext, params: NoParams) -> StrategyResult:
        return StrategyResult(answer=IDK, confidence=0.0, strategy=self.name, backend=ctx.generator.name)
