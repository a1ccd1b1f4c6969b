"""DIFFERENCES.md cannot drift from the tables of differences.py, and the tables stay sane."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conformance.differences import (
    ANY_CHECK,
    DIFFERENCES,
    FIXED,
    markdown_fixed,
    markdown_row,
)
from tests.conformance.registry import all_checks

DOCUMENT = Path(__file__).with_name("DIFFERENCES.md")

pytestmark = pytest.mark.apiserver


def test_every_documented_difference_is_in_the_markdown() -> None:
    text = DOCUMENT.read_text(encoding="utf-8")
    missing = [row for row in DIFFERENCES if markdown_row(row) not in text.splitlines()]
    assert not missing, (
        "rows of differences.py missing from DIFFERENCES.md "
        "(regenerate it with `python -m tests.conformance.report --markdown`): "
        + "; ".join(f"{row.check} {row.paths}" for row in missing)
    )


def test_the_markdown_has_no_row_the_table_lacks() -> None:
    rows = {markdown_row(row) for row in DIFFERENCES}
    lines = DOCUMENT.read_text(encoding="utf-8").splitlines()
    table = [line for line in lines if line.startswith("| `")]
    assert set(table) <= rows, f"DIFFERENCES.md rows not in differences.py: {set(table) - rows}"


def test_every_fix_is_in_the_markdown() -> None:
    lines = DOCUMENT.read_text(encoding="utf-8").splitlines()
    missing = [check for check, what in FIXED.items() if markdown_fixed(check, what) not in lines]
    assert not missing, f"fixes missing from DIFFERENCES.md: {missing}"


def test_the_tables_name_existing_checks() -> None:
    checks = set(all_checks())
    unknown = [row.check for row in DIFFERENCES if row.check not in checks | {ANY_CHECK}]
    unknown += [name for name in FIXED if name not in checks]
    assert not unknown, f"differences.py names checks that do not exist: {unknown}"


def test_every_difference_says_why() -> None:
    assert all(row.reason.strip() and row.paths for row in DIFFERENCES)
