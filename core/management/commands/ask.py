"""python manage.py ask "QUESTION" [--strategy NAME] [--kappa K] [--include ID] [--exclude ID] [--group ID]
[--follows ID] [--json] (synchronous)"""

from __future__ import annotations

import json
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.engine.params import parse_assignments
from core.engine.strategies import available_strategies
from core.models import Question
from core.services.asking import ask_now
from core.services.source_selection import SourceChoice


def question_json(question: Question) -> dict[str, Any]:
    return {
        "id": question.pk,
        "question": question.text,
        "follows": question.follows_id,
        "standalone": question.standalone,
        "answer": question.answer,
        "strategy": question.strategy,
        "backend": question.backend,
        "confidence": question.confidence,
        "calls": question.calls,
        "tokens": question.tokens,
        "seconds": question.seconds,
        "clusters": question.clusters,
        "notes": question.notes,
        "source_selection": question.source_selection,
        "votes": [
            {
                "source": v.source.name,
                "rank": v.rank,
                "raw_response": v.raw_response,
                "response": v.response,
                "filtered": v.filtered,
                "align_score": round(v.align_score, 4),
                "cluster": v.cluster,
                "weight": round(v.weight, 4),
                "reliability": v.reliability,
            }
            for v in question.votes.select_related("source").order_by("rank")
        ],
    }


def _params(pairs: list[str]) -> dict[str, Any]:
    try:
        return parse_assignments(pairs)
    except ValueError as exc:
        raise CommandError(f"--param {exc}") from exc


class Command(BaseCommand):
    help = "Answer a question now through the engine (no worker needed) and print the votes."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("question")
        parser.add_argument("--strategy", default="ra-rag", choices=available_strategies())
        parser.add_argument("--kappa", type=int, default=None, help="sources kept by kappa-RRSS / kappa-RSS (1-50)")
        parser.add_argument(
            "--param",
            action="append",
            default=[],
            metavar="NAME=VALUE",
            help="a strategy parameter (JSON value), e.g. --param k=5 --param strict_clustering=true; repeatable",
        )
        parser.add_argument(
            "--include", type=int, action="append", default=[], metavar="ID", help="ask only this source; repeatable"
        )
        parser.add_argument(
            "--exclude", type=int, action="append", default=[], metavar="ID", help="never ask this source; repeatable"
        )
        parser.add_argument(
            "--group", type=int, default=None, metavar="ID", help="ask the sources of this source group"
        )
        parser.add_argument(
            "--follows",
            type=int,
            default=None,
            metavar="ID",
            help="ask it as a follow-up of this answered question (rewritten into a standalone question first)",
        )
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            params = _params(opts["param"])
            sources = SourceChoice.of(include=opts["include"], exclude=opts["exclude"], group=opts["group"])
            question = ask_now(
                opts["question"],
                strategy=opts["strategy"],
                kappa=opts["kappa"],
                params=params,
                sources=sources,
                follows=opts["follows"],
            )
        except ValidationError as exc:
            raise CommandError("; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())) from None
        data = question_json(question)
        if opts["json"]:
            self.stdout.write(json.dumps(data, ensure_ascii=False))
            return
        if question.rewritten:
            self.stdout.write(f"Asked as: {question.standalone}")
        self.stdout.write(self.style.SUCCESS(f"Answer: {data['answer']}"))
        confidence = f"{data['confidence']:.2f}" if data["confidence"] is not None else "-"
        self.stdout.write(
            f"strategy {data['strategy']}, backend {data['backend']}, confidence {confidence}, "
            f"{data['calls']} generator call(s), {data['seconds']} s"
        )
        for vote in data["votes"]:
            flag = " (filtered)" if vote["filtered"] else ""
            self.stdout.write(
                f"  {vote['source']:<30} cluster {vote['cluster']!s:<4} weight {vote['weight']:<8} {vote['response']}{flag}"
            )
        for note in data["notes"]:
            self.stdout.write(f"note: {note}")
