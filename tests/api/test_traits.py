"""Traits through HTTP: the trait vocabulary and the traits of a provider."""

import uuid

import os_traits
import pytest

from tests.conftest import error_code


def _traits(api, query="", version="1.6") -> list[str]:
    response = api.get(f"/traits{query}", version=version)
    assert response.status_code == 200, response.json
    return response.json["traits"]


def _provider_traits_path(provider) -> str:
    return f"/resource_providers/{provider['uuid']}/traits"


@pytest.fixture
def provider(api) -> dict:
    return api.create_provider("cn1")


@pytest.mark.parametrize(
    "method, path",
    [
        ("GET", "/traits"),
        ("GET", "/traits/HW_CPU_X86_AVX"),
        ("PUT", "/traits/CUSTOM_X"),
        ("DELETE", "/traits/CUSTOM_X"),
    ],
)
def test_traits_do_not_exist_below_1_6(api, method, path):
    response = api.request(method, path, version="1.5")
    assert response.status_code == 404
    assert api.get("/traits/CUSTOM_X", version="1.6").status_code == 404


def test_provider_traits_do_not_exist_below_1_6(api, provider):
    path = _provider_traits_path(provider)
    assert api.get(path, version="1.5").status_code == 404
    body = {"resource_provider_generation": 0, "traits": ["HW_CPU_X86_AVX"]}
    assert api.put(path, json=body, version="1.5").status_code == 404
    assert api.delete(path, version="1.5").status_code == 404
    assert api.generation(provider["uuid"]) == 0


def test_list_has_every_standard_trait_sorted(api):
    names = _traits(api)
    assert set(names) == set(os_traits.get_traits())
    assert names == sorted(names)


def test_list_filtered_by_names(api):
    api.put("/traits/CUSTOM_X")
    names = _traits(api, "?name=in:HW_CPU_X86_AVX,CUSTOM_X,CUSTOM_NOPE")
    assert names == ["CUSTOM_X", "HW_CPU_X86_AVX"]


def test_list_filtered_by_prefix(api):
    names = _traits(api, "?name=startswith:HW_CPU_X86_AVX512")
    assert names
    assert all(name.startswith("HW_CPU_X86_AVX512") for name in names)
    expected = sorted(t for t in os_traits.get_traits() if t.startswith("HW_CPU_X86_AVX512"))
    assert names == expected


def test_prefix_filter_treats_underscore_literally(api):
    # "_" is a LIKE wildcard; the prefix filter must not treat it as one (upstream
    # does: api-ref/differences.md).
    api.put("/traits/CUSTOM_A_B")
    api.put("/traits/CUSTOM_AXB")
    assert _traits(api, "?name=startswith:CUSTOM_A_") == ["CUSTOM_A_B"]
    assert _traits(api, "?name=startswith:CUSTOM_A%25") == []


def test_prefix_filter_ignores_case(api):
    # Upstream's LIKE ignores case on its databases; trait names are upper case.
    api.put("/traits/CUSTOM_GOLD")
    assert _traits(api, "?name=startswith:custom_g") == ["CUSTOM_GOLD"]


def test_in_filter_takes_the_names_as_written(api):
    api.put("/traits/CUSTOM_GOLD")
    assert _traits(api, "?name=in:CUSTOM_GOLD,%20HW_CPU_X86_AVX") == ["CUSTOM_GOLD"]
    assert _traits(api, "?name=in:CUSTOM_GOLD,,HW_CPU_X86_AVX") == [
        "CUSTOM_GOLD",
        "HW_CPU_X86_AVX",
    ]
    assert _traits(api, "?name=in:") == []


def test_another_word_before_the_colon_filters_nothing(api):
    # As upstream: only "in" and "startswith" filter; a name without a colon is 400.
    every = _traits(api)
    assert _traits(api, "?name=foo:HW_CPU_X86_AVX") == every
    assert _traits(api, "?name=:x") == every


