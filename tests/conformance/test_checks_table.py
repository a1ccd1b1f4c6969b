"""The table of checks: the specification's 25 conformance checks are all there, each described."""

from __future__ import annotations

import pytest

from tests.conformance.registry import all_checks

pytestmark = pytest.mark.apiserver


def test_the_25_conformance_checks_of_the_specification_are_in_the_table() -> None:
    numbers = {name.split("-")[1] for name in all_checks() if name.startswith("spec-")}
    assert numbers == {f"{number:02d}" for number in range(1, 26)}


def test_every_check_says_what_it_covers() -> None:
    assert all(check.covers.strip() for check in all_checks().values())
