"""Figures (matplotlib, Agg backend): accuracy per method, sweeps, reliability scatter."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_qa(summary: dict[str, Any], out_dir: Path, stem: str, fmt: str = "svg") -> list[Path]:
    plt = _pyplot()
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    names = list(summary["methods"])
    acc = [summary["methods"][n]["accuracy"] for n in names]
    err = [
        [a - summary["methods"][n]["ci95"][0] for n, a in zip(names, acc, strict=True)],
        [summary["methods"][n]["ci95"][1] - a for n, a in zip(names, acc, strict=True)],
    ]
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.bar(names, acc, yerr=err, capsize=3, color="#4c72b0")
    ax.set_ylabel("accuracy")
    ax.set_ylim(0, 1)
    ax.set_title(stem)
    ax.tick_params(axis="x", rotation=45)
    fig.tight_layout()
    path = out_dir / f"{stem}-accuracy.{fmt}"
    fig.savefig(path)
    plt.close(fig)
    paths.append(path)

    fig, ax = plt.subplots(figsize=(4, 4))
    for seed in summary["reliability"]["per_seed"]:
        ids = list(seed["true"])
        ax.scatter(
            [seed["true"][i] for i in ids], [seed["estimated_accuracy"][i] for i in ids], label=f"seed {seed['seed']}"
        )
    ax.plot([0, 1], [0, 1], color="grey", linewidth=0.8)
    ax.set_xlabel("true reliability p_i")
    ax.set_ylabel("IWMV estimate w_i")
    ax.legend(fontsize=7)
    fig.tight_layout()
    path = out_dir / f"{stem}-reliability.{fmt}"
    fig.savefig(path)
    plt.close(fig)
    paths.append(path)
    paths += plot_topics(summary, out_dir, stem, fmt)
    return paths


def plot_topics(summary: dict[str, Any], out_dir: Path, stem: str, fmt: str = "svg") -> list[Path]:
    """Per source, its reliability on each topic as the product weighs it (bars) against the
    truth (marks), first seed: where a source is trusted on one subject and not another."""
    seeds = summary["reliability"]["per_seed"]
    cells = seeds[0].get("topic_cells") if seeds else None
    topics = sorted({c["topic"] for c in cells or []})
    if not cells or len(topics) < 2:
        return []
    plt = _pyplot()
    out_dir.mkdir(parents=True, exist_ok=True)
    sources = sorted({c["source"] for c in cells})
    by = {(c["source"], c["topic"]): c for c in cells}
    width = 0.8 / len(topics)
    colours = ["#2457c5", "#e08a1e", "#3a9d5d", "#8e44ad", "#c0392b", "#7f8c8d"]
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(sources)), 3.6))
    for t, topic in enumerate(topics):
        xs = [i + (t - (len(topics) - 1) / 2) * width for i in range(len(sources))]
        colour = colours[t % len(colours)]
        ax.bar(xs, [by[(s, topic)]["estimated"] for s in sources], width, color=colour, alpha=0.8, label=topic)
        ax.scatter(xs, [by[(s, topic)]["true"] for s in sources], color="black", marker="_", s=120, zorder=3)
    ax.set_xticks(range(len(sources)))
    ax.set_xticklabels([f"source {s}" for s in sources], rotation=30, fontsize=8)
    ax.set_ylim(0, 1)
    ax.set_ylabel("reliability (bar: estimated; mark: true)")
    ax.set_title(f"{stem}: reliability per topic, seed {seeds[0]['seed']}", fontsize=9)
    ax.legend(fontsize=7, ncol=len(topics))
    fig.tight_layout()
    path = out_dir / f"{stem}-topics.{fmt}"
    fig.savefig(path)
    plt.close(fig)
    return [path]


def plot_sweep(result: dict[str, Any], out_dir: Path, stem: str, fmt: str = "svg") -> list[Path]:
    plt = _pyplot()
    out_dir.mkdir(parents=True, exist_ok=True)
    sweep = result["sweep"]
    xs = [p["value"] for p in sweep["points"]]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name in sweep["points"][0]["methods"]:
        ys = [p["methods"][name]["accuracy"] for p in sweep["points"]]
        lo = [p["methods"][name]["ci95"][0] for p in sweep["points"]]
        hi = [p["methods"][name]["ci95"][1] for p in sweep["points"]]
        line = ax.plot(xs, ys, marker="o", label=name)[0]
        ax.fill_between(xs, lo, hi, color=line.get_color(), alpha=0.12)
    ax.set_xlabel(sweep["parameter"])
    ax.set_ylabel("accuracy")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    path = out_dir / f"{stem}-sweep.{fmt}"
    fig.savefig(path)
    plt.close(fig)
    paths = [path]
    paths += plot_calibration(sweep["points"], out_dir, stem, fmt)
    copy = [(p["value"], p.get("copy_detection") or {}) for p in sweep["points"]]
    if any(c.get("colluding") or c.get("flagged") for _, c in copy):
        fig, ax = plt.subplots(figsize=(6, 3.5))
        for key in ("precision", "recall"):
            ax.plot([v for v, _ in copy], [c.get(key) for _, c in copy], marker="o", label=key)
        ax.set_xlabel(sweep["parameter"])
        ax.set_ylim(0, 1.05)
        ax.set_title("copy detection: flagged pairs vs colluding pairs")
        ax.legend()
        fig.tight_layout()
        path = out_dir / f"{stem}-copy-detection.{fmt}"
        fig.savefig(path)
        plt.close(fig)
        paths.append(path)
    return paths


def plot_calibration(points: list[dict[str, Any]], out_dir: Path, stem: str, fmt: str = "svg") -> list[Path]:
    """Reliability diagram (accuracy per confidence bin, pooled over the points) per method."""
    plt = _pyplot()
    pooled: dict[str, dict[float, list[float]]] = {}
    for point in points:
        for name, m in point["methods"].items():
            for b in m.get("reliability_diagram") or []:
                cell = pooled.setdefault(name, {}).setdefault(b["low"], [0.0, 0.0, 0.0])
                cell[0] += b["confidence"] * b["count"]
                cell[1] += b["accuracy"] * b["count"]
                cell[2] += b["count"]
    if not pooled:
        return []
    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.plot([0, 1], [0, 1], color="#999999", linestyle="--", linewidth=1)
    for name, bins in pooled.items():
        rows = sorted((c / n, a / n) for c, a, n in bins.values() if n)
        ax.plot([r[0] for r in rows], [r[1] for r in rows], marker="o", label=name)
    ax.set_xlabel("confidence")
    ax.set_ylabel("accuracy")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_title("reliability diagram")
    ax.legend(fontsize=7)
    fig.tight_layout()
    path = out_dir / f"{stem}-calibration.{fmt}"
    fig.savefig(path)
    plt.close(fig)
    return [path]


def plot_truth(result: dict[str, Any], out_dir: Path, stem: str, fmt: str = "svg") -> list[Path]:
    plt = _pyplot()
    out_dir.mkdir(parents=True, exist_ok=True)
    names = list(result["methods"])
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.bar(names, [result["methods"][n]["accuracy"] for n in names], color="#55a868")
    ax.set_ylim(0, 1)
    ax.set_ylabel("accuracy")
    ax.set_title(f"truth discovery: {result['dataset']}")
    fig.tight_layout()
    path = out_dir / f"{stem}-truth.{fmt}"
    fig.savefig(path)
    plt.close(fig)
    return [path]
