"""What the client sent is what is stored, on every backend: any Unicode character
(MySQL's 3-byte ``utf8`` would refuse or mangle a 4-byte one), and names that differ
only in case or a trailing space are different names (MySQL's default collations
would make them collide)."""

import sqlalchemy as sa

from placement.db.engine import make_engine
from placement.db.tables import resource_providers

EMOJI_NAME = "gpu-node-\U0001f680-\U00020000"  # a rocket (4 bytes) and a CJK ideograph (4)


def test_a_four_byte_character_is_stored_as_sent(api):
    created = api.create_provider(EMOJI_NAME)
    assert created["name"] == EMOJI_NAME
    shown = api.get(f"/resource_providers/{created['uuid']}").json
    assert shown["name"] == EMOJI_NAME
    listed = api.get("/resource_providers", query_string={"name": EMOJI_NAME}).json
    assert [p["uuid"] for p in listed["resource_providers"]] == [created["uuid"]]


def test_names_differing_in_case_or_a_trailing_space_are_different_providers(api):
    names = ["compute1", "Compute1", "compute1 ", "COMPUTE1"]
    uuids = [api.create_provider(name)["uuid"] for name in names]
    assert len(set(uuids)) == 4
    for name, uuid in zip(names, uuids, strict=True):
        found = api.get("/resource_providers", query_string={"name": name}).json
        assert [p["uuid"] for p in found["resource_providers"]] == [uuid], name
    # And the same name again is still a conflict.
    again = api.post("/resource_providers", json={"name": "compute1 "})
    assert again.status_code == 409


def test_projects_differing_in_case_are_different_projects(api):
    provider = api.create_provider("cn")["uuid"]
    api.set_inventory(provider, VCPU=8)
    first = "11111111-1111-1111-1111-111111111111"
    second = "22222222-2222-2222-2222-222222222222"
    assert api.allocate(first, {provider: {"VCPU": 1}}, project="tenant").status_code == 204
    assert api.allocate(second, {provider: {"VCPU": 2}}, project="Tenant").status_code == 204
    usages = api.get("/usages", query_string={"project_id": "tenant"}, version="1.9").json
    assert usages["usages"] == {"VCPU": 1}


def test_the_urls_charset_does_not_narrow_what_is_stored(engine):
    """The deployment tools write ``?charset=utf8`` (MySQL's 3-byte UTF-8): the service
    speaks utf8mb4 all the same. (On the other backends the URL has no such knob.)"""
    url = engine.url
    if engine.dialect.name == "mysql":
        url = url.update_query_dict({"charset": "utf8"})
    narrow = make_engine(url.render_as_string(hide_password=False))
    try:
        with narrow.begin() as conn:
            conn.execute(
                sa.insert(resource_providers).values(
                    uuid="33333333-3333-3333-3333-333333333333",
                    name=EMOJI_NAME,
                    generation=0,
                    created_at=sa.func.now(),
                )
            )
        with narrow.connect() as conn:
            stored = conn.execute(sa.select(resource_providers.c.name)).scalars().all()
        assert stored == [EMOJI_NAME]
    finally:
        narrow.dispose()
