"""Markdown tables for the benchmark's results."""

from __future__ import annotations

import math
from typing import Any

ESTIMATE_LABELS = {
    "iwmv": "IWMV w_i",
    "truthfinder": "TruthFinder t(w)",
    "onecoin": "one-coin w_i",
    "accucopy": "AccuCopy w_i",
}  # estimator -> what it reports


def _num(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}f}"


def qa_table(summary: dict[str, Any]) -> str:
    lines = [
        "| method | accuracy | 95% CI | ECE | calls/q | tokens/q | ms/q |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for name, m in summary["methods"].items():
        lo, hi = m["ci95"]
        lines.append(
            f"| {name} | {_num(m['accuracy'])} | [{_num(lo)}, {_num(hi)}] | {_num(m.get('ece'))} "
            f"| {_num(m['calls_per_question'], 2)} "
            f"| {_num(m['tokens_per_question'], 0)} | {_num(1000 * m['seconds_per_question'], 1)} |"
        )
    rel = summary.get("reliability", {})
    estimator = summary.get("config", {}).get("estimator", "iwmv")
    estimate = ESTIMATE_LABELS.get(estimator, f"{estimator} w_i")
    lines.append("")
    lines.append(
        f"Reliability estimate vs truth ({estimate} vs p_i, mean over seeds): Pearson {_num(rel.get('pearson'))}, "
        f"Spearman {_num(rel.get('spearman'))}; per source and topic: Pearson {_num(rel.get('topic_pearson'))}"
    )
    copy = summary.get("copy_detection") or {}
    if copy.get("flagged") or copy.get("colluding"):
        lines.append(
            f"Copy detection: {copy['flagged']} pair(s) flagged, {copy['colluding']} colluding; "
            f"precision {_num(copy.get('precision'))}, recall {_num(copy.get('recall'))}"
            + (
                f"; shown as copying (identified estimates only): {copy['shown_as_copying']}, precision "
                f"{_num(copy.get('shown_precision'))}, recall {_num(copy.get('shown_recall'))}"
                if "shown_as_copying" in copy
                else ""
            )
        )
    lines.extend(attribution_table(summary))
    return "\n".join(lines)


def attribution_table(summary: dict[str, Any]) -> list[str]:
    """The ceilings, and each method's wrong answers by the stage that lost them."""
    limits = summary.get("ceilings") or {}
    if not limits:
        return []
    from core.bench.attribution import STAGES

    lines = [
        "",
        "Ceilings (a perfect reader): " + ", ".join(f"{key} {_num(value)}" for key, value in limits.items()),
        "",
        "| method | wrong | " + " | ".join(STAGES) + " | wrong at >= 0.8, no note | outside: IDK or note |",
        "| --- | ---: |" + " ---: |" * len(STAGES) + " ---: | ---: |",
    ]
    for name, m in summary["methods"].items():
        lost = m.get("lost_at") or {}
        done, asked = m.get("outside_abstained_or_warned") or [0, 0]
        lines.append(
            f"| {name} | {sum(lost.values())} | "
            + " | ".join(str(lost.get(s, 0)) for s in STAGES)
            + f" | {m.get('wrong_confident_unwarned', 0)} | {f'{done}/{asked}' if asked else '-'} |"
        )
    return lines


def sweep_table(result: dict[str, Any]) -> str:
    sweep = result["sweep"]
    points = sweep["points"]
    header = "| method | " + " | ".join(f"{sweep['parameter']}={p['value']}" for p in points) + " |"
    lines = [header, "| --- |" + " ---: |" * len(points)]
    for name in points[0]["methods"]:
        cells = []
        for p in points:
            m = p["methods"][name]
            half = (m["ci95"][1] - m["ci95"][0]) / 2
            cells.append(f"{_num(m['accuracy'])} ± {_num(half)}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("| *Pearson(w, p)* | " + " | ".join(_num(p["reliability"]["pearson"]) for p in points) + " |")
    if "ra-rag" in points[0]["methods"]:
        lines.append("| *ECE ra-rag* | " + " | ".join(_num(p["methods"]["ra-rag"].get("ece")) for p in points) + " |")
    if any((p.get("copy_detection") or {}).get("colluding") for p in points):
        lines.append(
            "| *copy precision / recall* | "
            + " | ".join(
                f"{_num(p['copy_detection'].get('precision'))} / {_num(p['copy_detection'].get('recall'))}"
                for p in points
            )
            + " |"
        )
    return "\n".join(lines)


def truth_table(result: dict[str, Any]) -> str:
    lines = [
        f"{result['dataset']}: {result['claims']} claims, {result['sources']} sources, {result['tasks']} tasks; "
        f"source correlations over the {result.get('sources_in_correlation', '?')} sources with at least "
        f"{result.get('min_source_claims', 1)} labelled claims",
        "",
        "| method | accuracy | correct / labelled | Pearson (source acc.) | Spearman | seconds |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    default = result.get("default_estimator")
    for name, m in result["methods"].items():
        label = f"{name} (default)" if name == default else name
        lines.append(
            f"| {label} | {_num(m['accuracy'])} | {m['correct']} / {m['labelled_tasks']} | {_num(m['source_pearson'])} "
            f"| {_num(m['source_spearman'])} | {_num(m['seconds'], 2)} |"
        )
    return "\n".join(lines)
