"""``OwnWrites``: which watch events are the echo of the operator's own write."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from stackflow.kube.writes import VERSIONS_PER_OBJECT, OwnWrites, writing_as
from stackflow.models.kinds import CONFIGMAPS, SECRETS


def obj(name: str, version: str, namespace: str = "team-a") -> dict[str, Any]:
    """An object as a write returns it or a watch event shows it."""
    return {"metadata": {"name": name, "namespace": namespace, "resourceVersion": version}}


WRITER = "kibana"


def written(*objects: dict[str, Any], writes: OwnWrites | None = None) -> OwnWrites:
    """A memory that recorded ``objects`` as ConfigMap writes of the ``kibana`` controller."""
    writes = writes if writes is not None else OwnWrites()
    with writing_as(WRITER):
        for each in objects:
            writes.record(CONFIGMAPS, each)
    return writes


def echo(writes: OwnWrites, event_type: str, event: dict[str, Any] | None) -> bool:
    """Whether the writer controller would see ``event`` as its echo."""
    return writes.is_echo(CONFIGMAPS, event_type, event, controller=WRITER)


@pytest.mark.parametrize(
    ("event_type", "event", "expected"),
    [
        ("ADDED", obj("a", "5"), True),
        ("MODIFIED", obj("a", "5"), True),
        # Someone else's later write, another object, another namespace, a deletion: not ours.
        ("MODIFIED", obj("a", "6"), False),
        ("MODIFIED", obj("b", "5"), False),
        ("MODIFIED", obj("a", "5", namespace="team-b"), False),
        ("DELETED", obj("a", "5"), False),
        ("MODIFIED", {"metadata": {"name": "a", "namespace": "team-a"}}, False),
        ("MODIFIED", None, False),
    ],
)
def test_an_event_is_an_echo_only_with_the_exact_version_written(
    event_type: str, event: dict[str, Any] | None, expected: bool
) -> None:
    assert echo(written(obj("a", "5")), event_type, event) is expected


def test_the_kind_is_part_of_the_identity() -> None:
    assert not written(obj("a", "5")).is_echo(SECRETS, "MODIFIED", obj("a", "5"), controller=WRITER)


def test_another_controllers_write_is_news_to_the_others() -> None:
    writes = written(obj("a", "5"))
    assert not writes.is_echo(CONFIGMAPS, "MODIFIED", obj("a", "5"), controller="kb-es")


def test_a_write_outside_any_controller_is_nobodys_echo() -> None:
    writes = OwnWrites()
    writes.record(CONFIGMAPS, obj("a", "5"))
    assert len(writes) == 0


def test_recent_versions_of_one_object_are_all_remembered() -> None:
    versions = [str(number) for number in range(VERSIONS_PER_OBJECT + 1)]
    writes = written(*(obj("a", version) for version in versions))
    assert not echo(writes, "MODIFIED", obj("a", versions[0]))
    assert all(echo(writes, "MODIFIED", obj("a", v)) for v in versions[1:])


def test_the_least_recently_written_objects_are_forgotten_first() -> None:
    writes = written(*(obj(name, "1") for name in ("a", "b", "c")), writes=OwnWrites(capacity=2))
    assert len(writes) == 2
    assert not echo(writes, "MODIFIED", obj("a", "1"))
    assert echo(writes, "MODIFIED", obj("c", "1"))


def test_a_status_answer_is_not_recorded() -> None:
    writes = written({"kind": "Status", "status": "Success"})
    assert len(writes) == 0


def decisions(
    writes: OwnWrites, event: dict[str, Any], *, returned: dict[str, Any] | None
) -> list[str]:
    """What a watcher decides about ``event`` arriving while the writer's write of object ``a``
    is in flight, the write then returning ``returned`` (None: it failed)."""
    decided: list[str] = []

    def decide() -> None:
        decided.append("echo" if echo(writes, "MODIFIED", event) else "signal")

    with (
        writing_as(WRITER),
        contextlib.suppress(RuntimeError),
        writes.writing(CONFIGMAPS, namespace="team-a", name="a"),
    ):
        assert writes.defer(CONFIGMAPS, event, decide)
        assert decided == []  # held while the write is in flight
        if returned is None:
            raise RuntimeError("the write failed")
        writes.record(CONFIGMAPS, returned)
    return decided


@pytest.mark.parametrize(
    ("event", "returned", "expected"),
    [
        # The event of our own write, arriving before the write's answer: an echo after all.
        (obj("a", "7"), obj("a", "7"), ["echo"]),
        # Someone else's version seen during our write: still news.
        (obj("a", "6"), obj("a", "7"), ["signal"]),
        # The write failed: whatever the event shows is someone else's.
        (obj("a", "7"), None, ["signal"]),
    ],
)
def test_an_event_during_a_write_is_decided_once_the_write_returned(
    event: dict[str, Any], returned: dict[str, Any] | None, expected: list[str]
) -> None:
    assert decisions(OwnWrites(), event, returned=returned) == expected


@pytest.mark.parametrize(
    ("event", "in_flight"),
    [
        (obj("a", "7"), "b"),  # another object is being written
        (obj("a", "7", namespace="team-b"), "a"),  # same name, another namespace
    ],
)
def test_nothing_is_held_without_a_write_of_that_object_in_flight(
    event: dict[str, Any], in_flight: str
) -> None:
    writes = OwnWrites()
    with writing_as(WRITER), writes.writing(CONFIGMAPS, namespace="team-a", name=in_flight):
        assert not writes.defer(CONFIGMAPS, event, lambda: None)


def test_a_write_with_no_writer_holds_nothing() -> None:
    writes = OwnWrites()
    with writes.writing(CONFIGMAPS, namespace="team-a", name="a"):
        assert not writes.defer(CONFIGMAPS, obj("a", "7"), lambda: None)
