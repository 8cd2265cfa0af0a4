"""The read side: what each page (and the REST API beside it) shows, one module per page.

- ``run_sets``: which runs count (succeeded, full, comparable, the claims runs).
- ``answers``: checking an answer against the reference answers.
- ``sources``: the sources list and a source's page (reliability, trend, disagreements).
- ``copying``: copier pairs and blocs detected by a run's estimator (runs, sources, conflicts).
- ``conflicts``: the conflicts page, in answers mode and in claims mode, assembled per
  mode by ``conflicts_page``.
- ``runs``: a run's page (agreement matrix, changes, a claims run's summary).
- ``question``: an answer's groups of sources (the ask page and a question's page).
- ``answer_panel``: a question's panel (progress, votes, explanation, follow-up), with
  ``citations`` (the passages it rests on) and ``earlier_answers`` (what changed since).
- ``ask_form``: what the ask form offers (strategies, sources, groups, recent questions).
- ``question_history``: the history page's questions, one row per question asked.
- ``run_page``: a run's result section (changes, scores, agreement matrix or claims).
- ``claims_browser``, ``claim_subject``, ``claim_conflict``: the claims pages, with
  ``claim_scoring`` (MultiRAG's confidences, computed on demand) shared with the API.

Every function returns plain dicts, lists or lazy ``values()`` querysets (for the pager),
runs a bounded number of SQL queries whatever the number of sources, runs or claims, and
never writes. URLs and SVG geometry are the views' (``core.views.charts``,
``core.views.claim_charts``).
"""
