"""crowd-kit aggregators on a (task, worker, label) frame, with a compatibility shim.

crowd-kit 1.4.2's ``Wawa.predict`` calls scikit-learn's ``check_is_fitted``, which recent
scikit-learn rejects for classes that are not estimators. ``Wawa.fit`` still works, and
Wawa's prediction is by definition a majority vote weighted by the fitted skills, so the
prediction is taken from crowd-kit's own ``MajorityVote`` with those skills.
"""

from __future__ import annotations

from typing import Any

# Frames, Series and fitted models here are pandas and crowd-kit objects, which have no type
# stubs in this environment: they stay untyped at this boundary.


def wawa_fit_predict(frame: Any) -> tuple[Any, Any]:
    """Wawa labels (Series by task) and skills (Series by worker)."""
    from crowdkit.aggregation import MajorityVote, Wawa

    model = Wawa().fit(frame)
    labels = MajorityVote().fit(frame, skills=model.skills_).labels_
    return labels, model.skills_


def dawid_skene_probas(frame: Any, n_iter: int = 100) -> Any:
    """DawidSkene posterior over labels (DataFrame: task x label)."""
    from crowdkit.aggregation import DawidSkene

    return DawidSkene(n_iter=n_iter).fit_predict_proba(frame)
