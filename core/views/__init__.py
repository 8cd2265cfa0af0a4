"""Dashboard views, one module per page family (asking, sources, runs, conflicts)."""
