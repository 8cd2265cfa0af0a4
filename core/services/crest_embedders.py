"""CrEst's extra ensemble embedders, from settings (CREST_EXTRA_EMBEDDERS).

Registered once per process at start-up (CoreConfig.ready) in core.engine.credibility's
"all" ensemble as lazy factories: nothing loads here, the weights load when a CrEst
strategy first needs them, in the worker that answers. What start-up does check, cheaply
(no hashing): every name is a known packaged embedder and is prepared in LLM_MODELS_DIR, or
its hash-pinned packages are installed so the worker can prepare it; otherwise the process
refuses to start with the command that fixes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from core.engine.backends.embedder_files import EMBEDDERS, lazy_factory, unavailable_reason
from core.engine.credibility import register_ensemble_embedder


def register_extra_embedders(names: Sequence[str] | None = None, models_dir: Path | str | None = None) -> list[str]:
    """Register ``names`` (default: settings.CREST_EXTRA_EMBEDDERS), prepared in
    ``models_dir`` (default: settings.LLM_MODELS_DIR); returns the names registered.
    ImproperlyConfigured, naming the setting, for an unknown or unavailable one (nothing is
    registered then)."""
    chosen = list(settings.CREST_EXTRA_EMBEDDERS if names is None else names)
    folder = Path(settings.LLM_MODELS_DIR if models_dir is None else models_dir)
    unknown = [name for name in chosen if name not in EMBEDDERS]
    if unknown:
        raise ImproperlyConfigured(
            f"CREST_EXTRA_EMBEDDERS: unknown embedder(s) {', '.join(unknown)}; known: {', '.join(sorted(EMBEDDERS))}"
        )
    for name in chosen:
        reason = unavailable_reason(name, folder)
        if reason is not None:
            raise ImproperlyConfigured(
                f"CREST_EXTRA_EMBEDDERS: {reason}. Install it with `scripts/setup.sh "
                f"{EMBEDDERS[name].archive.requirements}` (and prepare it with `.venv/bin/python -m "
                f"core.engine.backends.generation.models_cli prepare {name} {folder}`)"
            )
    factories = {name: lazy_factory(name, folder) for name in chosen}
    for name, factory in factories.items():
        register_ensemble_embedder(name, factory)
    return chosen
