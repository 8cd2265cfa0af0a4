"""Ask latency through the product path: ra-rag against vanilla-rag on passages read for the
first time (not a test).

    .venv/bin/python scripts/bench_ask.py --out var/bench/ask.json

On a SCRATCH database ``bench_ask`` (dropped and recreated; never the dev database) it
ingests, with the product's own ingestion (sources.services.ingest_files: parse, chunk,
embed, store), two corpora in turn:

- ``demo``: the six demo sources shipped in sources/demo_data;
- ``twenty``: twenty sources derived from PoisonedRAG the way the demo is
  (scripts/build_demo_data.build), reliabilities spread from 0.95 down to 0.10, the
  unreliable ones colluding on PoisonedRAG's wrong answer.

Each source's reliability is set to its simulated one (this measures answering, not
estimation). Then every question of the demo's "ask" list is asked with
core.services.asking.ask_now (retrieval in PostgreSQL, the configured reader, the offline
NLI, votes and the answer stored), alternating the strategies, with the NLI's vector cache
emptied before each ask: every passage is read for the first time, as on a worker that
just started or a corpus that just grew. The same is repeated with the stored-vector reuse
switched off (the alignment filter then encodes every passage it checks), which is how the
product asked before.

Prints median and p95 latency per strategy and the ratio ra-rag / vanilla-rag per corpus.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.bench import machine  # noqa: E402  (after the path)

sys.path.insert(0, str(ROOT / "scripts"))

import scratch_db  # noqa: E402

BENCH_DB = "bench_ask"
TWENTY_RELIABILITIES = [round(0.95 - i * (0.85 / 19), 3) for i in range(20)]


def twenty_sources() -> list[tuple[str, str, float | dict[str, float], float, str]]:
    return [
        (f"Source {i + 1:02d}", "other", reliability, 0.7, f"Simulated source, reliability {reliability}")
        for i, reliability in enumerate(TWENTY_RELIABILITIES)
    ]


def load(folder: Path) -> int:
    """Ingest every source of a demo-shaped folder; returns the chunks stored."""
    from runtime.backends import configured_embedder
    from sources.models import Source
    from sources.services import ingest_files

    Source.objects.all().delete()
    manifest = json.loads((folder / "manifest.json").read_text())
    embedder = configured_embedder()
    for entry in manifest["sources"]:
        source = Source.objects.create(
            name=entry["name"], kind=entry["kind"], reliability=entry["simulated_reliability"], reliability_answers=60
        )
        [outcome] = ingest_files(source, [folder / entry["file"]], embedder)
        assert not outcome.error, outcome.error
    return sum(Source.objects.values_list("chunk_count", flat=True))


def ask_cold(
    questions: list[str],
    strategies: list[str],
    reuse: bool,
    kappas: Sequence[int | None] | None = None,
    profiles: dict[str, Any] | None = None,
    sources: dict[str, list[tuple[int, int]]] | None = None,
) -> dict[str, list[float]]:
    """Seconds per ask, each strategy on every question, the NLI's vector cache emptied first.
    ra-rag runs once per κ in `kappas` (None: the setting), keyed "ra-rag" or "ra-rag κ=N".
    ``profiles``: a cProfile.Profile per key,
    filled with where each run's asks spent their time (--profile). ``sources``: per key, each
    ask's (sources visited, sources searched), from its trace (κ-RRSS strategies only)."""
    from core.services import asking, engine_context
    from runtime.backends import configured_nli

    original = engine_context.stored_vector_sink
    engine_context.stored_vector_sink = original if reuse else (lambda nli, embedder: None)
    try:
        nli = configured_nli()
        runs: list[tuple[str, str, int | None]] = []
        for strategy in strategies:
            if strategy == "ra-rag" and kappas and kappas != [None]:
                runs += [(f"ra-rag κ={kappa}", strategy, kappa) for kappa in kappas]
            else:
                runs.append((strategy, strategy, None))
        seconds: dict[str, list[float]] = {key: [] for key, _, _ in runs}
        for n, question in enumerate(questions):
            for key, strategy, kappa in runs if n % 2 == 0 else list(reversed(runs)):
                nli._cache.clear()  # type: ignore[attr-defined]  # the NLI backend's private cache
                profiler = profiles.setdefault(key, cProfile.Profile()) if profiles is not None else None
                started = time.perf_counter()
                if profiler:
                    profiler.enable()
                try:
                    asked = asking.ask_now(question, strategy=strategy, kappa=kappa)
                finally:
                    if profiler:
                        profiler.disable()
                seconds[key].append(time.perf_counter() - started)
                trace = asked.trace or {}
                if sources is not None and "searched" in trace:
                    sources.setdefault(key, []).append((len(trace["visited"]), len(trace["searched"])))
                print(f"  {key}: {seconds[key][-1]:.2f} s", flush=True)
        return seconds
    finally:
        engine_context.stored_vector_sink = original


