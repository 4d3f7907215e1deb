"""``snapshot.ROOM_CHECKS`` are ``Room.fits`` one check at a time: an amount passes them all
exactly when it fits (the translator's explanation counts with them, the allocator asks
``fits``)."""

from hypothesis import given
from hypothesis import strategies as st

from placement.group_resources.snapshot import ROOM_CHECKS, Room


@st.composite
def rooms(draw) -> Room:
    max_unit = draw(st.integers(1, 64))
    return Room(
        unrounded_capacity=float(draw(st.integers(0, 64))),
        used=draw(st.integers(0, 64)),
        free=draw(st.integers(-8, 64)),
        min_unit=draw(st.integers(1, max_unit)),
        max_unit=max_unit,
        step_size=draw(st.integers(1, 8)),
    )


@given(rooms(), st.integers(1, 80))
def test_an_amount_passes_every_check_exactly_when_it_fits(room, amount):
    assert all(check.test(room, amount) for check in ROOM_CHECKS) == room.fits(amount)


@given(rooms(), st.integers(1, 80))
def test_only_the_free_amount_says_how_much_is_missing(room, amount):
    units, free = ROOM_CHECKS
    assert units.short(room, amount) is None
    assert free.short(room, amount) == amount - room.free
    assert (free.short(room, amount) > 0) == (not free.test(room, amount))
