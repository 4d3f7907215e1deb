"""SQL for Kubernetes pod groups (``placement.k8s.pod_groups``): each group's reserved
gang, its members' nodes, and the pods that took them.

A member is taken, and released, by a conditional write on its row (``WHERE pod_uid
IS NULL``): of two transactions that want one member, the second waits for the first
and then finds the row changed, on every backend. A transaction takes member rows
before it locks any provider, so the two kinds of lock are never taken in two orders.
"""

import datetime
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import Connection, and_, delete, exists, insert, select, update
from sqlalchemy.exc import IntegrityError

from placement import errors
from placement.db.tables import (
    allocations,
    consumers,
    gang_members,
    pod_group_members,
    pod_group_reservations,
)


@dataclass(frozen=True)
class Reservation:
    gang_uuid: str
    pod_group: str
    member_request: str  # what its members' pods ask (``pod_groups.member_request``)
    created_at: datetime.datetime


@dataclass(frozen=True)
class Member:
    gang_uuid: str
    member: int
    node: str
    device_allocated: str  # the pod annotation of its devices
    consumer_uuid: str  # who holds its allocations: a placeholder, or the pod that took it
    pod_uid: str | None


def insert_reservation(
    conn: Connection, gang_uuid: str, pod_group: str, member_request: str, now: datetime.datetime
) -> None:
    """The group's reservation; Conflict when another transaction made one first (the
    unique key makes the second wait for the first, then refuses it)."""
    try:
        with conn.begin_nested():
            conn.execute(
                insert(pod_group_reservations).values(
                    gang_uuid=gang_uuid,
                    pod_group=pod_group,
                    member_request=member_request,
                    created_at=now,
                )
            )
    except IntegrityError as exc:
        raise errors.Conflict(
            "It was reserved concurrently; schedule the pod again.",
            code=errors.CONCURRENT_UPDATE,
        ) from exc


def insert_members(
    conn: Connection,
    gang_uuid: str,
    members: Iterable[tuple[str, str]],
    now: datetime.datetime,
) -> None:
    """The gang's members in order: (node, device_allocated) each."""
    rows = [
        {
            "gang_uuid": gang_uuid,
            "member": index,
            "node_name": node,
            "device_allocated": annotation,
            "created_at": now,
        }
        for index, (node, annotation) in enumerate(members)
    ]
    conn.execute(insert(pod_group_members), rows)


def reservation_of(conn: Connection, pod_group: str) -> Reservation | None:
    # SELECT gang_uuid, pod_group, member_request, created_at FROM pod_group_reservations
    #   WHERE pod_group = :pod_group
    row = conn.execute(
        select(*_reservation_columns()).where(pod_group_reservations.c.pod_group == pod_group)
    ).first()
    return Reservation(*row) if row is not None else None


def _reservation_columns():
    r = pod_group_reservations
    return r.c.gang_uuid, r.c.pod_group, r.c.member_request, r.c.created_at


def _members_select():
    # SELECT m.gang_uuid, m.member, m.node_name, m.device_allocated, g.consumer_uuid,
    #        m.pod_uid
    #   FROM pod_group_members m JOIN gang_members g
    #     ON g.gang_uuid = m.gang_uuid AND g.member = m.member
    # (A member whose gang was released whole, DELETE /group_resources/gangs/{uuid}, has
    # no gang_members row: it is left out.)
    m, g = pod_group_members, gang_members
    return select(
        m.c.gang_uuid,
        m.c.member,
        m.c.node_name,
        m.c.device_allocated,
        g.c.consumer_uuid,
        m.c.pod_uid,
    ).join(g, and_(g.c.gang_uuid == m.c.gang_uuid, g.c.member == m.c.member))


def unclaimed_members(conn: Connection, gang_uuid: str) -> list[Member]:
    """The gang's members no pod took yet, in member order."""
    m = pod_group_members
    rows = conn.execute(
        _members_select()
        .where(m.c.gang_uuid == gang_uuid, m.c.pod_uid.is_(None))
        .order_by(m.c.member)
    )
    return [Member(*row) for row in rows]