def summary(seconds: dict[str, list[float]], sources: dict[str, list[tuple[int, int]]] | None = None) -> dict[str, Any]:
    rows: dict[str, dict[str, Any]] = {
        s: {
            "median_ms": round(1000 * statistics.median(v), 1),
            "p95_ms": round(1000 * scratch_db.percentile(v, 0.95), 1),
        }
        for s, v in seconds.items()
    }
    for s, counts in (sources or {}).items():
        rows[s]["sources_visited_mean"] = round(statistics.mean(c[0] for c in counts), 2)
        rows[s]["sources_searched_mean"] = round(statistics.mean(c[1] for c in counts), 2)
    base = statistics.median(seconds["vanilla-rag"])
    ratios = {s: round(statistics.median(v) / base, 2) for s, v in seconds.items() if s.startswith("ra-rag")}
    return {"strategies": rows, "ratio_ra_rag_vanilla": ratios.get("ra-rag"), "ratios": ratios}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=30)
    parser.add_argument(
        "--repeat", type=int, default=1, help="ask every question this many times per strategy (steadier medians)"
    )
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--corpora", nargs="+", default=["demo", "twenty"], choices=["demo", "twenty"])
    parser.add_argument("--out", help="write the results as JSON here")
    parser.add_argument("--kappas", help="comma-separated κ values for ra-rag (default: the setting)")
    parser.add_argument(
        "--only-reuse", action="store_true", help="skip the pass without stored-vector reuse (slow generators)"
    )
    parser.add_argument(
        "--profile",
        type=int,
        metavar="N",
        help="print the N functions each strategy's asks spent most time in (cProfile, product pass; "
        "the profiler itself slows the asks, so its timings are not the table's)",
    )
    args = parser.parse_args()

    scratch_db.setup_django(BENCH_DB)
    from build_demo_data import build
    from django.conf import settings

    from core.services import asking

    questions = [q["question"] for q in json.loads((ROOT / "sources/demo_data/queries.json").read_text())["ask"]]
    questions = questions[: args.questions]
    result: dict[str, Any] = {
        "machine": machine.describe(),
        "generator": settings.GENERATOR_BACKEND + (f" ({settings.LLM_MODEL})" if settings.LLM_MODEL else ""),
        "kappa": settings.RA_RAG_KAPPA,
        "k": settings.RETRIEVAL_K,
        "questions": len(questions),
        "repeat": args.repeat,
        "corpora": {},
    }
    strategies = ["vanilla-rag", "ra-rag"]
    for corpus in args.corpora:
        with tempfile.TemporaryDirectory() as tmp:
            folder = ROOT / "sources" / "demo_data"
            if corpus == "twenty":
                folder = Path(tmp)
                build(args.data, folder, twenty_sources())
            started = time.perf_counter()
            chunks = load(folder)
            print(f"{corpus}: {chunks} chunks ingested in {time.perf_counter() - started:.0f} s", flush=True)
        asking.ask_now(questions[0], strategy="ra-rag")  # load the models once, outside the timings
        entry: dict[str, Any] = {"chunks": chunks, "load_average_before": os.getloadavg()[0]}
        kappas = [int(k) for k in args.kappas.split(",")] if args.kappas else None
        passes = [("reuse", True)]
        if not args.only_reuse:
            passes.append(("no_reuse", False))
        for key, reuse in passes:
            counts: dict[str, list[tuple[int, int]]] = {}
            seconds = ask_cold(questions * args.repeat, strategies, reuse, kappas, sources=counts)
            entry[key] = summary(seconds, counts)
        if args.profile:
            profiles: dict[str, Any] = {}
            ask_cold(questions, strategies, True, kappas, profiles)
            for name, profiler in profiles.items():
                out = io.StringIO()
                pstats.Stats(profiler, stream=out).sort_stats(
                    os.environ.get("BENCH_PROFILE_SORT", "cumulative")
                ).print_stats(args.profile)
                print(f"--- {corpus}, {name}: {len(questions)} asks ---\n{out.getvalue()}", flush=True)
        entry["load_average_after"] = os.getloadavg()[0]
        result["corpora"][corpus] = entry
        print(json.dumps(entry, indent=1), flush=True)

    print()
    print(
        f"Cold asks through ask_now, {len(questions)} questions, generator {result['generator']}, "
        f"kappa {result['kappa']}, k {result['k']}; {result['machine']}"
    )
    print(
        "| corpus | chunks | stored vectors reused | vanilla-rag median / p95 ms | ra-rag median / p95 ms | ratio "
        "| ra-rag sources visited / searched (mean) |"
    )
    print("|---|---:|---|---:|---:|---:|---:|")
    for corpus, entry in result["corpora"].items():
        for key, label in (("reuse", "yes (the product)"), ("no_reuse", "no")):
            if key not in entry:
                continue
            r = entry[key]
            v = r["strategies"]["vanilla-rag"]
            for name, ratio in r["ratios"].items():
                a = r["strategies"][name]
                print(
                    f"| {corpus} | {entry['chunks']} | {label} | {v['median_ms']} / {v['p95_ms']} | "
                    f"{name}: {a['median_ms']} / {a['p95_ms']} | {ratio} | "
                    f"{a.get('sources_visited_mean', '')} / {a.get('sources_searched_mean', '')} |"
                )
    scratch_db.write_result(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
