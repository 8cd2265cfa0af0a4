"""Keep Source.chunk_count (denormalised; retrieval chooses exact or HNSW search by it) right
when documents are deleted: one at a time or in bulk, from the admin or anywhere else."""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_delete
from django.dispatch import receiver

from sources.models import Chunk, Document, Source


def recount_chunks(source_ids: list[int]) -> None:
    """Set each source's chunk_count to the chunks it holds now."""
    for source_id in sorted(set(source_ids)):
        Source.objects.filter(pk=source_id).update(chunk_count=Chunk.objects.filter(source_id=source_id).count())


@receiver(post_delete, sender=Document, dispatch_uid="sources.recount_chunks_after_document_delete")
def recount_after_document_delete(sender: Any, instance: Document, **kwargs: Any) -> None:
    # The document's chunks are gone by now (a cascade deletes them before the document).
    recount_chunks([instance.source_id])