def expired_members(conn: Connection, older_than: datetime.datetime) -> list[Member]:
    """The members no pod took of the reservations made before ``older_than``."""
    m, r = pod_group_members, pod_group_reservations
    rows = conn.execute(
        _members_select()
        .join(r, r.c.gang_uuid == m.c.gang_uuid)
        .where(r.c.created_at < older_than, m.c.pod_uid.is_(None))
        .order_by(m.c.gang_uuid, m.c.member)
    )
    return [Member(*row) for row in rows]


def take_member(conn: Connection, member: Member, pod_uid: str, now: datetime.datetime) -> bool:
    """Give the member to the pod: True, or False when another transaction took or
    released it first. The gang's own record then names the pod as the member."""
    m = pod_group_members
    # UPDATE pod_group_members SET pod_uid = :pod, updated_at = :now
    #   WHERE gang_uuid = :gang AND member = :member AND pod_uid IS NULL
    taken = conn.execute(
        update(m)
        .where(m.c.gang_uuid == member.gang_uuid, m.c.member == member.member)
        .where(m.c.pod_uid.is_(None))
        .values(pod_uid=pod_uid, updated_at=now)
    ).rowcount
    if taken != 1:
        return False
    conn.execute(
        update(gang_members)
        .where(
            gang_members.c.gang_uuid == member.gang_uuid,
            gang_members.c.member == member.member,
        )
        .values(consumer_uuid=pod_uid, updated_at=now)
    )
    return True


def drop_unclaimed_member(conn: Connection, member: Member) -> bool:
    """Forget the member if still no pod took it (True), from the gang too."""
    m = pod_group_members
    # DELETE FROM pod_group_members
    #   WHERE gang_uuid = :gang AND member = :member AND pod_uid IS NULL
    dropped = conn.execute(
        delete(m)
        .where(m.c.gang_uuid == member.gang_uuid, m.c.member == member.member)
        .where(m.c.pod_uid.is_(None))
    ).rowcount
    if dropped != 1:
        return False
    conn.execute(
        delete(gang_members).where(
            gang_members.c.gang_uuid == member.gang_uuid,
            gang_members.c.member == member.member,
        )
    )
    return True


def _holds_anything(gang_uuid_column):
    # EXISTS (SELECT 1 FROM gang_members g JOIN consumers c ON c.uuid = g.consumer_uuid
    #   JOIN allocations a ON a.consumer_id = c.id WHERE g.gang_uuid = <column>)
    g = gang_members
    return exists(
        select(allocations.c.id)
        .select_from(g.join(consumers, consumers.c.uuid == g.c.consumer_uuid))
        .join(allocations, allocations.c.consumer_id == consumers.c.id)
        .where(g.c.gang_uuid == gang_uuid_column)
    )


def gang_holds_anything(conn: Connection, gang_uuid: str) -> bool:
    """Whether any member of the gang (placeholder or pod) still holds allocations."""
    return bool(conn.scalar(select(_holds_anything(gang_uuid))))


def reservations_holding_nothing(conn: Connection) -> list[Reservation]:
    """The reservations none of whose members holds anything any more: the group's
    pods are gone (released) and no member is left reserved."""
    r = pod_group_reservations
    rows = conn.execute(
        select(*_reservation_columns())
        .where(~_holds_anything(r.c.gang_uuid))
        .order_by(r.c.pod_group)
    )
    return [Reservation(*row) for row in rows]


def delete_reservation(conn: Connection, gang_uuid: str) -> None:
    """The reservation, its members and its gang's record (their allocations are the
    caller's)."""
    conn.execute(delete(pod_group_members).where(pod_group_members.c.gang_uuid == gang_uuid))
    conn.execute(delete(gang_members).where(gang_members.c.gang_uuid == gang_uuid))
    conn.execute(
        delete(pod_group_reservations).where(pod_group_reservations.c.gang_uuid == gang_uuid)
    )