def test_a_repeated_parameter_takes_its_last_value(api, provider):
    api.set_traits(provider["uuid"], "HW_CPU_X86_AVX")
    assert _traits(api, "?name=in:HW_CPU_X86_AVX&name=in:HW_CPU_X86_SSE") == ["HW_CPU_X86_SSE"]
    # Only the last value is validated.
    assert _traits(api, "?name=bogus&name=in:HW_CPU_X86_SSE") == ["HW_CPU_X86_SSE"]
    assert _traits(api, "?associated=false&associated=true") == ["HW_CPU_X86_AVX"]
    assert _traits(api, "?associated=maybe&associated=true") == ["HW_CPU_X86_AVX"]


def test_list_filtered_by_association(api, provider):
    api.set_traits(provider["uuid"], "HW_CPU_X86_AVX", "CUSTOM_X")
    assert _traits(api, "?associated=true") == ["CUSTOM_X", "HW_CPU_X86_AVX"]
    unassociated = _traits(api, "?associated=false")
    assert "HW_CPU_X86_AVX" not in unassociated
    assert "CUSTOM_X" not in unassociated
    assert "HW_CPU_X86_SSE" in unassociated
    assert _traits(api, "?name=startswith:HW_CPU_X86_AV&associated=true") == ["HW_CPU_X86_AVX"]


@pytest.mark.parametrize(
    "query, code",
    [
        ("?name=HW_CPU_X86_AVX", "placement.query.bad_value"),
        ("?name=", "placement.query.bad_value"),
        ("?associated=maybe", "placement.query.bad_value"),
        ("?foo=bar", "placement.undefined_code"),
        ("?name=in:HW_CPU_X86_AVX&name=bogus", "placement.query.bad_value"),
        ("?associated=true&associated=maybe", "placement.query.bad_value"),
        ("?name=in:%FF", "placement.query.bad_value"),
    ],
)
def test_bad_list_queries_are_400(api, query, code):
    response = api.get(f"/traits{query}", version="1.23")
    assert response.status_code == 400
    assert error_code(response) == code


@pytest.mark.parametrize(
    "query, sentence",
    [
        (
            "?invalid=abc&name=in:X",
            "Invalid query string parameters: Additional properties are not allowed ('invalid' "
            "was unexpected)\n\nFailed validating 'additionalProperties' in schema",
        ),
        ("?associated=xyz", 'The query parameter "associated" only accepts "true" or "false"'),
        (
            "?name=xyz&associated=xyz",
            "Badly formatted name parameter. Expected name query string parameter in form: "
            '?name=[in|startswith]:[name1,name2|prefix]. Got: "xyz"',
        ),
    ],
)
def test_a_bad_list_query_says_what_upstream_says(api, query, sentence):
    response = api.get(f"/traits{query}", version="1.6")
    assert response.status_code == 400
    assert sentence in response.json["errors"][0]["detail"]


def test_put_creates_a_custom_trait_then_answers_204_both_with_location(api):
    first = api.put("/traits/CUSTOM_X", version="1.6")
    assert first.status_code == 201
    assert first.data == b""
    assert first.headers["Location"].startswith("http")
    assert first.headers["Location"].endswith("/traits/CUSTOM_X")
    again = api.put("/traits/CUSTOM_X", version="1.6")
    assert again.status_code == 204
    assert again.headers["Location"].endswith("/traits/CUSTOM_X")
    assert _traits(api).count("CUSTOM_X") == 1


@pytest.mark.parametrize(
    "name", ["HW_CPU_X86_AVX", "NOT_CUSTOM", "CUSTOM_lower", "CUSTOM_", "CUSTOM_" + "X" * 249]
)
def test_put_of_a_non_custom_name_is_400(api, name):
    response = api.put(f"/traits/{name}", version="1.23")
    assert response.status_code == 400
    assert error_code(response) == "placement.undefined_code"
    assert name not in _traits(api, "?name=startswith:CUSTOM_")


def test_show_is_204_for_a_trait_and_404_otherwise(api):
    api.put("/traits/CUSTOM_X")
    for name in ("CUSTOM_X", "HW_CPU_X86_AVX"):
        response = api.get(f"/traits/{name}", version="1.6")
        assert response.status_code == 204
        assert response.data == b""
    missing = api.get("/traits/CUSTOM_NOPE")
    assert missing.status_code == 404
    assert error_code(missing) == "placement.undefined_code"


