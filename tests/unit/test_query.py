"""The query-string grammar parsers, without a database."""

import uuid

import pytest

from placement import errors
from placement.query import (
    AggregateFilter,
    TraitFilter,
    accepted_params,
    contradictions,
    last,
    normalize_uuid,
    parse_dashed_uuid,
    parse_member_of,
    parse_required,
    parse_resources,
    parse_uuid,
    require_utf8,
)

A = "aaaaaaaa-0000-4000-8000-000000000001"
B = "aaaaaaaa-0000-4000-8000-000000000002"
C = "aaaaaaaa-0000-4000-8000-000000000003"


def _bad_value(call, *args, **kwargs) -> errors.BadRequest:
    with pytest.raises(errors.BadRequest) as caught:
        call(*args, **kwargs)
    assert caught.value.code == errors.QUERYPARAM_BAD_VALUE
    return caught.value


# resources


def test_resources_parse_to_a_dict_of_amounts():
    assert parse_resources("VCPU:2,MEMORY_MB:1024") == {"VCPU": 2, "MEMORY_MB": 1024}
    assert parse_resources("CUSTOM_GPU:1") == {"CUSTOM_GPU": 1}
    # Amounts are read as Python's int() reads them, as upstream does.
    assert parse_resources("VCPU: 2 ,DISK_GB:+1") == {"VCPU": 2, "DISK_GB": 1}


def test_resource_class_names_are_taken_as_written():
    # Upstream looks " VCPU " up as it is (400: no such class), so do we.
    assert parse_resources(" VCPU :2") == {" VCPU ": 2}


@pytest.mark.parametrize(
    "text",
    ["", " ", "VCPU", "VCPU:", "VCPU:x", ":2", "VCPU:2,", "VCPU:1.5", "VCPU:2;DISK_GB:1",
     "VCPU:1:2"],
)
def test_badly_formed_resources_are_bad_values(text):
    error = _bad_value(parse_resources, text)
    assert "resources" in error.detail


@pytest.mark.parametrize("text", ["VCPU:0", "VCPU:-1"])
def test_resource_amounts_must_be_positive(text):
    error = _bad_value(parse_resources, text)
    assert "positive" in error.detail


def test_a_class_requested_twice_takes_its_last_amount():
    assert parse_resources("VCPU:1,VCPU:2") == {"VCPU": 2}
    assert parse_resources("VCPU:6,DISK_GB:1,VCPU:1") == {"VCPU": 1, "DISK_GB": 1}


def test_resources_errors_name_the_parameter():
    error = _bad_value(parse_resources, "VCPU", param="resources1")
    assert "resources1" in error.detail


# required


def test_required_names_are_each_required():
    parsed = parse_required(["A,B"], allow_forbidden=False, allow_any_of=False)
    assert parsed == TraitFilter(required=(frozenset({"A"}), frozenset({"B"})))
    assert parsed.names() == {"A", "B"}
    assert parsed


def test_forbidden_traits_need_the_flag():
    parsed = parse_required(["A,!B"], allow_forbidden=True, allow_any_of=False)
    assert parsed.required == (frozenset({"A"}),)
    assert parsed.forbidden == frozenset({"B"})
    assert parsed.names() == {"A", "B"}
    # Without the flag (before 1.22) "!B" is just a (non-existent) trait name.
    old = parse_required(["A,!B"], allow_forbidden=False, allow_any_of=False)
    assert old.required == (frozenset({"A"}), frozenset({"!B"}))
    assert old.forbidden == frozenset()


def test_any_of_needs_the_flag():
    parsed = parse_required(["in:A,B", "C"], allow_forbidden=True, allow_any_of=True)
    assert parsed.required == (frozenset({"A", "B"}), frozenset({"C"}))
    assert parsed.forbidden == frozenset()
    # Without the flag (before 1.39) "in:A" is a name, and B another required one.
    old = parse_required(["in:A,B"], allow_forbidden=True, allow_any_of=False)
    assert old.required == (frozenset({"in:A"}), frozenset({"B"}))


