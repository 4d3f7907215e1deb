"""Kept policy judgements (``placement.policy_decisions``): each the one oslo.policy gives
for the same rule, credentials and target, whatever was asked before, and none of them
outliving the policy file it came from."""

import itertools
import os
from pathlib import Path

import pytest
from oslo_policy import _checks

from placement import errors
from placement.auth import Credentials
from placement.policy import API_RULES, Policy

ADMIN = Credentials(frozenset({"admin"}), project_id="p1", user_id="alice")
SERVICE = Credentials(frozenset({"service"}), project_id="services", user_id="nova")
READER_P1 = Credentials(frozenset({"reader"}), project_id="p1", user_id="bob")
READER_P2 = Credentials(frozenset({"reader"}), project_id="p2", user_id="carol")
NO_ROLE = Credentials(frozenset(), project_id="p1", user_id="dave")
TOKEN_READER = Credentials(frozenset({"reader"}), reads_everything=True)
SYSTEM_ADMIN = Credentials(frozenset({"admin"}), user_id="alice", system_scope="all")
DOMAIN_ADMIN = Credentials(frozenset({"admin"}), user_id="alice", domain_id="d1")
EVERYONE = [ADMIN, SERVICE, READER_P1, READER_P2, NO_ROLE, TOKEN_READER, SYSTEM_ADMIN, DOMAIN_ADMIN]
USAGES = "placement:usages"
TRAITS = "placement:traits:list"


def allows(policy: Policy, rule: str, who: Credentials, target: dict | None = None) -> bool:
    target = (
        target if target is not None else {"project_id": who.project_id, "user_id": who.user_id}
    )
    try:
        policy.authorize(rule, who.policy_values(), target)
    except errors.Forbidden:
        return False
    return True


def oslo_alone(policy: Policy, rule: str, who: Credentials, target: dict | None = None) -> bool:
    """oslo.policy's own judgement, nothing kept."""
    target = (
        target if target is not None else {"project_id": who.project_id, "user_id": who.user_id}
    )
    return policy._judge(rule, who.policy_values(), target)


def write_policy(path: Path, rules: str) -> None:
    """Write the file and move its modification time on (oslo.policy reads a file again
    when that time moves)."""
    before = os.stat(path).st_mtime if path.exists() else 0
    path.write_text(rules)
    later = max(before, os.stat(path).st_mtime) + 5
    os.utime(path, (later, later))


@pytest.mark.parametrize("new_defaults", [False, True])
def test_every_kept_judgement_is_oslo_policys(new_defaults):
    """Every rule, for every kind of caller, on their own project and on others: asked
    twice in a row and interleaved, the answer is oslo.policy's on a fresh enforcer."""
    policy = Policy(None, enforce_new_defaults=new_defaults)
    fresh = Policy(None, enforce_new_defaults=new_defaults)
    targets = [None, {"project_id": "p1"}, {"project_id": "p2"}, {"project_id": None}]
    cases = list(itertools.product(list(API_RULES), EVERYONE, targets))
    for _ in range(2):
        for rule, who, target in cases:
            assert allows(policy, rule, who, target) == oslo_alone(fresh, rule, who, target), (
                rule,
                who,
                target,
            )


def test_the_answers_differ_by_caller_and_target():
    """(So that the test above compares judgements that differ.)"""
    policy = Policy(None, enforce_new_defaults=False)
    assert allows(policy, TRAITS, ADMIN) and not allows(policy, TRAITS, NO_ROLE)
    assert allows(policy, TRAITS, TOKEN_READER) and not allows(policy, TRAITS, READER_P1)
    assert not allows(policy, TRAITS, SYSTEM_ADMIN)  # a project-scoped rule
    assert not allows(policy, TRAITS, DOMAIN_ADMIN)
    assert allows(policy, USAGES, READER_P1, {"project_id": "p1"})
    assert not allows(policy, USAGES, READER_P1, {"project_id": "p2"})
    assert allows(policy, USAGES, READER_P2, {"project_id": "p2"})
    assert not allows(policy, USAGES, READER_P2, {"project_id": "p1"})