def test_last_modified_from_1_15(api):
    for path in ("/traits", "/traits/HW_CPU_X86_AVX"):
        assert "Last-Modified" not in api.get(path, version="1.14").headers
        new = api.get(path, version="1.15")
        assert new.headers["Last-Modified"].endswith("GMT")
        assert new.headers["Cache-Control"] == "no-cache"
    assert api.get("/traits/HW_CPU_X86_AVX", version="1.15").data == b""


def test_put_trait_has_cache_headers_from_1_15_created_or_not(api):
    # As upstream: Last-Modified is the trait's creation time, on the 201 and the 204.
    created = api.put("/traits/CUSTOM_TRAIT_1", version="1.15")
    again = api.put("/traits/CUSTOM_TRAIT_1", version="1.15")
    assert (created.status_code, again.status_code) == (201, 204)
    for response in (created, again):
        assert response.headers["Cache-Control"] == "no-cache"
        assert response.headers["Last-Modified"].endswith("GMT")
    assert again.headers["Last-Modified"] == created.headers["Last-Modified"]
    for name in ("CUSTOM_TRAIT_1", "CUSTOM_TRAIT_2"):
        old = api.put(f"/traits/{name}", version="1.14")
        assert "Last-Modified" not in old.headers
        assert "Cache-Control" not in old.headers


def test_set_provider_traits_checks_the_body_before_the_provider(api):
    # Upstream's order: the body (400), the provider (404), its generation (409).
    path = f"/resource_providers/{uuid.uuid4()}/traits"
    bad = api.put(path, json={"traits": "x", "resource_provider_generation": 0})
    assert bad.status_code == 400
    good = api.put(path, json={"traits": [], "resource_provider_generation": 0})
    assert good.status_code == 404


def test_delete_of_a_standard_trait_is_400(api):
    response = api.delete("/traits/HW_CPU_X86_AVX")
    assert response.status_code == 400
    assert api.get("/traits/HW_CPU_X86_AVX").status_code == 204


def test_delete_of_a_trait_in_use_is_409(api, provider):
    api.set_traits(provider["uuid"], "CUSTOM_X")
    response = api.delete("/traits/CUSTOM_X")
    assert response.status_code == 409
    assert api.get("/traits/CUSTOM_X").status_code == 204


def test_delete_of_a_custom_trait_is_204_then_404(api):
    api.put("/traits/CUSTOM_X")
    response = api.delete("/traits/CUSTOM_X", version="1.6")
    assert response.status_code == 204
    assert response.data == b""
    assert api.get("/traits/CUSTOM_X").status_code == 404
    again = api.delete("/traits/CUSTOM_X")
    assert again.status_code == 404
    assert error_code(again) == "placement.undefined_code"


def test_provider_without_traits(api, provider):
    response = api.get(_provider_traits_path(provider), version="1.6")
    assert response.status_code == 200
    assert response.json == {"traits": [], "resource_provider_generation": 0}


def test_set_provider_traits_replaces_them_and_bumps_the_generation(api, provider):
    api.put("/traits/CUSTOM_X")
    path = _provider_traits_path(provider)
    first = api.put(
        path, json={"resource_provider_generation": 0, "traits": ["HW_CPU_X86_SSE", "CUSTOM_X"]}
    )
    assert first.status_code == 200
    assert first.json == {
        # Upstream's order: the traits' ids (standard ones first).
        "traits": ["HW_CPU_X86_SSE", "CUSTOM_X"],
        "resource_provider_generation": 1,
    }
    assert api.get(path).json == first.json
    second = api.put(path, json={"resource_provider_generation": 1, "traits": ["HW_CPU_X86_AVX"]})
    assert second.status_code == 200
    assert second.json == {"traits": ["HW_CPU_X86_AVX"], "resource_provider_generation": 2}
    assert api.generation(provider["uuid"]) == 2


def test_duplicate_traits_in_the_body_are_set_once(api, provider):
    response = api.put(
        _provider_traits_path(provider),
        json={"resource_provider_generation": 0, "traits": ["HW_CPU_X86_AVX"] * 2},
    )
    assert response.status_code == 200
    assert response.json["traits"] == ["HW_CPU_X86_AVX"]


