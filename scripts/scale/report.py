"""The benchmark's printed report and its plot of results across sizes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np


def report(result: dict[str, Any]) -> None:
    c, r, m = result["config"], result["retrieval"], result["machine"]
    print()
    print(
        f"{c['chunks']:,} chunks, {c['sources']} sources, top-{c['k']}, {c['queries']} queries; "
        f"{m['cpus']} CPUs, load average {m['load_average']}; {m['postgres']}, pgvector {m['pgvector']}, "
        f"shared_buffers {m['shared_buffers']}"
    )
    print(f"exact search: median {r['exact_median_ms']} ms, p95 {r['exact_p95_ms']} ms")
    print()
    print("| hnsw.ef_search | connections | median ms | p95 ms | recall@k | sources short of k | speed-up vs exact |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    recall_key = f"recall_at_{c['k']}"
    for cfg in r["configs"]:
        print(
            f"| {cfg['ef_search']} | {cfg.get('fanout', 1)} | {cfg['median_ms']} | {cfg['p95_ms']} | {cfg[recall_key]} | "
            f"{cfg['sources_short_of_k']} | {cfg['speedup_vs_exact']}x |"
        )
    b, d = result["build"], result["disk"]
    print()
    if b is None:
        print("per-source indexes: those of the kept database (--reuse: not built in this run)")
    else:
        print(
            f"per-source indexes: {b['sources_indexed']} built in {b['total_s']} s (median {b['median_s']} s, "
            f"max {b['max_s']} s); load {result['load_s']} s; all-chunks HNSW {result['global_index_build_s']} s"
        )
    mib = {k: round(v / 2**20) for k, v in d.items()}
    print(f"disk MiB: {mib}")
    if result.get("first_round"):
        f = result["first_round"]
        print(f"one search over {f['sources']} sources (ra-rag's first round): median {f['median_ms']} ms")
    if result.get("pooled"):
        print(f"pooled top-{result['pooled']['k']}: median {result['pooled']['median_ms']} ms")
    if result.get("partial_index_comparison"):
        print(f"partial indexes instead: {result['partial_index_comparison']}")


def _setting(config: dict[str, Any]) -> tuple[int, int]:
    """What a timed row measured: (ef_search, connections)."""
    return config["ef_search"], config.get("fanout", 1)


def plot(paths: list[str], out: Path) -> None:
    """Three panels over the runs (chunks / sources): median latency of exact search and of
    each ef_search, recall@k of each ef_search, per-source index build time and disk."""
    from core.bench.plots import _pyplot

    loaded = [json.loads(Path(p).read_text()) for p in paths]
    runs = [r for r in loaded if r.get("build") is not None]
    by_id = {r["build_id"]: r for r in runs if r.get("build_id")}
    for r in loaded:
        # A --reuse run timed more settings on the database a build run kept: its rows join
        # that run's (found by the build id the database carried), never replacing a setting
        # the build run timed itself.
        if r.get("build") is not None:
            continue
        built = by_id.get(r.get("reused_build_id") or "")
        if built is None:
            raise SystemExit(
                f"--plot: a --reuse run needs the run that built its database ({r.get('reused_build_id')})"
            )
        if built["config"]["k"] != r["config"]["k"]:
            raise SystemExit("--plot: a --reuse run with another k than the run that built its database")
        configs = built["retrieval"]["configs"]
        timed = {_setting(c) for c in configs}
        for c in r["retrieval"]["configs"]:
            if _setting(c) not in timed:
                configs.append(c)
                timed.add(_setting(c))
    runs.sort(key=lambda r: (r["config"]["chunks"], r["config"]["sources"]))
    plt = _pyplot()
    xs = np.arange(len(runs))
    labels = [f"{c / 1e6:g}M" if (c := r["config"]["chunks"]) >= 1e6 else f"{c / 1e3:g}k" for r in runs]
    labels = [f"{label} chunks\n{r['config']['sources']} sources" for label, r in zip(labels, runs, strict=True)]
    efs = sorted({cfg["ef_search"] for r in runs for cfg in r["retrieval"]["configs"]})
    fanouts = sorted({cfg.get("fanout", 1) for r in runs for cfg in r["retrieval"]["configs"]})

    def per_ef(ef: int, key: str, fanout: int = 1) -> list[float]:
        return [
            next(
                (c[key] for c in r["retrieval"]["configs"] if c["ef_search"] == ef and c.get("fanout", 1) == fanout),
                np.nan,
            )
            for r in runs
        ]

    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    ax = axes[0]
    ax.plot(xs, [r["retrieval"]["exact_median_ms"] for r in runs], marker="o", color="black", label="exact search")
    for ef in efs:
        for fanout in fanouts:
            split = f", {fanout} connections" if fanout > 1 else ""
            ax.plot(
                xs,
                per_ef(ef, "median_ms", fanout),
                marker="o",
                linestyle="--" if fanout > 1 else "-",
                label=f"per-source HNSW, ef_search {ef}{split}",
            )
    ax.axhline(100, color="grey", linewidth=0.8, linestyle="--")
    ax.set_yscale("log")
    ax.set_ylim(top=20 * max(r["retrieval"]["exact_median_ms"] for r in runs))  # room for the legend
    ax.set_ylabel("median ms, top-3 of every source")
    ax.legend(fontsize=6, loc="upper left")
    ax = axes[1]
    for ef in efs:
        ax.plot(
            xs,
            [per_ef(ef, f"recall_at_{r['config']['k']}")[i] for i, r in enumerate(runs)],
            marker="o",
            label=f"ef_search {ef}",
        )
    ax.axhline(0.95, color="grey", linewidth=0.8, linestyle="--")
    ax.set_ylim(0.85, 1.0)
    ax.set_ylabel("recall@3 against exact search")
    ax.legend(fontsize=7)
    ax = axes[2]
    width = 0.38
    ax.bar(xs - width / 2, [r["build"]["total_s"] / 60 for r in runs], width, label="per-source index build (min)")
    disk_gib = [(r["disk"]["vector_tables_bytes"] + r["disk"]["vector_indexes_bytes"]) / 2**30 for r in runs]
    ax.bar(xs + width / 2, disk_gib, width, label="per-source tables + indexes (GiB)")
    ax.legend(fontsize=7)
    for ax in axes:
        ax.set_xticks(xs, labels, fontsize=8)
    fig.suptitle("Per-source top-3 retrieval (scripts/bench_scale.py; 2 shared CPU cores)", fontsize=10)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    plt.close(fig)
    print(f"plot written to {out}")
