"""Answer generators: OpenAI-compatible chat, local CTranslate2 and transformers, offline extractive reader."""

from core.engine.backends.generation.base import Capability, Generation, GenerationRequest, Generator, TokenScorer
from core.engine.backends.generation.extractive import ExtractiveReader
from core.engine.backends.generation.grounded import GroundedGenerator
from core.engine.backends.generation.local_ctranslate2 import CTranslate2Generator
from core.engine.backends.generation.local_transformers import TransformersGenerator
from core.engine.backends.generation.openai_chat import GenerationError, OpenAIChatGenerator

__all__ = [
    "CTranslate2Generator",
    "Capability",
    "ExtractiveReader",
    "Generation",
    "GenerationError",
    "GenerationRequest",
    "Generator",
    "GroundedGenerator",
    "OpenAIChatGenerator",
    "TokenScorer",
    "TransformersGenerator",
]
