"""Forms: every input of the dashboard's pages goes through one.

- ``shared``: fields shared by the admin, the API and the pages (bounded JSON, reference
  answers) and the admin's topic edit form; re-exported here. (A fact query's byte limit,
  ``validate_question_bytes``, is a rule of the model: core.models.)
- ``query``: the pages' query strings (filters, page numbers, orders, the item shown).
- ``ask``: the ask form and its follow-ups, with the sources chosen.
- ``runs``: starting an estimation run or a claims run, and recording a run's check.
- ``feedback``: an analyst's feedback on an answer or on one source's vote.

The page forms live in their own modules (imported from there) so that importing this
package, as the admin does, loads no page code. Forms sit above the services (they may
use them); nothing below the entry points imports a form.
"""

from core.forms.shared import (
    JSON_FORMFIELD_OVERRIDES,
    BoundedJSONField,
    ReferenceAnswersField,
    TopicEditForm,
)

__all__ = [
    "JSON_FORMFIELD_OVERRIDES",
    "BoundedJSONField",
    "ReferenceAnswersField",
    "TopicEditForm",
]