def test_a_judgement_is_kept_for_the_same_values_only(monkeypatch):
    policy = Policy(None, enforce_new_defaults=False)
    judged = []
    judge = policy._judge
    monkeypatch.setattr(policy, "_judge", lambda *a: judged.append(a) or judge(*a))
    for _ in range(3):
        assert allows(policy, TRAITS, ADMIN)
    assert len(judged) == 1
    # Another user and project with the same roles: the rule reads neither.
    assert allows(policy, TRAITS, Credentials(frozenset({"admin"}), project_id="p9", user_id="zed"))
    assert len(judged) == 1
    # /usages reads the project, of the caller and of the target.
    assert allows(policy, USAGES, READER_P1, {"project_id": "p1"})
    assert not allows(policy, USAGES, READER_P1, {"project_id": "p2"})
    assert not allows(policy, USAGES, READER_P2, {"project_id": "p1"})
    assert len(judged) == 4


def test_a_changed_policy_file_replaces_every_kept_judgement(tmp_path):
    path = tmp_path / "policy.yaml"
    write_policy(path, f'"{TRAITS}": "@"\n')
    policy = Policy(str(path), enforce_new_defaults=False)
    assert allows(policy, TRAITS, NO_ROLE)
    write_policy(path, f'"{TRAITS}": "!"\n')
    assert not allows(policy, TRAITS, NO_ROLE)
    assert not allows(policy, TRAITS, ADMIN)
    write_policy(path, f'"{TRAITS}": "role:reader"\n')
    assert allows(policy, TRAITS, READER_P1) and not allows(policy, TRAITS, ADMIN)
    # A rule the file does not name: back to its default, which the file's rules may
    # change through the rules it refers to.
    write_policy(path, '"admin_or_service_api": "role:service"\n')
    assert not allows(policy, TRAITS, ADMIN) and allows(policy, TRAITS, SERVICE)
    write_policy(path, "")
    assert allows(policy, TRAITS, ADMIN) and not allows(policy, TRAITS, NO_ROLE)


def test_a_rule_reading_another_credential_keeps_them_apart(tmp_path):
    path = tmp_path / "policy.yaml"
    write_policy(path, f'"{TRAITS}": "user_id:alice or domain_id:d1"\n')
    policy = Policy(str(path), enforce_new_defaults=False)
    bob = Credentials(frozenset({"admin"}), project_id="p1", user_id="bob")
    assert allows(policy, TRAITS, ADMIN)  # alice
    assert not allows(policy, TRAITS, bob)
    assert allows(policy, TRAITS, ADMIN)


def test_the_new_defaults_are_each_policys_own():
    legacy = Policy(None, enforce_new_defaults=False)
    new = Policy(None, enforce_new_defaults=True)
    for _ in range(2):
        assert allows(legacy, "placement:reshaper:reshape", ADMIN)
        assert not allows(new, "placement:reshaper:reshape", ADMIN)
        assert allows(new, "placement:reshaper:reshape", SERVICE)


class _Counted(_checks.Check):
    calls = 0

    def __call__(self, target, creds, enforcer, current_rule=None):
        type(self).calls += 1
        return type(self).calls % 2 == 1  # allows every other time


@pytest.fixture
def counted_check():
    _checks.register("counted", _Counted)
    _Counted.calls = 0
    yield _Counted
    del _checks.registered_checks["counted"]


def test_a_rule_with_another_kind_of_check_is_judged_every_time(tmp_path, counted_check):
    path = tmp_path / "policy.yaml"
    write_policy(path, f'"{TRAITS}": "role:admin and counted:x"\n')
    policy = Policy(str(path), enforce_new_defaults=False)
    assert [allows(policy, TRAITS, ADMIN) for _ in range(4)] == [True, False, True, False]
    assert counted_check.calls == 4
