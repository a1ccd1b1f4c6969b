"""The operator caps glibc's malloc arenas itself, unless the environment says otherwise."""

from __future__ import annotations

import platform

import pytest

from stackflow.cli.allocator import ARENAS, cap_malloc_arenas


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the cap is glibc's mallopt")
def test_the_cap_is_set_on_glibc() -> None:
    assert cap_malloc_arenas({}) == ARENAS == 2


@pytest.mark.parametrize("value", ["1", "8"])
def test_an_explicit_malloc_arena_max_wins(value: str) -> None:
    assert cap_malloc_arenas({"MALLOC_ARENA_MAX": value}) is None
