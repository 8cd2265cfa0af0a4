"""Answer generators: OpenAI-compatible chat, local transformers, offline extractive reader."""

from core.generation.base import Generation, GenerationRequest, Generator
from core.generation.extractive import ExtractiveReader
from core.generation.local_transformers import TransformersGenerator
from core.generation.openai_chat import GenerationError, OpenAIChatGenerator

__all__ = [
    "ExtractiveReader",
    "Generation",
    "GenerationError",
    "GenerationRequest",
    "Generator",
    "OpenAIChatGenerator",
    "TransformersGenerator",
]