def test_set_provider_traits_with_a_wrong_generation_is_409(api, provider):
    api.set_traits(provider["uuid"], "HW_CPU_X86_SSE")
    response = api.put(
        _provider_traits_path(provider),
        json={"resource_provider_generation": 0, "traits": ["HW_CPU_X86_AVX"]},
    )
    assert response.status_code == 409
    assert error_code(response) == "placement.concurrent_update"
    assert api.get(_provider_traits_path(provider)).json == {
        "traits": ["HW_CPU_X86_SSE"],
        "resource_provider_generation": 1,
    }


def test_set_unknown_traits_is_400(api, provider):
    response = api.put(
        _provider_traits_path(provider),
        json={"resource_provider_generation": 0, "traits": ["CUSTOM_UNKNOWN", "HW_CPU_X86_AVX"]},
    )
    assert response.status_code == 400
    assert "CUSTOM_UNKNOWN" in response.json["errors"][0]["detail"]
    assert api.get(_provider_traits_path(provider)).json["traits"] == []
    assert api.generation(provider["uuid"]) == 0


@pytest.mark.parametrize(
    "body",
    [
        {"traits": ["HW_CPU_X86_AVX"]},
        {"resource_provider_generation": 0},
        {"resource_provider_generation": "0", "traits": []},
        {"resource_provider_generation": 0, "traits": "HW_CPU_X86_AVX"},
        {"resource_provider_generation": 0, "traits": ["hw_cpu"]},
        {"resource_provider_generation": 0, "traits": [5]},
        {"resource_provider_generation": 0, "traits": [], "foo": 1},
        ["HW_CPU_X86_AVX"],
    ],
)
def test_invalid_provider_trait_bodies_are_400(api, provider, body):
    response = api.put(_provider_traits_path(provider), json=body)
    assert response.status_code == 400, body
    assert api.generation(provider["uuid"]) == 0


def test_delete_provider_traits_empties_them_and_bumps_the_generation(api, provider):
    api.set_traits(provider["uuid"], "HW_CPU_X86_AVX", "CUSTOM_X")
    response = api.delete(_provider_traits_path(provider), version="1.6")
    assert response.status_code == 204
    assert response.data == b""
    assert api.get(_provider_traits_path(provider)).json == {
        "traits": [],
        "resource_provider_generation": 2,
    }
    # The trait is no longer in use, so it can go.
    assert api.delete("/traits/CUSTOM_X").status_code == 204


def test_provider_traits_of_an_unknown_provider_are_404(api):
    path = f"/resource_providers/{uuid.uuid4()}/traits"
    for response in (
        api.get(path),
        api.put(path, json={"resource_provider_generation": 0, "traits": []}),
        api.delete(path),
    ):
        assert response.status_code == 404
        assert error_code(response) == "placement.resource_provider.not_found"


def test_provider_traits_last_modified_from_1_15(api, provider):
    path = _provider_traits_path(provider)
    assert "Last-Modified" not in api.get(path, version="1.14").headers
    assert api.get(path, version="1.15").headers["Last-Modified"].endswith("GMT")


def test_a_trait_write_that_changes_nothing_keeps_the_generation(api, provider):
    # As upstream: no trait added or removed, no generation bump.
    path = _provider_traits_path(provider)
    assert api.delete(path).status_code == 204
    assert api.generation(provider["uuid"]) == 0
    body = {"resource_provider_generation": 0, "traits": ["HW_CPU_X86_SSE"]}
    assert api.put(path, json=body).json["resource_provider_generation"] == 1
    body = {"resource_provider_generation": 1, "traits": ["HW_CPU_X86_SSE"]}
    same = api.put(path, json=body)
    assert same.status_code == 200
    assert same.json == {"traits": ["HW_CPU_X86_SSE"], "resource_provider_generation": 1}
    stale = api.put(path, json={"resource_provider_generation": 0, "traits": ["HW_CPU_X86_SSE"]})
    assert stale.status_code == 409
