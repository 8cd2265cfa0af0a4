"""A curator's authorities (issue 37): sources whose values fix the items they agree on, as
checked values do; off by default, never inferred from agreement."""

from __future__ import annotations

from core.engine.claims.resolve import authority_values, resolve_claims

Row = tuple[str, tuple[str, str], str]


def world() -> list[Row]:
    """Twenty items: three mirrors of one feed and two independent sites agree on "true-k"
    for sixteen of them; on four, the feed's three sites and one other give "feed-k" and
    only the airline's own site (it lists those four and four others) gives "own-k"."""
    rows: list[Row] = []
    for k in range(20):
        item = (f"F{k}", "departure")
        disputed = k >= 16
        value = f"feed-{k}" if disputed else f"true-{k}"
        rows += [(site, item, value) for site in ("mirror1", "mirror2", "mirror3", "other1")]
        rows.append(("other2", item, f"true-{k}" if not disputed else f"noise-{k}"))
        if k >= 12:
            rows.append(("airline", item, f"own-{k}" if disputed else f"true-{k}"))
    return rows


def test_without_authorities_nothing_changes_and_the_bloc_wins_the_disputed_items():
    rows = world()
    plain = resolve_claims(rows, "accucopy")
    assert plain.truths() == resolve_claims(rows, "accucopy", authorities=()).truths()
    assert all(plain.truths()[(f"F{k}", "departure")] == f"feed-{k}" for k in range(16, 20))


def test_an_authority_fixes_the_items_it_lists_and_they_resolve_with_full_confidence():
    rows = world()
    resolved = resolve_claims(rows, "accucopy", authorities={"airline"})
    truths = resolved.truths()
    assert all(truths[(f"F{k}", "departure")] == f"own-{k}" for k in range(16, 20))
    assert all(truths[(f"F{k}", "departure")] == f"true-{k}" for k in range(16))
    by_item = {(r.subject, r.attribute): r for r in resolved.items}
    assert by_item[("F17", "departure")].confidence == 1.0
    # The sites that gave the feed's values there are scored against the authority's.
    assert resolved.sources["airline"].accuracy > resolved.sources["mirror1"].accuracy


def test_authorities_that_disagree_settle_nothing_and_a_checked_value_comes_first():
    rows = [
        ("a", ("X", "t"), "1"),
        ("b", ("X", "t"), "2"),
        ("a", ("Y", "t"), "5"),
        ("b", ("Y", "t"), "5"),
        ("a", ("Z", "t"), "7"),
        ("a", ("Z", "t"), "8"),  # a source's first claim of an item counts
    ]
    assert authority_values(rows, {"a", "b"}) == {("Y", "t"): "5", ("Z", "t"): "7"}
    assert authority_values(rows, set()) == {}
    checked = resolve_claims(rows, "accucopy", gold={("Y", "t"): "9"}, authorities={"a", "b"})
    assert checked.truths()[("Y", "t")] == "9"
