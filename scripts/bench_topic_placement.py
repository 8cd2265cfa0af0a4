"""How surely a new question is placed in its topic (issue 39): PoisonedRAG's three subsets
(NQ, HotpotQA, MS MARCO) as topics, ``--train`` questions drawn at random as the discovery
queries, the rest placed by the product's topic model (core.engine.topics) in each view (the
sentence embedding by each topic's closest prototype, the lexical view by its centroid, as the
product places), at the in-sample temperature rule (`_temperature`: the
discovery queries sit TARGET_CONFIDENCE in their own topic) and at the held-out calibrated one
(`placement_temperature`). Reported per view and rule, over ``--repeats`` draws: how often the
topic a question is placed in most is its own (accuracy), its mean membership in its own
topic (what the per-topic weights of its sources are made of), and the mean log of it.

In memory, no database; the embeddings come from the benchmark's cache (all-MiniLM-L6-v2).

    .venv/bin/python scripts/bench_topic_placement.py [--train 100] [--repeats 10] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.bench.datasets import load_questions
from core.bench.embedding_cache import cached_default_embedder
from core.bench.machine import as_dict as machine
from core.bench.paths import default_cache_dir, default_data_dir
from core.engine import topics as T


def _points(members: np.ndarray, prototypes: bool) -> np.ndarray:
    """A topic's points: its prototypes as `_fit` cuts them, or its centroid."""
    return T.topic_points(members) if prototypes else T._unit(members.sum(axis=0)[None, :])


def _closest(space: np.ndarray, points: list[np.ndarray]) -> np.ndarray:
    """queries x topics: the cosine to each topic's closest point."""
    return np.stack([(space @ p.T).max(axis=1) for p in points], axis=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--data-dir", type=Path, default=default_data_dir())
    parser.add_argument("--cache-dir", type=Path, default=default_cache_dir())
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    questions = load_questions("poisonedrag", args.data_dir)
    texts = [q.question for q in questions]
    subsets = sorted({q.topic for q in questions})
    truth = np.array([subsets.index(q.topic) for q in questions], dtype=np.int64)
    embedding = T._unit(np.asarray(cached_default_embedder(args.cache_dir).encode(texts), dtype=np.float64))
    rng = np.random.default_rng(0)
    rows: dict[str, list[tuple[float, float, float]]] = {}
    for _ in range(args.repeats):
        order = rng.permutation(len(texts))
        train, test = order[: args.train], order[args.train :]
        idf = T.lexical_idf([texts[i] for i in train])
        for view, space in (("embedding", embedding), ("lexical", T.lexical_vectors(texts, idf))):
            labels = truth[train]
            # As the product places: the embedding by each topic's closest prototype (`_fit`),
            # the lexical view by its centroid (`_to_lexical`).
            prototypes = view == "embedding"
            points = [_points(space[train][labels == t], prototypes) for t in range(len(subsets))]
            in_sample = _closest(space[train], points)
            for rule, temperature in (
                ("in-sample", T._temperature(in_sample, labels)),
                ("calibrated", T.placement_temperature(space[train], labels, in_sample, prototypes=prototypes)),
            ):
                share = T._softmax(_closest(space[test], points) / temperature)
                own = share[np.arange(len(test)), truth[test]]
                placed = float((share.argmax(axis=1) == truth[test]).mean())
                rows.setdefault(f"{view} {rule}", []).append((placed, float(own.mean()), float(np.log(own).mean())))
    summary = {
        key: {
            "accuracy": round(float(np.mean([r[0] for r in values])), 4),
            "own_membership": round(float(np.mean([r[1] for r in values])), 4),
            "mean_log_own": round(float(np.mean([r[2] for r in values])), 4),
        }
        for key, values in rows.items()
    }
    result = {
        "machine": machine(),
        "train": args.train,
        "repeats": args.repeats,
        "questions": len(texts),
        "placement": summary,
    }
    for key, value in summary.items():
        print(f"{key:22s} {value}")
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
