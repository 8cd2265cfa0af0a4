"""Command-line options and entry point shared by ``python manage.py benchmark`` and
``python -m core.bench``. The benchmark builds its own in-memory corpus; it never touches
the web database."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from core.bench.paths import default_cache_dir, default_data_dir
from core.engine.reliability import DEFAULT_ESTIMATOR, available_estimators

QA_DATASETS = ("poisonedrag", "ramdocs", "demo")
TRUTH_DATASETS = ("flights", "books")


def _ints(text: str) -> list[int]:
    """ "1,2,3" or "1-7"."""
    if "-" in text and "," not in text:
        lo, hi = text.split("-", 1)
        return list(range(int(lo), int(hi) + 1))
    return [int(x) for x in text.split(",") if x.strip()]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", choices=[*QA_DATASETS, *TRUTH_DATASETS], default="poisonedrag")
    parser.add_argument(
        "--prior",
        choices=["beta", "adversary-hammer", "topic-hammer"],
        default="adversary-hammer",
        help="topic-hammer: each adversary is adversarial on the questions of one or two topics (PoisonedRAG's "
        "subsets) and honest elsewhere",
    )
    parser.add_argument("--sources", type=int, default=9, help="number of simulated sources N")
    parser.add_argument("--adversaries", type=int, default=5, help="adversaries A (adversary-hammer prior)")
    parser.add_argument("--coverage", type=float, default=0.6, help="coverage r_i of every source")
    parser.add_argument("--kappa", type=int, default=4, help="kappa for kappa-RRSS / kappa-RSS")
    parser.add_argument("--tau", type=float, default=0.1, help="f_align threshold")
    parser.add_argument("--k", type=int, default=3, help="passages retrieved per source")
    parser.add_argument(
        "--min-relevance",
        type=float,
        default=0.4,
        help="a passage less similar to the question, holding under half its words, is not read (0: all)",
    )
    parser.add_argument("--estimation-queries", type=int, default=100, help="M fact-checking queries")
    parser.add_argument(
        "--estimator",
        choices=available_estimators(),
        default=DEFAULT_ESTIMATOR,
        help="reliability estimator of the estimation phase (QA datasets; default: the product's default)",
    )
    parser.add_argument(
        "--gold-queries",
        type=int,
        default=0,
        help="how many estimation queries carry their reference answer (gold anchors)",
    )
    parser.add_argument(
        "--active-gold",
        type=int,
        default=0,
        help="QA datasets: after an unsupervised estimate, the product's own selection chooses this many "
        "estimation queries (the checks that settle an unidentified estimate first) and only those get "
        "their reference answers; the estimate is redone with them",
    )
    parser.add_argument(
        "--checks-one-at-a-time",
        action="store_true",
        help="with --active-gold N: choose one check, answer it, estimate again and choose the next, N times "
        "(as a curator answers them in the product); default: all N chosen from the unsupervised estimate",
    )
    parser.add_argument(
        "--no-calibrate",
        action="store_true",
        help="QA datasets with gold: keep the answers' raw probability instead of calibrating it on the "
        "checked estimation queries (the product's default after a run with checks)",
    )
    parser.add_argument(
        "--protocol",
        choices=["truth", "multirag"],
        default="truth",
        help="flights/books: truth discovery over the claims (default), or MultiRAG's protocol "
        "(questions from the gold items answered by the multirag and ra-rag strategies, F1)",
    )
    parser.add_argument(
        "--topic-tags",
        action="store_true",
        help="the estimation queries carry their true topic (PoisonedRAG's subset) as a curator's tag; "
        "default: the product finds the topics itself",
    )
    parser.add_argument("--seeds", type=int, default=3, help="number of seeds (0..S-1)")
    parser.add_argument("--seed", type=int, default=None, help="run this one seed only")
    parser.add_argument(
        "--methods",
        nargs="+",
        default=None,
        help="default: every registered strategy + dawid-skene wawa; a strategy's parameters may follow a colon "
        "(astute-rag:prompt=compact,t=0)",
    )
    parser.add_argument(
        "--collude", action="store_true", help="misinformation sources share one wrong answer (official code)"
    )
    parser.add_argument("--max-questions", type=int, default=None, help="use only this many questions (quick runs)")
    parser.add_argument(
        "--no-memo", action="store_true", help="no reader/NLI memo across methods (honest ms/q per method)"
    )
    parser.add_argument("--sweep", choices=["adversaries", "sources", "kappa", "coverage"], default=None)
    parser.add_argument("--sweep-values", type=str, default=None, help='e.g. "1-7" or "4,6,9"')
    parser.add_argument("--out", type=Path, default=None, help="write the JSON result here")
    parser.add_argument("--plots", type=Path, default=None, help="write plots into this folder")
    parser.add_argument("--plot-format", choices=["svg", "png"], default="svg")
    parser.add_argument("--data-dir", type=Path, default=None, help="reference data (default ../shared/data)")
    parser.add_argument("--cache-dir", type=Path, default=None, help="embedding cache (default var/cache/bench)")
    parser.add_argument("--embedding-model", default=None, help="sentence-transformers name or path")
    parser.add_argument(
        "--generator",
        default="reader",
        help='QA datasets: "reader" (offline extractive reader, default) or a local model key '
        "(e.g. qwen2.5-coder-0.5b-instruct-q4_k_m, docs/models.md), run in-process (--llm-runtime)",
    )
    parser.add_argument(
        "--llm-cache-dir", type=Path, default=None, help="generation cache of a local model (default <cache-dir>/llm)"
    )
    parser.add_argument("--models-dir", type=Path, default=None, help="local models folder (default var/models)")
    parser.add_argument(
        "--no-grounding",
        action="store_true",
        help="keep a local model's every answer (default: one that is not an answer grounded in its passages "
        "is replaced by the extractive reader's span, as in the product)",
    )
    parser.add_argument(
        "--unsupported",
        choices=["reader", "abstain"],
        default="reader",
        help="a local model's answer its passages do not hold: the reader's span instead (default) or IDK",
    )
    parser.add_argument("--llm-dtype", choices=["auto", "float32", "bfloat16"], default="auto")
    parser.add_argument(
        "--llm-runtime",
        choices=["ctranslate2", "transformers"],
        default="ctranslate2",
        help="how a local model runs: CTranslate2 int8 with the prompt head cached (the product's "
        "local runtime, default) or transformers float32 (crest-wbx always uses transformers)",
    )


def run(options: dict[str, Any], stdout: TextIO = sys.stdout, stderr: TextIO = sys.stderr) -> dict[str, Any]:
    from core.bench import plots, report

    data_dir = Path(options.get("data_dir") or default_data_dir())
    dataset = options["dataset"]
    stem = options.get("out").stem if options.get("out") else dataset  # type: ignore[union-attr]  # not None: the same lookup is checked
    fmt = options.get("plot_format", "svg")

    def log(message: str) -> None:
        print(message, file=stderr, flush=True)

    if dataset in TRUTH_DATASETS and options.get("protocol") == "multirag":
        from core.bench.embedding_cache import cached_default_embedder
        from core.bench.multirag_eval import evaluate_multirag, multirag_table

        cache_dir = Path(options.get("cache_dir") or default_cache_dir())
        embedder = cached_default_embedder(cache_dir, options.get("embedding_model"))
        result = evaluate_multirag(
            dataset,
            data_dir,
            embedder,
            methods=options.get("methods") or ("multirag", "ra-rag"),
            estimator=options.get("estimator") or DEFAULT_ESTIMATOR,
            max_questions=options.get("max_questions"),
            log=log,
        )
        print(multirag_table(result), file=stdout)
        _write(result, options.get("out"))
        return result

    if dataset in TRUTH_DATASETS:
        from core.bench.truth import load_claims
        from core.bench.truth_methods import evaluate_truth_discovery

        result = evaluate_truth_discovery(load_claims(dataset, data_dir))
        result["default_estimator"] = DEFAULT_ESTIMATOR
        print(report.truth_table(result), file=stdout)
        if options.get("plots"):
            plots.plot_truth(result, Path(options["plots"]), stem, fmt)
        _write(result, options.get("out"))
        return result

    from core.bench.embedding_cache import cached_default_embedder
    from core.bench.qa import QAConfig
    from core.bench.runner import run_qa, run_sweep

    config = QAConfig(
        dataset=dataset,
        prior=options["prior"],
        sources=options["sources"],
        adversaries=options["adversaries"] if options["prior"] in ("adversary-hammer", "topic-hammer") else 0,
        coverage=options["coverage"],
        kappa=options["kappa"],
        tau=options["tau"],
        k=options.get("k", 3),
        min_relevance=float(options.get("min_relevance", 0.4)),
        estimation_queries=options["estimation_queries"],
        estimator=options.get("estimator") or DEFAULT_ESTIMATOR,
        gold_queries=int(options.get("gold_queries") or 0),
        active_gold=int(options.get("active_gold") or 0),
        checks_one_at_a_time=bool(options.get("checks_one_at_a_time")),
        calibrate=not options.get("no_calibrate"),
        collude=bool(options.get("collude")),
        max_questions=options.get("max_questions"),
        memo=not options.get("no_memo"),
        methods=options.get("methods"),
        generator=options.get("generator") or "reader",
        llm_cache_dir=str(options["llm_cache_dir"]) if options.get("llm_cache_dir") else None,
        models_dir=str(options["models_dir"]) if options.get("models_dir") else None,
        llm_dtype=options.get("llm_dtype") or "auto",
        llm_runtime=options.get("llm_runtime") or "ctranslate2",
        grounded=not options.get("no_grounding"),
        unsupported=options.get("unsupported") or "reader",
        topic_tags=bool(options.get("topic_tags")),
    )
    if config.generator != "reader" and not options.get("llm_cache_dir"):
        config.llm_cache_dir = str(Path(options.get("cache_dir") or default_cache_dir()) / "llm")
    config.resolved_methods()  # fail fast on an unknown method name
    seeds = [options["seed"]] if options.get("seed") is not None else list(range(options["seeds"]))
    cache_dir = Path(options.get("cache_dir") or default_cache_dir())
    embedder = cached_default_embedder(cache_dir, options.get("embedding_model"))
    started = time.perf_counter()
    if options.get("sweep"):
        values_text = options.get("sweep_values") or ("1-7" if options["sweep"] == "adversaries" else "4-9")
        values: list[float] | list[int] = (
            [float(v) for v in values_text.split(",")] if options["sweep"] == "coverage" else _ints(values_text)
        )
        result = run_sweep(config, options["sweep"], values, seeds, embedder, data_dir, log)
        print(report.sweep_table(result), file=stdout)
        if options.get("plots"):
            plots.plot_sweep(result, Path(options["plots"]), stem, fmt)
    else:
        result = run_qa(config, seeds, embedder, data_dir, log)
        print(report.qa_table(result), file=stdout)
        if options.get("plots"):
            plots.plot_qa(result, Path(options["plots"]), stem, fmt)
    result["wall_seconds"] = time.perf_counter() - started
    result["embedding_model"] = embedder.name
    print(f"\nwall time {result['wall_seconds']:.1f}s", file=stdout)
    _write(result, options.get("out"))
    return result


def _write(result: dict[str, Any], out: Path | None) -> None:
    from core.bench.runner import json_safe

    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps(json_safe(result), indent=2) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="benchmark", description=__doc__)
    add_arguments(parser)
    run(vars(parser.parse_args(argv)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
