"""The query-string grammar parsers, without a database."""

import uuid

import pytest

from placement import errors
from placement.query import (
    AggregateFilter,
    TraitFilter,
    contradictions,
    last,
    normalize_uuid,
    pairs_in_order,
    params_of,
    parse_dashed_uuid,
    parse_in_tree,
    parse_member_of,
    parse_required,
    parse_resources,
    parse_uuid,
    require_utf8,
)
from placement.query_schema import QuerySchema, length, one_of, pattern, uuid_format

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
    # Upstream looks " VCPU " (and "") up as it is (400: no such class), so do we.
    assert parse_resources(" VCPU :2") == {" VCPU ": 2}
    assert parse_resources(":2") == {"": 2}


@pytest.mark.parametrize(
    "text, item",
    [
        ("", "empty string"),
        (" ", "empty string"),
        ("VCPU", "VCPU"),
        ("VCPU:2,", ""),
        ("VCPU:2;DISK_GB:1", "VCPU:2;DISK_GB:1"),
        ("VCPU:1,DISK_GB:1:2", "DISK_GB:1:2"),
    ],
)
def test_badly_formed_resources_quote_the_item_as_upstream(text, item):
    error = _bad_value(parse_resources, text)
    assert error.detail == (
        "Badly formed resources parameter. Expected resources query string parameter in "
        f"form: ?resources=VCPU:2,MEMORY_MB:1024. Got: {item}."
    )


@pytest.mark.parametrize("text, amount", [("VCPU:", ""), ("VCPU:x", "x"), ("VCPU:1.5", "1.5")])
def test_resource_amounts_must_be_integers(text, amount):
    error = _bad_value(parse_resources, text)
    assert error.detail == (
        f"Requested resource VCPU expected positive integer amount. Got: {amount}."
    )


@pytest.mark.parametrize("text, amount", [("VCPU:0", "0"), ("VCPU:-1", "-1"), ("VCPU:-01", "-1")])
def test_resource_amounts_must_be_positive(text, amount):
    error = _bad_value(parse_resources, text)
    assert error.detail == f"Requested resource VCPU requires amount >= 1. Got: {amount}."


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
    # Without the flag (before 1.22) "!B" is refused in upstream's words.
    error = _bad_value(parse_required, ["A,!B"], allow_forbidden=False, allow_any_of=False)
    assert error.detail == (
        "Invalid query string parameters: Expected 'required' parameter value of the form: "
        "HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: A,!B"
    )


def test_any_of_needs_the_flag():
    parsed = parse_required(["in:A,B", "C"], allow_forbidden=True, allow_any_of=True)
    assert parsed.required == (frozenset({"A", "B"}), frozenset({"C"}))
    assert parsed.forbidden == frozenset()
    # Without the flag (before 1.39) "in:" is refused in upstream's words.
    error = _bad_value(parse_required, ["in:A,B"], allow_forbidden=True, allow_any_of=False)
    assert error.detail == (
        "Invalid query string parameters: The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only "
        "supported since microversion 1.39. Got: in:A,B"
    )
    # "!in:A" is no any-of set: a forbidden trait named "in:A".
    parsed = parse_required(["!in:A"], allow_forbidden=True, allow_any_of=False)
    assert parsed.forbidden == frozenset({"in:A"})


def test_repeated_required_values_are_anded_and_deduplicated():
    parsed = parse_required(["A", "A", "in:B,C"], allow_forbidden=True, allow_any_of=True)
    assert parsed.required == (frozenset({"A"}), frozenset({"B", "C"}))


def test_any_of_cannot_contain_forbidden_traits():
    error = _bad_value(parse_required, ["in:A,!B"], allow_forbidden=True, allow_any_of=True)
    assert "does not support forbidden traits. Got: in:A,!B" in error.detail


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
    error = _bad_value(parse_required, [value], allow_forbidden=True, allow_any_of=True)
    form = (
        "in:HW_CPU_X86_VMX,CUSTOM_MAGIC"
        if value.startswith("in:")
        else ("HW_CPU_X86_VMX,!CUSTOM_MAGIC")
    )
    assert error.detail == (
        "Invalid query string parameters: Expected 'required' parameter value of the form: "
        f"{form}. Got an empty trait in: {value}"
    )


def test_the_expected_form_shows_forbidden_traits_only_when_they_are_accepted():
    error = _bad_value(parse_required, ["A,,B"], allow_forbidden=False, allow_any_of=False)
    assert "of the form: HW_CPU_X86_VMX,CUSTOM_MAGIC. Got an empty trait in: A,,B" in (error.detail)


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
    assert parse_member_of([A], allow_repeats=False, allow_forbidden=False) == AggregateFilter(
        member_of=(frozenset({A}),)
    )


