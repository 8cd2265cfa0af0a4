"""Keep Source.chunk_count (denormalised; it decides which sources get an HNSW graph of their
own) right when documents are deleted: one at a time or in bulk, from the admin or anywhere
else. After `migrate`, queue the per-source index builds that are missing
(sources/vector_index.py; an existing database upgraded to per-source indexes)."""

from __future__ import annotations

import logging

from django.db import connections
from django.db.models.signals import post_delete
from django.dispatch import receiver

from sources.models import Chunk, Document, Source, SourceVectorIndex

logger = logging.getLogger(__name__)


def recount_chunks(source_ids: list[int]) -> None:
    """Set each source's chunk_count to the chunks it holds now."""
    for source_id in sorted(set(source_ids)):
        Source.objects.filter(pk=source_id).update(chunk_count=Chunk.objects.filter(source_id=source_id).count())


@receiver(post_delete, sender=Document, dispatch_uid="sources.recount_chunks_after_document_delete")
def recount_after_document_delete(sender: type[Document], instance: Document, **kwargs: object) -> None:
    # The document's chunks are gone by now (a cascade deletes them before the document).
    recount_chunks([instance.source_id])


def request_missing_indexes(sender: object, using: str = "default", **kwargs: object) -> None:
    """post_migrate (connected in SourcesConfig.ready): sources past SOURCE_INDEX_MIN_CHUNKS
    without a vector index get a build job. Never fails the migration: without a broker the
    builds wait for `manage.py source_indexes --reconcile`."""
    from sources.vector_index import request_missing_builds

    if using != "default" or SourceVectorIndex._meta.db_table not in connections[using].introspection.table_names():
        return
    try:
        queued = request_missing_builds()
    except Exception:
        logger.warning("could not queue the missing per-source index builds", exc_info=True)
        return
    if queued:
        logger.info("queued %s per-source index build(s)", queued)
