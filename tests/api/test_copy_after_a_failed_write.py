"""The copy of the providers never keeps what did not commit.

A write may read the copy after its own writes (the node's view answered after a sync or
an import). Should that write then roll back, the copy would hold providers that never
existed, and no later change would correct it: their changes are not in the log. The copy
is dropped instead, and the next search reads every provider again.
"""

from placement.group_resources.service import GroupResourceSearch
from tests.api.group_resource_helpers import eight_gpu_node, sync


def _committed_providers(api) -> set[str]:
    return {p["uuid"] for p in api.get("/resource_providers").json["resource_providers"]}


def _candidate_providers(api) -> set[str]:
    answer = api.get("/allocation_candidates?resources=VCPU:1")
    assert answer.status_code == 200, answer.json
    return set(answer.json["provider_summaries"])


def test_a_write_that_rolls_back_after_reading_the_copy_leaves_nothing_in_it(api, monkeypatch):
    assert sync(api, "n1", eight_gpu_node()).status_code == 201
    assert _candidate_providers(api) <= _committed_providers(api)
    shown = GroupResourceSearch.show
    read_in_the_write: list[str] = []

    def show_then_fail(self, conn, name):
        body = shown(self, conn, name)  # the copy now holds the node not yet committed
        read_in_the_write.append(body["uuid"])
        raise RuntimeError("the write fails after reading the copy")

    monkeypatch.setattr(GroupResourceSearch, "show", show_then_fail)
    failed = sync(api, "n2", eight_gpu_node(), expect=(500,))
    assert failed.status_code == 500
    monkeypatch.undo()

    assert len(read_in_the_write) == 1
    committed = _committed_providers(api)
    assert read_in_the_write[0] not in committed  # rolled back
    candidates = _candidate_providers(api)
    assert read_in_the_write[0] not in candidates
    assert candidates and candidates <= committed
    assert api.get("/group_resources/nodes/n2").status_code == 404