def test_repeated_required_values_are_anded_and_deduplicated():
    parsed = parse_required(["A", "A", "in:B,C"], allow_forbidden=True, allow_any_of=True)
    assert parsed.required == (frozenset({"A"}), frozenset({"B", "C"}))


def test_any_of_cannot_contain_forbidden_traits():
    _bad_value(parse_required, ["in:A,!B"], allow_forbidden=True, allow_any_of=True)


def test_any_number_of_bangs_forbid():
    # Upstream strips every leading "!": "!!B" forbids B.
    parsed = parse_required(["A,!!B"], allow_forbidden=True, allow_any_of=False)
    assert parsed == TraitFilter(required=(frozenset({"A"}),), forbidden=frozenset({"B"}))


def test_a_trait_both_required_and_forbidden_is_kept_as_a_contradiction():
    parsed = parse_required(["!A,A"], allow_forbidden=True, allow_any_of=False)
    assert parsed == TraitFilter(required=(frozenset({"A"}),), forbidden=frozenset({"A"}))
    assert contradictions(parsed) == [frozenset({"A"})]
    repeated = parse_required(["A", "!A"], allow_forbidden=True, allow_any_of=True)
    assert contradictions(repeated) == [frozenset({"A"})]


def test_an_any_of_set_contradicts_only_when_all_of_it_is_forbidden():
    some = parse_required(["in:A,B", "!A"], allow_forbidden=True, allow_any_of=True)
    assert some.required == (frozenset({"A", "B"}),)
    assert some.forbidden == frozenset({"A"})
    assert contradictions(some) == []
    every = parse_required(["in:A,B", "!A,!B"], allow_forbidden=True, allow_any_of=True)
    assert contradictions(every) == [frozenset({"A", "B"})]


@pytest.mark.parametrize("value", ["", ",", "A,", ",A", "A,,B", "!", "!!", "in:", "in:A,"])
def test_empty_trait_names_are_bad_values(value):
    _bad_value(parse_required, [value], allow_forbidden=True, allow_any_of=True)


def test_required_errors_name_the_parameter():
    error = _bad_value(
        parse_required, [""], allow_forbidden=True, allow_any_of=True, param="required2"
    )
    assert "required2" in error.detail


def test_an_empty_trait_filter_is_false():
    assert not TraitFilter()
    assert TraitFilter().names() == set()
    assert TraitFilter(forbidden=frozenset({"A"}))


# member_of


def test_member_of_one_aggregate():
    assert parse_member_of([A], allow_forbidden=False) == AggregateFilter(
        member_of=(frozenset({A}),)
    )


def test_member_of_in_is_any_of_and_repeats_are_anded():
    parsed = parse_member_of([f"in:{A},{B}", C], allow_forbidden=False)
    assert parsed.member_of == (frozenset({A, B}), frozenset({C}))
    assert parsed.forbidden == frozenset()
    assert parsed


def test_member_of_uuids_are_normalized():
    raw = uuid.UUID(A)
    for text in (raw.hex.upper(), "{" + A + "}", f"urn:uuid:{A}"):
        parsed = parse_member_of([text, f"in:{B},{text}"], allow_forbidden=False)
        assert parsed.member_of == (frozenset({A}), frozenset({A, B})), text


def test_several_aggregates_need_the_in_prefix():
    _bad_value(parse_member_of, [f"{A},{B}"], allow_forbidden=False)


def test_forbidden_aggregates_need_the_flag():
    parsed = parse_member_of([f"!{A}", f"!in:{B},{C}"], allow_forbidden=True)
    assert parsed.member_of == ()
    assert parsed.forbidden == frozenset({A, B, C})
    # Before 1.32 "!uuid" is not a uuid.
    _bad_value(parse_member_of, [f"!{A}"], allow_forbidden=False)


