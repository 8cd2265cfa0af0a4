"""Forms: every input of the dashboard's pages goes through one.

- ``shared``: fields shared by the admin, the API and the pages (bounded JSON, reference
  answers, a question's byte limit) and the admin's topic edit form; re-exported here.
- ``query``: the pages' query strings (filters, page numbers, orders, the item shown).
- ``ask``: the ask form and its follow-ups, with the sources chosen.
- ``runs``: starting an estimation run or a claims run, and recording a run's check.
- ``feedback``: an analyst's feedback on an answer or on one source's vote.

The page forms live in their own modules (imported from there) so that importing this
package, as the services and the API do for ``validate_question_bytes``, loads no page code.
"""

from core.forms.shared import (
    JSON_FORMFIELD_OVERRIDES,
    MAX_QUESTION_BYTES,
    BoundedJSONField,
    ReferenceAnswersField,
    TopicEditForm,
    validate_question_bytes,
)

__all__ = [
    "JSON_FORMFIELD_OVERRIDES",
    "MAX_QUESTION_BYTES",
    "BoundedJSONField",
    "ReferenceAnswersField",
    "TopicEditForm",
    "validate_question_bytes",
]
