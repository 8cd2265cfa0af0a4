"""Credibility-scaled attention for a local transformers model (CrEst white-box, section 2.3).

Inside :func:`credibility_attention`, every attention layer computes eager attention, then
multiplies the attention weight that each query gives to a document's tokens by that
document's credibility c_d and renormalises each query's row so the total attention stays
1 (the paper's normalisation constant): w'_qj = w_qj s_j / sum_j' w_qj' s_j', with
s_j = c_d for a token j of document d and 1 for every other token (instructions, the
question, generated tokens). A document with c_d < 1 loses attention; a fully credible
document (and the rest of the prompt) gains it.

How: one attention function is registered with transformers' ``AttentionInterface`` (and
the eager mask format with ``AttentionMaskInterface``) under ATTENTION_NAME; the context
manager switches the model to it and restores the model's own implementation on exit,
also on error. The spans live in a ContextVar, so a thread that is not inside the context
(another question on the same shared model) gets plain, unscaled eager attention. Scaled
generations are serialised by a lock: the switch is a property of the shared model.

Token positions are key positions in the model's input (after any left padding), so they
stay valid while generating with a KV cache, whose keys keep every past position.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import torch

ATTENTION_NAME = "crest_credibility"
# Credibilities are floored here so a row whose visible keys all belong to 0-credibility
# documents still renormalises (a division by zero otherwise).
MIN_SCALE = 1e-4


@dataclass(frozen=True)
class DocumentSpan:
    """Tokens [start, end) of the model input belong to a document of this credibility."""

    start: int
    end: int
    credibility: float

    def __post_init__(self) -> None:
        if self.start < 0 or self.end <= self.start:
            raise ValueError(f"a document span needs 0 <= start < end, got [{self.start}, {self.end})")
        if not (math.isfinite(self.credibility) and 0.0 <= self.credibility <= 1.0):
            raise ValueError(f"credibility must lie in [0, 1], got {self.credibility}")


@dataclass
class _Scaling:
    rows: list[list[DocumentSpan]]  # one list per batch row (or one list for every row)
    layers: frozenset[int] | None
    _cache: dict[tuple[int, int, str], torch.Tensor] = field(default_factory=dict)

    def applies_to(self, module: Any) -> bool:
        return self.layers is None or getattr(module, "layer_idx", None) in self.layers

    def scale(self, batch: int, kv_length: int, device: torch.device) -> torch.Tensor:
        """(batch, 1, 1, kv_length) multipliers, cached per shape for the decoding steps."""
        key = (batch, kv_length, str(device))
        if key not in self._cache:
            if len(self.rows) not in (1, batch):
                raise ValueError(f"spans for {len(self.rows)} rows, but the batch has {batch}")
            scale = torch.ones(len(self.rows), kv_length, dtype=torch.float32)
            for r, spans in enumerate(self.rows):
                for span in spans:
                    if span.start < kv_length:
                        scale[r, span.start : min(span.end, kv_length)] = max(span.credibility, MIN_SCALE)
            self._cache[key] = scale.expand(batch, kv_length).reshape(batch, 1, 1, kv_length).to(device)
        return self._cache[key]


_ACTIVE: ContextVar[_Scaling | None] = ContextVar("crest_attention_scaling", default=None)
_SWITCH_LOCK = threading.Lock()
_registered = False


def _repeat_kv(states: torch.Tensor, groups: int) -> torch.Tensor:
    """Grouped-query attention: each key/value head serves ``groups`` query heads."""
    if groups == 1:
        return states
    batch, heads, length, dim = states.shape
    return (
        states[:, :, None, :, :].expand(batch, heads, groups, length, dim).reshape(batch, heads * groups, length, dim)
    )


def _masked(logits: torch.Tensor, mask: torch.Tensor | None, causal: bool) -> torch.Tensor:
    """Apply the mask in any of the forms a forward may hand over: the additive float mask
    registered for ATTENTION_NAME, and, for a forward that built its mask before another
    thread switched the shared model (see the module docstring), sdpa's boolean mask
    (True: attend) or no mask at all (sdpa's implicit causal mask: each query at the end of
    the keys sees the keys up to its own position)."""
    key_length = logits.shape[-1]
    if mask is None:
        query_length = logits.shape[-2]
        if not causal or query_length == 1:
            return logits
        rows = torch.arange(query_length, device=logits.device)[:, None] + (key_length - query_length)
        future = torch.arange(key_length, device=logits.device)[None, :] > rows
        return logits.masked_fill(future, torch.finfo(logits.dtype).min)
    mask = mask[:, :, :, :key_length]
    if mask.dtype == torch.bool:
        return logits.masked_fill(~mask, torch.finfo(logits.dtype).min)
    return logits + mask


def scaled_attention_forward(
    module: Any,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float,
    dropout: float = 0.0,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Eager attention (as transformers' ``eager_attention_forward``) plus the credibility
    scaling of the active context, if any, on the softmax weights."""
    groups = int(getattr(module, "num_key_value_groups", 1))
    key_states = _repeat_kv(key, groups)
    value_states = _repeat_kv(value, groups)
    logits = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    softcap = kwargs.get("softcap")
    if softcap:
        logits = torch.tanh(logits / softcap) * softcap
    logits = _masked(logits, attention_mask, bool(getattr(module, "is_causal", True)))
    weights = torch.nn.functional.softmax(logits, dim=-1, dtype=torch.float32)
    state = _ACTIVE.get()
    if state is not None and state.applies_to(module):
        weights = weights * state.scale(weights.shape[0], weights.shape[-1], weights.device)
        weights = weights / weights.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(torch.float32).tiny)
    weights = weights.to(query.dtype)
    weights = torch.nn.functional.dropout(weights, p=dropout, training=bool(getattr(module, "training", False)))
    output = torch.matmul(weights, value_states).transpose(1, 2).contiguous()
    return output, weights


