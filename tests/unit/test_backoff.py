"""The shared capped exponential backoff."""

from __future__ import annotations

import itertools

import pytest

import stackflow.kube
from stackflow.kube import informer
from stackflow.kube.backoff import Backoff


@pytest.mark.parametrize(
    ("backoff", "attempt", "expected"),
    [
        (Backoff(), 0, 0.1),
        (Backoff(), 3, 0.8),
        (Backoff(), 7, 10.0),  # 12.8, capped
        (Backoff(), -1, 0.1),  # negative attempts count as the first
        (Backoff(initial=0.05, maximum=0.5), 2, 0.2),
        (Backoff(initial=0.05, maximum=0.5), 4, 0.5),
        (Backoff(initial=1.0, factor=3.0, maximum=100.0), 3, 27.0),
        (Backoff(initial=1.0, factor=1.0, maximum=5.0), 50, 1.0),
        (Backoff(initial=0.2, maximum=10.0), 5000, 10.0),  # past float range: still the cap
        (Backoff(initial=0.0, maximum=10.0), 5000, 0.0),
    ],
)
def test_delay(backoff: Backoff, attempt: int, expected: float) -> None:
    assert backoff.delay(attempt) == pytest.approx(expected)
    assert isinstance(backoff.delay(attempt), float)


@pytest.mark.parametrize(("initial", "maximum"), [(0.2, 10.0), (0.05, 0.5), (1.0, 30.0)])
def test_reproduces_min_of_maximum_and_doubling(initial: float, maximum: float) -> None:
    backoff = Backoff(initial=initial, maximum=maximum)
    for attempt in range(40):
        assert backoff.delay(attempt) == min(maximum, initial * 2**attempt)


def test_delays_is_the_schedule() -> None:
    backoff = Backoff(initial=1.0, maximum=5.0)
    assert list(itertools.islice(backoff.delays(), 5)) == [1.0, 2.0, 4.0, 5.0, 5.0]


@pytest.mark.parametrize(("rand", "expected"), [(0.0, 8.0), (0.5, 6.0), (0.999, 4.004)])
def test_jitter_takes_off_at_most_its_fraction(rand: float, expected: float) -> None:
    backoff = Backoff(initial=1.0, maximum=10.0, jitter=0.5)
    assert backoff.delay(3, rand=lambda: rand) == pytest.approx(expected)
    assert list(itertools.islice(backoff.delays(rand=lambda: 0.0), 2)) == [1.0, 2.0]


def test_without_jitter_rand_is_not_used() -> None:
    def fail() -> float:
        raise AssertionError("rand called")

    assert Backoff().delay(1, rand=fail) == pytest.approx(0.2)


@pytest.mark.parametrize(
    "kwargs",
    [{"initial": -1.0}, {"maximum": -1.0}, {"factor": 0.5}, {"jitter": 1.5}, {"jitter": -0.1}],
)
def test_invalid_schedules_are_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="backoff"):
        Backoff(**kwargs)


def test_is_frozen_and_reexported() -> None:
    backoff = Backoff()
    with pytest.raises(AttributeError):
        backoff.initial = 1.0  # type: ignore[misc]
    assert stackflow.kube.Backoff is Backoff
    assert informer.Backoff is Backoff
