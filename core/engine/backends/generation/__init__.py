"""Answer generators: OpenAI-compatible chat, local transformers, offline extractive reader."""

from core.engine.backends.generation.base import Generation, GenerationRequest, Generator
from core.engine.backends.generation.extractive import ExtractiveReader
from core.engine.backends.generation.local_transformers import TransformersGenerator
from core.engine.backends.generation.openai_chat import GenerationError, OpenAIChatGenerator

__all__ = [
    "ExtractiveReader",
    "Generation",
    "GenerationError",
    "GenerationRequest",
    "Generator",
    "OpenAIChatGenerator",
    "TransformersGenerator",
]
