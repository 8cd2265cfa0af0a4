"""The names of an estimation run's claims (runtime.locks.claim): one per batch of (query,
source) pairs, one for finishing the run."""

from __future__ import annotations

from collections.abc import Sequence


def batch_claim_name(run_id: int, pairs: Sequence[tuple[int, int]]) -> str:
    """One batch of one run: the same pairs in any order are the same batch."""
    return f"rrag:estimation-batch:{run_id}:" + ",".join(f"{q}-{s}" for q, s in sorted(pairs))


def finish_claim_name(run_id: int) -> str:
    return f"rrag:estimation-finish:{run_id}"
