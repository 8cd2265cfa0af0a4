"""Benchmark harness for reliability-aware multi-source RAG (the RA-RAG paper's protocol).

Framework-free: nothing here imports Django. The management command
``python manage.py benchmark`` is a thin wrapper around :mod:`core.bench.cli`.

Modules
- ``datasets``: load PoisonedRAG and RAMDocs into :class:`~core.bench.datasets.BenchQuestion`.
- ``corpus``: simulate sources with reliability p_i and coverage r_i and give them documents.
- ``qa``: run the engine's strategies (plus crowd-kit aggregators) over a simulated corpus.
- ``truth``, ``truth_methods``: truth discovery on real multi-source claims (flights, books).
- ``metrics``: accuracy, intervals, correlations.
- ``report``, ``plots``, ``cli``: tables, JSON, figures and the command line.
"""
