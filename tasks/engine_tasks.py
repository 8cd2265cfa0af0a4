"""Celery tasks of the RA-RAG engine (answering questions, estimation runs)."""