def test_member_of_in_is_any_of_and_repeats_are_anded():
    parsed = parse_member_of([f"in:{A},{B}", C], allow_repeats=True, allow_forbidden=False)
    assert parsed.member_of == (frozenset({A, B}), frozenset({C}))
    assert parsed.forbidden == frozenset()
    assert parsed


def test_member_of_repeats_need_the_flag():
    with pytest.raises(errors.BadRequest) as caught:
        parse_member_of([A, B], allow_repeats=False, allow_forbidden=True, param="member_of2")
    assert caught.value.code == errors.ILLEGAL_DUPLICATE_QUERYPARAM
    assert caught.value.detail == "Multiple member_of2 parameters are not supported"


def test_member_of_uuids_are_normalized():
    raw = uuid.UUID(A)
    for text in (raw.hex.upper(), "{" + A + "}", f"urn:uuid:{A}"):
        parsed = parse_member_of(
            [text, f"in:{B},{text}"], allow_repeats=True, allow_forbidden=False
        )
        assert parsed.member_of == (frozenset({A}), frozenset({A, B})), text


def test_several_aggregates_need_the_in_prefix():
    error = _bad_value(parse_member_of, [f"{A},{B}"], allow_repeats=True, allow_forbidden=True)
    assert error.detail == (
        "Multiple values for 'member_of' must be prefixed with the 'in:' or '!in:' keyword "
        f"using the valid microversion. Got: {A},{B}"
    )


def test_forbidden_aggregates_need_the_flag():
    parsed = parse_member_of([f"!{A}", f"!in:{B},{C}"], allow_repeats=True, allow_forbidden=True)
    assert parsed.member_of == ()
    assert parsed.forbidden == frozenset({A, B, C})
    # Before 1.32: upstream's sentence, once the uuids are found valid.
    for value in (f"!{A}", f"!in:{B},{C}"):
        error = _bad_value(parse_member_of, [value], allow_repeats=True, allow_forbidden=False)
        assert error.detail == (
            "Forbidden member_of parameters are not supported in the specified microversion"
        )
    error = _bad_value(parse_member_of, ["!nope"], allow_repeats=True, allow_forbidden=False)
    assert error.detail.endswith("to contain valid UUID(s). Got: nope")


def test_an_aggregate_both_required_and_forbidden_is_kept():
    parsed = parse_member_of([A, f"!{A}"], allow_repeats=True, allow_forbidden=True)
    assert parsed == AggregateFilter(member_of=(frozenset({A}),), forbidden=frozenset({A}))


def test_an_aggregate_forbidden_and_in_an_any_of_set_is_allowed():
    parsed = parse_member_of([f"in:{A},{B}", f"!{A}"], allow_repeats=True, allow_forbidden=True)
    assert parsed.member_of == (frozenset({A, B}),)
    assert parsed.forbidden == frozenset({A})


@pytest.mark.parametrize(
    "value, item",
    [
        ("", ""),
        ("in:", ""),
        ("not-a-uuid", "not-a-uuid"),
        (f"in:{A},", ""),
        (f"in:{A},nope", "nope"),
        ("!", ""),
        (f" {A}", f" {A}"),
        (f"in:{A}, {B}", f" {B}"),
    ],
)
def test_invalid_aggregate_uuids_are_bad_values(value, item):
    error = _bad_value(
        parse_member_of, [value], allow_repeats=True, allow_forbidden=True, param="member_of1"
    )
    assert error.detail == (
        "Invalid query string parameters: Expected 'member_of' parameter to contain valid "
        f"UUID(s). Got: {item} (parameter member_of1)"
    )


def test_an_empty_aggregate_filter_is_false():
    assert not AggregateFilter()


# in_tree


def test_in_tree_takes_a_uuid_with_blanks_around():
    assert parse_in_tree(f" {A.upper()} ") == A
    error = _bad_value(parse_in_tree, "life-is-beautiful")
    assert error.detail == (
        "Invalid query string parameters: Expected 'in_tree' parameter to be a format of "
        "uuid. Got: life-is-beautiful"
    )


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
        # (fixed values: test ids must be the same in every pytest-xdist worker)
        "6b4987b5-8183-43ff-8e48-f6372068ecd",
        "6b4987b5-8183-43ff-8e48-f6372068ecd50",
        "urn:uuid:6b4987b5-8183-43ff-8e48-f6372068ecd5",
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
        canonical,
        canonical.upper(),
        raw.hex,
        raw.hex.upper(),
        "{" + canonical + "}",
        "urn:uuid:" + canonical,
        canonical[:4] + "-" + canonical[4:],
    )
    for text in notations:
        assert parse_uuid(text) == canonical, text


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not-a-uuid",
        " " + A,
        A + " ",
        "+" + A[1:],
        "0x" + uuid.UUID(A).hex[2:],
        A.replace("-", "_"),
        A[:-1],
    ],
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