def test_an_aggregate_both_required_and_forbidden_is_kept():
    parsed = parse_member_of([A, f"!{A}"], allow_forbidden=True)
    assert parsed == AggregateFilter(member_of=(frozenset({A}),), forbidden=frozenset({A}))


def test_an_aggregate_forbidden_and_in_an_any_of_set_is_allowed():
    parsed = parse_member_of([f"in:{A},{B}", f"!{A}"], allow_forbidden=True)
    assert parsed.member_of == (frozenset({A, B}),)
    assert parsed.forbidden == frozenset({A})


@pytest.mark.parametrize(
    "value", ["", "in:", "not-a-uuid", f"in:{A},", f"in:{A},nope", "!", f" {A}", f"in:{A}, {B}"]
)
def test_invalid_aggregate_uuids_are_bad_values(value):
    error = _bad_value(parse_member_of, [value], allow_forbidden=True, param="member_of1")
    assert "member_of1" in error.detail


def test_an_empty_aggregate_filter_is_false():
    assert not AggregateFilter()


# normalize_uuid


def test_normalize_uuid_gives_the_canonical_form():
    raw = uuid.uuid4()
    canonical = str(raw)
    for text in (canonical, canonical.upper(), raw.hex, raw.hex.upper(), "{" + canonical + "}"):
        assert normalize_uuid(text) == canonical, text


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not-a-uuid",
        "1234",
        str(uuid.uuid4())[:-1],
        str(uuid.uuid4()) + "0",
        "urn:uuid:" + str(uuid.uuid4()),
        " " * 36,
    ],
)
def test_normalize_uuid_refuses_anything_else(text):
    assert normalize_uuid(text) is None


# parse_uuid and parse_dashed_uuid (query strings)


def test_parse_uuid_takes_every_notation_of_a_uuid():
    raw = uuid.uuid4()
    canonical = str(raw)
    notations = (
        canonical, canonical.upper(), raw.hex, raw.hex.upper(), "{" + canonical + "}",
        "urn:uuid:" + canonical, canonical[:4] + "-" + canonical[4:],
    )
    for text in notations:
        assert parse_uuid(text) == canonical, text


@pytest.mark.parametrize(
    "text",
    ["", "not-a-uuid", " " + A, A + " ", "+" + A[1:], "0x" + uuid.UUID(A).hex[2:],
     A.replace("-", "_"), A[:-1]],
)
def test_parse_uuid_refuses_anything_else(text):
    assert parse_uuid(text) is None


def test_parse_dashed_uuid_wants_the_dashes_in_place():
    assert parse_dashed_uuid(A) == A
    assert parse_dashed_uuid(A.upper()) == A
    for text in (uuid.UUID(A).hex, "{" + A + "}", "urn:uuid:" + A, " " + A, "x"):
        assert parse_dashed_uuid(text) is None, text


def test_parse_dashed_uuid_keeps_what_only_looks_like_one():
    # Upstream's check passes "+000..." (int() reads the sign) and matches it as text:
    # it names no provider, and neither does it here.
    text = "+" + A[1:]
    assert parse_dashed_uuid(text) == text


# reading the query string


def test_accepted_params_keep_every_value_and_refuse_unknown_keys():
    params = accepted_params([("name", ["a", "b"]), ("uuid", [A])], {"name", "uuid"})
    assert params == {"name": ["a", "b"], "uuid": [A]}
    assert last(params, "name") == "b"
    assert last(params, "in_tree") is None
    with pytest.raises(errors.BadRequest) as caught:
        accepted_params([("nope", ["1"])], {"name"})
    assert "nope" in caught.value.detail


def test_require_utf8_refuses_bytes_that_are_not_utf8():
    require_utf8(b"name=%C3%A9&x=%25FF")
    require_utf8(b"")
    _bad_value(require_utf8, b"name=%FF")
    _bad_value(require_utf8, b"x%C3=1")
