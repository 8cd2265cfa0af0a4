"""Helpers of the platform tests: an embedder that only counts and a sample text to chunk."""

from __future__ import annotations

import numpy as np


class CountingEmbedder:
    """Stands in for the model where only the storage path is under test."""

    name = "counting"
    dimension = 384

    def __init__(self) -> None:
        self.texts: list[str] = []

    def encode(self, texts, batch_size=64):

        self.texts.extend(texts)
        vectors = np.zeros((len(texts), 384), dtype=np.float32)
        vectors[:, 0] = 1.0
        return vectors


SENTENCES = [
    "The Eiffel Tower is a wrought-iron lattice tower in Paris.",
    "It is named after the engineer Gustave Eiffel, whose company designed and built it.",
    "Locally nicknamed the Iron Lady, it was constructed from 1887 to 1889.",
    "It was the centrepiece of the 1889 World's Fair.",
    "Although initially criticised by some artists, it has become a global cultural icon of France.",
    "The tower received 5,889,000 visitors in 2022.",
    "It is 330 metres tall, about the same height as an 81-storey building.",
    "Its base is square, measuring 125 metres on each side.",
]


TEXT = " ".join(SENTENCES)
