"""White-box generation: a local transformers model generating with the attention to each
passage scaled by its credibility (CrEst white-box, section 2.3; the attention edit itself
is :mod:`core.engine.backends.generation.attention`).

The strategy (``crest-wbx``) decides the credibilities; this module holds the model side:
which generators lend their loaded (tokenizer, model), the exact prompt text the generator
would send, where each passage's tokens lie in it, and the scaled greedy generation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from core.engine.backends.generation.base import CausalLM, GenerationRequest, Tokenizer
from core.engine.backends.generation.grounded import GroundedGenerator
from core.engine.backends.generation.prompts import quote_context, render_chat, user_prompt


@runtime_checkable
class WhiteBoxModel(Protocol):
    """A generator that lends its loaded transformers (tokenizer, model)."""

    def white_box(self) -> tuple[Tokenizer, CausalLM]: ...


@runtime_checkable
class RendersPrompts(Protocol):
    """A generator that says the exact text it gives its model for a request."""

    def render(self, request: GenerationRequest) -> str: ...


def white_box_of(generator: object) -> tuple[Tokenizer, CausalLM] | None:
    """The (tokenizer, model) a generator lends, or None when it has none to lend (a hosted
    model, the extractive reader). The product's grounding wrapper lends its model's."""
    if isinstance(generator, GroundedGenerator):
        generator = generator.model
    if isinstance(generator, WhiteBoxModel):
        return generator.white_box()
    return None


def rendered_prompt(generator: object, tokenizer: Tokenizer, request: GenerationRequest) -> str:
    """The text the generator would give its model for ``request``: its own rendering
    when it lends one, else the tokenizer's chat template over the user prompt."""
    if isinstance(generator, GroundedGenerator):
        generator = generator.model
    if isinstance(generator, RendersPrompts):
        return generator.render(request)
    return render_chat(tokenizer, user_prompt(request.prompt, request.question, request.passages))


def document_char_spans(rendered: str, passages: Sequence[str]) -> list[tuple[int, int]]:
    """Where each passage's (fence-defused) text lies in the rendered prompt: found in
    order inside the quoted context block, so a passage repeated in the instructions or in
    another passage is not mistaken for it."""
    block = quote_context(passages)
    base = rendered.rfind(block)
    if base < 0:
        raise ValueError("the rendered prompt does not contain the quoted passages verbatim")
    spans: list[tuple[int, int]] = []
    cursor = base
    for i, text in enumerate(passages, start=1):
        safe = text.replace('"""', "'''")
        marker = f'[{i}] """'
        start = rendered.index(marker, cursor) + len(marker)
        spans.append((start, start + len(safe)))
        cursor = start + len(safe)
    return spans


def generate_with_credibility(
    tokenizer: Tokenizer,
    model: CausalLM,
    rendered: str,
    passages: Sequence[str],
    credibility: Sequence[float],
    max_new_tokens: int,
) -> tuple[str, int, int, list[tuple[int, int]]]:
    """Greedy generation with attention scaled per passage; returns the text, prompt and
    completion token counts, and the passages' token spans."""
    import torch

    from core.engine.backends.generation.attention import DocumentSpan, credibility_attention, token_spans

    char_spans = document_char_spans(rendered, passages) if passages else []
    if getattr(tokenizer, "is_fast", False):
        encoded = tokenizer(rendered, return_tensors="pt", return_offsets_mapping=True)
        offsets = [tuple(o) for o in encoded.pop("offset_mapping")[0].tolist()]
        spans = token_spans(offsets, char_spans)
    else:  # a slow tokenizer has no offsets: count the tokens of each prefix
        encoded = tokenizer(rendered, return_tensors="pt")
        spans = [
            (len(tokenizer(rendered[:a])["input_ids"]), len(tokenizer(rendered[:b])["input_ids"]))
            for a, b in char_spans
        ]
    document_spans = [DocumentSpan(s, e, float(c)) for (s, e), c in zip(spans, credibility, strict=True) if e > s]
    inputs = {k: encoded[k].to(model.device) for k in ("input_ids", "attention_mask") if k in encoded}
    with torch.no_grad(), credibility_attention(model, document_spans):
        generated = model.generate(
            **inputs, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=tokenizer.pad_token_id
        )
    prompt_len = int(inputs["input_ids"].shape[1])
    new_tokens = generated[0][prompt_len:]
    if tokenizer.eos_token_id is not None:
        stop = (new_tokens == tokenizer.eos_token_id).nonzero()
        if len(stop):
            new_tokens = new_tokens[: int(stop[0])]
    text: str = tokenizer.decode(new_tokens, skip_special_tokens=True)
    return text, prompt_len, int(len(new_tokens)), spans