def test_params_keep_every_value_and_last_takes_the_last():
    params = params_of([("name", ["a", "b"]), ("uuid", [A])])
    assert params == {"name": ["a", "b"], "uuid": [A]}
    assert last(params, "name") == "b"
    assert last(params, "in_tree") is None


def test_pairs_in_order_keep_the_query_strings_order():
    assert pairs_in_order(b"resources=a&in_tree=x&resources=b&required=&%C3%A9=+") == [
        ("resources", "a"),
        ("in_tree", "x"),
        ("resources", "b"),
        ("required", ""),
        ("é", " "),
    ]


# the query string's schema, worded as upstream's validator words it


def _violation(schema: QuerySchema, params: dict) -> errors.BadRequest:
    with pytest.raises(errors.BadRequest) as caught:
        schema.validate(params)
    return caught.value


def test_a_missing_required_parameter_comes_first():
    schema = QuerySchema(checks={"project_id": (length(1, 3),)}, required=("project_id",))
    error = _violation(schema, {"dummy": ["1"]})
    assert error.code == errors.QUERYPARAM_MISSING_VALUE
    assert error.detail == (
        "Invalid query string parameters: 'project_id' is a required property\n\n"
        "Failed validating 'required' in schema"
    )


def test_unknown_keys_are_named_together_sorted():
    schema = QuerySchema(checks={"name": (pattern("^x$"),)})
    error = _violation(schema, {"zeta": ["1"], "name": ["bad"]})
    assert error.code == errors.DEFAULT
    assert error.detail.startswith(
        "Invalid query string parameters: Additional properties are not allowed ('zeta' was "
        "unexpected)\n\nFailed validating 'additionalProperties' in schema"
    )
    error = _violation(schema, {"zeta": ["1"], "alpha": ["2"]})
    assert "('alpha', 'zeta' were unexpected)" in error.detail


def test_unknown_keys_with_patterns_quote_the_regexes():
    schema = QuerySchema(
        checks={"limit": ()},
        patterns=("^resources([1-9][0-9]*)?$", "^member_of([1-9][0-9]*)?$"),
        unknown_key_code=errors.QUERYPARAM_BAD_VALUE,
    )
    schema.validate({"resources": ["1"], "resources12": ["1"], "limit": ["1"]})
    error = _violation(schema, {"resources01": ["1"], "resources1\n": ["1"]})
    assert error.code == errors.QUERYPARAM_BAD_VALUE
    assert error.detail.startswith(
        "Invalid query string parameters: 'resources01', 'resources1\\n' do not match any of "
        "the regexes: '^member_of([1-9][0-9]*)?$', '^resources([1-9][0-9]*)?$'"
    )


def test_values_are_checked_last_value_and_greatest_name_first():
    schema = QuerySchema(
        checks={
            "group_policy": (one_of("none", "isolate"),),
            "limit": (pattern("^[1-9][0-9]*$"),),
        }
    )
    schema.validate({"limit": ["cow", "5\n"], "group_policy": ["x", "none"]})
    error = _violation(schema, {"group_policy": ["bogus"], "limit": ["cow"]})
    assert error.code == errors.QUERYPARAM_BAD_VALUE
    assert error.detail == (
        "Invalid query string parameters: 'cow' does not match '^[1-9][0-9]*$'\n\n"
        "Failed validating 'pattern' in schema['properties']['limit']"
    )
    error = _violation(schema, {"group_policy": ["bogus"]})
    assert "'bogus' is not one of ['none', 'isolate']\n\nFailed validating 'enum'" in (error.detail)


def test_length_and_uuid_checks_word_as_upstream():
    assert length(1, 3)("") == ("'' should be non-empty", "minLength")
    assert length(1, 3)("abcd") == ("'abcd' is too long", "maxLength")
    assert length(1, 3)("abc") is None
    assert uuid_format(A) is None
    assert uuid_format(uuid.UUID(A).hex) == (f"'{uuid.UUID(A).hex}' is not a 'uuid'", "format")


def test_require_utf8_refuses_bytes_that_are_not_utf8():
    require_utf8(b"name=%C3%A9&x=%25FF")
    require_utf8(b"")
    _bad_value(require_utf8, b"name=%FF")
    _bad_value(require_utf8, b"x%C3=1")