def register_scaled_attention() -> None:
    """Make ATTENTION_NAME a valid ``attn_implementation`` (idempotent)."""
    global _registered
    if _registered:
        return
    from transformers import AttentionInterface, AttentionMaskInterface
    from transformers.masking_utils import eager_mask

    AttentionInterface.register(ATTENTION_NAME, scaled_attention_forward)
    AttentionMaskInterface.register(ATTENTION_NAME, eager_mask)  # additive float masks, as eager expects
    _registered = True


def _rows(spans: Sequence[DocumentSpan] | Sequence[Sequence[DocumentSpan]]) -> list[list[DocumentSpan]]:
    if all(isinstance(s, DocumentSpan) for s in spans):
        return [[s for s in spans if isinstance(s, DocumentSpan)]]
    rows: list[list[DocumentSpan]] = []
    for row in spans:
        if isinstance(row, DocumentSpan) or not all(isinstance(s, DocumentSpan) for s in row):
            raise TypeError("spans must be DocumentSpans, or one sequence of DocumentSpans per batch row")
        rows.append(list(row))
    return rows


@contextmanager
def credibility_attention(
    model: Any,
    spans: Sequence[DocumentSpan] | Sequence[Sequence[DocumentSpan]],
    *,
    layers: Collection[int] | None = None,
) -> Iterator[None]:
    """Scale attention to each document's tokens by its credibility while inside; the
    model's own attention implementation is back on exit. ``spans``: one sequence for
    every batch row, or one sequence per row (left padding shifts positions per row).
    ``layers``: the decoder layer indices to scale (default: all)."""
    register_scaled_attention()
    state = _Scaling(_rows(spans), frozenset(layers) if layers is not None else None)
    with _SWITCH_LOCK:
        previous = model.config._attn_implementation
        model.set_attn_implementation(ATTENTION_NAME)
        token = _ACTIVE.set(state)
        try:
            yield
        finally:
            _ACTIVE.reset(token)
            model.set_attn_implementation(previous)


def token_spans(offsets: Sequence[tuple[int, int]], char_spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Token index ranges [start, end) covering each character range [a, b) of the text,
    from a fast tokenizer's offset mapping (a token belongs to a range it overlaps).
    Raises ValueError when a range covers no token (it was truncated away)."""
    out: list[tuple[int, int]] = []
    for a, b in char_spans:
        inside = [i for i, (s, e) in enumerate(offsets) if e > s and s < b and e > a]
        if not inside:
            raise ValueError(f"characters [{a}, {b}) map to no token")
        out.append((inside[0], inside[-1] + 1))
    return out
