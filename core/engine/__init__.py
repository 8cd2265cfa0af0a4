"""The reliability-aware RAG engine: framework-free, typed Python.

Nothing under this package imports Django (ruff's banned-api rule TID251 enforces it, and
``mypy --strict`` checks it), so the benchmark and the unit tests use it on an in-memory
corpus and the Django shell around it (``core.services``, ``sources``, ``tasks``) supplies
the database retriever and the configured backends.

- ``types``, ``text``, ``lexical``, ``chunking``: data types and text helpers
- ``backends``: embeddings, NLI, generators (extractive reader, OpenAI-compatible, transformers)
- ``steps``: alignment filter, answer clustering, source selection, voting, in-memory retrieval
- ``reliability``: source-reliability estimators behind one protocol (IWMV, TruthFinder)
- ``estimation``: answering fact-checking queries and estimating from the responses
- ``graphs``: conflict graph, collusion blocs, MDS layout
- ``strategies``: the answer-strategy contract, its registry and the built-in strategies
"""
