"""Policy decisions kept between requests, oslo.policy still deciding each one first.

oslo.policy's ``enforce`` walks a rule's checks on every call (and inspects each
check's signature as it goes): about 0.1 ms per rule, for a judgement that depends
only on the rule and on the few values its checks read. So the first judgement of a
rule for some values is oslo.policy's, and it is kept for the next request that
presents the same values.

What a judgement depends on, read from the rule's own check tree (its rules
followed, as oslo.policy follows them):

* the roles (``role:`` checks), and always the token's scope (``system_scope``,
  ``domain_id``): oslo.policy refuses a rule whose ``scope_types`` exclude it;
* the credential a generic check names (``project_id:%(project_id)s`` reads
  ``project_id``; ``reads_everything:True`` reads ``reads_everything``);
* the whole target when a check's match interpolates it (``%(project_id)s``).

A rule with any other kind of check (``http:`` asks a server, an extension may read
anything) is never kept: oslo.policy judges it on every request. The values kept
are those of the rules oslo.policy holds now: before each judgement the enforcer
loads its rules whenever the policy file's modification time moved (``policy_file``
read again when it changed, as ``enforce`` does first), and when it holds other rules
than those the kept judgements came from, they are all dropped.
"""

import os
from collections.abc import Callable, Mapping
from typing import Any

from oslo_policy import _checks
from oslo_policy import policy as oslo_policy

# Judgements kept at most (one per rule and distinct values: a handful of roles and
# scopes in practice, more where a rule reads the project); beyond it they start over.
MAX_DECISIONS = 10_000
# Read for every rule: the token's scope (oslo.policy's ``_enforce_scope``).
SCOPE = ("system_scope", "domain_id")
# oslo.policy copies ``system_scope`` to ``system`` before it judges.
ALIASES = {"system": "system_scope"}


class Reads:
    """What one rule's checks read: credentials by name, and the target or not."""

    def __init__(self, credentials: frozenset[str], target: bool) -> None:
        self.credentials = tuple(sorted(credentials | set(SCOPE)))
        self.target = target

    def key(self, rule: str, credentials: Mapping[str, Any], target: Mapping) -> tuple:
        values = tuple(_hashable(credentials.get(name)) for name in self.credentials)
        if not self.target:
            return (rule, values)
        return (rule, values, tuple(sorted((k, _hashable(v)) for k, v in target.items())))


def reads_of(rules: Mapping[str, _checks.BaseCheck], rule: str) -> Reads | None:
    """What ``rule`` reads, or None when a check of it cannot be kept."""
    credentials: set[str] = set()
    target = False
    seen: set[int] = set()
    todo = [_rule_named(rules, rule)]
    while todo:
        check = todo.pop()
        if check is None or id(check) in seen:
            continue
        seen.add(id(check))
        kind = type(check)
        if kind in (_checks.TrueCheck, _checks.FalseCheck):
            continue
        if kind is _checks.NotCheck:
            todo.append(check.rule)  # type: ignore[attr-defined]
        elif kind in (_checks.AndCheck, _checks.OrCheck):
            todo.extend(check.rules)  # type: ignore[attr-defined]
        elif kind is _checks.RuleCheck:
            todo.append(_rule_named(rules, check.match))  # type: ignore[attr-defined]
        elif kind is _checks.RoleCheck:
            credentials.add("roles")
            target = target or "%" in check.match  # type: ignore[attr-defined]
        elif kind is _checks.GenericCheck:
            # (a literal kind, ``True:%(x)s``, reads no credential: naming one is harmless)
            name = check.kind.split(".")[0]  # type: ignore[attr-defined]
            credentials.add(ALIASES.get(name, name))
            target = target or "%" in check.match  # type: ignore[attr-defined]
        else:
            return None
    return Reads(frozenset(credentials), target)


def _rule_named(rules: Mapping[str, _checks.BaseCheck], name: str) -> _checks.BaseCheck | None:
    try:
        return rules[name]  # (oslo.policy's Rules fall back on the default rule)
    except KeyError:
        return None  # oslo.policy refuses: nothing is read


def _hashable(value: Any) -> Any:
    if isinstance(value, list | tuple | set | frozenset):
        return tuple(sorted(value, key=repr))
    return value


class _Kept:
    """The judgements made under one set of the enforcer's rules."""

    def __init__(self, rules: object) -> None:
        self.rules = rules
        self.reads: dict[str, Reads | None] = {}
        self.decisions: dict[tuple, bool] = {}


class Decisions:
    """The judgements of one enforcer, kept while it holds the same rules. Safe under
    threads without a lock: a change of rules replaces what is kept (a judgement made
    meanwhile lands in what was dropped), and a judgement made twice is the same."""

    def __init__(self, enforcer: oslo_policy.Enforcer) -> None:
        self._enforcer = enforcer
        self._kept = _Kept(None)
        self._file_time: float | None = None  # of the policy file when its rules were loaded

    def _load_rules(self) -> None:
        """What ``enforce`` does first, when it may change something: oslo.policy reads
        its file again only once the file's modification time has moved on."""
        path = self._enforcer.policy_path
        try:
            file_time = os.stat(path).st_mtime if path else None
        except OSError:
            file_time = None  # (oslo.policy says what is wrong with the file)
        if file_time is None or file_time != self._file_time:
            self._enforcer.load_rules()
            self._file_time = file_time

    def allows(
        self,
        rule: str,
        credentials: Mapping[str, Any],
        target: Mapping,
        judge: Callable[[], Any],
    ) -> bool:
        """Whether ``rule`` allows ``credentials`` on ``target``: ``judge()`` (oslo.policy)
        the first time for their values, the judgement kept afterwards."""
        self._load_rules()
        kept = self._kept
        if self._enforcer.rules is not kept.rules:
            kept = self._kept = _Kept(self._enforcer.rules)
        if rule not in kept.reads:
            kept.reads[rule] = reads_of(kept.rules, rule)  # type: ignore[arg-type]
        reads = kept.reads[rule]
        if reads is None:
            return bool(judge())
        key = reads.key(rule, credentials, target)
        try:
            allowed = kept.decisions.get(key)
        except TypeError:  # a value that cannot be a key: judged every time
            return bool(judge())
        if allowed is None:
            allowed = bool(judge())
            if len(kept.decisions) >= MAX_DECISIONS:
                kept.decisions.clear()
            kept.decisions[key] = allowed
        return allowed
