"""What a worker keeps of the trees' bounds between ranked requests (``candidates.bounds``)."""

from placement.candidates.bounds import BYTES_PER_TREE, MAX_REQUESTS_KEPT, KeptBounds


def filled(kept: KeptBounds, key: tuple, trees: int) -> dict:
    bounds = kept.kept_for(key)
    for root in range(trees):
        bounds[root] = ([1.0], 1.0)
    return bounds


def test_the_least_recently_asked_are_dropped_first_to_stay_within_the_budget():
    kept = KeptBounds()
    filled(kept, ("a",), 10)
    filled(kept, ("b",), 10)
    kept.kept_for(("a",))  # asked again: now the most recent
    assert kept.bytes_kept() == 20 * BYTES_PER_TREE
    kept.keep_within(15 * BYTES_PER_TREE)
    assert len(kept) == 1 and len(kept.kept_for(("a",))) == 10
    kept.keep_within(5 * BYTES_PER_TREE)  # the last one alone is over: dropped too
    assert len(kept) == 0


def test_at_most_so_many_kinds_of_request_are_kept_and_changed_trees_are_dropped():
    kept = KeptBounds()
    for index in range(MAX_REQUESTS_KEPT + 3):
        filled(kept, (index,), 2)
    assert len(kept) == MAX_REQUESTS_KEPT
    assert kept.kept_for((0,)) == {}  # dropped, made anew
    kept.drop_trees({1})
    assert all(1 not in kept.kept_for((index,)) for index in range(4, MAX_REQUESTS_KEPT + 3))
