"""The control plane's keys and tokens are readable by their owner only, from their creation on."""

from __future__ import annotations

import stat
from pathlib import Path

from controlplane import pki


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_every_private_key_of_the_control_plane_is_owner_only(tmp_path: Path) -> None:
    keys = pki.generate(tmp_path / "pki")
    private = sorted(path for path in (tmp_path / "pki").rglob("*") if "key" in path.name)
    assert private, "no key files were written"
    assert {path.name: _mode(path) for path in private} == {path.name: 0o600 for path in private}
    assert _mode(keys.admin.key) == 0o600


def test_an_older_more_open_file_is_narrowed_when_written_again(tmp_path: Path) -> None:
    token = tmp_path / "operator.kubeconfig"
    token.write_text("old")
    token.chmod(0o644)
    pki.write_private(token, b"token: new")
    assert token.read_bytes() == b"token: new"
    assert _mode(token) == 0o600
