"""The chart's files that copy others: its CRDs are ``deploy/crds`` byte for byte, and its
version and appVersion are the package's (``stackflow.__version__``, which pyproject.toml reads)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import stackflow

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "deploy" / "stackflow"
CRDS = REPO / "deploy" / "crds"


def _files(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir()) if path.is_file()}


def test_the_chart_crds_are_deploy_crds_byte_for_byte() -> None:
    source, copy = _files(CRDS), _files(CHART / "crds")
    assert source, f"no CRDs in {CRDS}"
    assert sorted(copy) == sorted(source), "cp deploy/crds/* deploy/stackflow/crds/"
    changed = sorted(name for name in source if copy[name] != source[name])
    assert changed == [], "cp deploy/crds/* deploy/stackflow/crds/"


@pytest.mark.parametrize("field", ["version", "appVersion"])
def test_the_chart_versions_are_the_package_version(field: str) -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert str(chart[field]) == stackflow.__version__
