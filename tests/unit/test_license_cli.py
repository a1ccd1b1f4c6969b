"""``stackflow license``: keygen, issue and verify, run through `main` as a user would."""

from __future__ import annotations

import base64
import io
import json
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from stackflow.cli.license import PRIVATE_KEY_FILE, PUBLIC_KEY_FILE, main
from stackflow.licensing import LicenseStatus, parse_license_json, parse_license_secret
from stackflow.licensing.model import from_millis


@pytest.fixture(scope="module")
def key_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with a key pair made by ``license keygen`` (once: key generation is slow)."""
    out_dir = tmp_path_factory.mktemp("keys") / "license-keys"
    assert main(["keygen", "--out-dir", str(out_dir)]) == 0
    return out_dir


def issue(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run ``license issue`` and return exit status, stdout and stderr."""
    status = main(["issue", *args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_keygen_writes_a_pem_key_pair(key_dir: Path) -> None:
    """Both files exist, are PEM, and the private key is readable by its owner only."""
    private_file, public_file = key_dir / PRIVATE_KEY_FILE, key_dir / PUBLIC_KEY_FILE
    assert private_file.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
    assert public_file.read_bytes().startswith(b"-----BEGIN PUBLIC KEY-----")
    assert stat.S_IMODE(private_file.stat().st_mode) == 0o600


def test_keygen_refuses_to_overwrite(key_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An existing key is never replaced."""
    before = (key_dir / PRIVATE_KEY_FILE).read_bytes()
    assert main(["keygen", "--out-dir", str(key_dir)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "already exists; refusing to overwrite a key" in err
    assert (key_dir / PRIVATE_KEY_FILE).read_bytes() == before


def test_issue_then_verify_as_the_operator_does(
    key_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """keygen → issue → a license Secret the operator accepts with the public key."""
    status, out, err = issue(
        capsys,
        "--private-key",
        str(key_dir / PRIVATE_KEY_FILE),
        "--days",
        "30",
        "--issued-to",
        "ACME & Co",
        "--max-resource-units",
        "8",
    )
    assert (status, err) == (0, "")
    document = json.loads(out)
    spec = document["license"]
    assert (spec["type"], spec["issued_to"], spec["max_resource_units"]) == (
        "enterprise",
        "ACME & Co",
        8,
    )
    start = from_millis(spec["start_date_in_millis"])
    assert from_millis(spec["expiry_date_in_millis"]) - start == timedelta(days=30)
    license_secret = {
        "metadata": {"name": "eck-license", "namespace": "elastic-system"},
        "data": {"license": base64.b64encode(out.encode()).decode()},
    }
    result = parse_license_secret(
        license_secret,
        public_keys=[(key_dir / PUBLIC_KEY_FILE).read_bytes()],
        now=start + timedelta(days=29),
    )
    assert result.status is LicenseStatus.VALID
    assert result.status_at(start + timedelta(days=30)) is LicenseStatus.EXPIRED


def test_issue_trial_type(key_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--type enterprise_trial`` issues a trial the configured key verifies (not an operator trial)."""
    status, out, _ = issue(
        capsys, "--private-key", str(key_dir / PRIVATE_KEY_FILE), "--type", "enterprise_trial"
    )
    assert status == 0
    license = parse_license_json(out)
    assert license.license.is_trial()
    assert not license.license.is_eck_managed_trial()


def test_issued_license_default_fields(key_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Defaults: a year, licensee Unknown, no resource limit field."""
    status, out, _ = issue(capsys, "--private-key", str(key_dir / PRIVATE_KEY_FILE))
    assert status == 0
    spec = json.loads(out)["license"]
    assert "max_resource_units" not in spec
    assert spec["issued_to"] == "Unknown"
    assert spec["expiry_date_in_millis"] - spec["start_date_in_millis"] == 365 * 86_400_000


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "the following arguments are required: --private-key"),
        (["--private-key", "{missing}"], "No such file or directory"),
        (["--private-key", "{public}"], "not an unencrypted PEM private key"),
        (["--private-key", "{private}", "--days", "0"], "argument --days: must be at least 1"),
        (["--private-key", "{private}", "--days", "ten"], "argument --days: not a whole number"),
        (["--private-key", "{private}", "--days", "99999999"], "must be at most"),
        (["--private-key", "{private}", "--type", "platinum"], "argument --type: invalid choice"),
        (
            ["--private-key", "{private}", "--max-resource-units", "-1"],
            "argument --max-resource-units: must not be negative",
        ),
        (["--private-key", "{private}", "--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_issue_bad_input_exits_2_with_one_line(
    key_dir: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    """Bad input: status 2, nothing on stdout, one line on stderr saying what is wrong."""
    paths = {
        "missing": str(key_dir / "nope.pem"),
        "public": str(key_dir / PUBLIC_KEY_FILE),
        "private": str(key_dir / PRIVATE_KEY_FILE),
    }
    status, out, err = issue(capsys, *[arg.format(**paths) for arg in args])
    assert (status, out) == (2, "")
    assert err.count("\n") == 1
    assert err.startswith("stackflow license: error: ")
    assert message in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "the following arguments are required: COMMAND"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        (["keygen"], "the following arguments are required: --out-dir"),
        (["keygen", "--out-dir", "x", "--key-size", "1024"], "argument --key-size: invalid choice"),
    ],
)
def test_usage_errors_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    """Usage errors of any subcommand are one line and status 2."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert message in err


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    """``--help`` prints the subcommands and succeeds."""
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(command in out for command in ("keygen", "issue", "verify"))


def test_keygen_into_unwritable_place(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An --out-dir that is a file is reported, not a traceback."""
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    assert main(["keygen", "--out-dir", str(not_a_dir)]) == 2
    assert "stackflow license: error: cannot create --out-dir" in capsys.readouterr().err


def test_verify_command(key_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``verify`` accepts the issued license and rejects a tampered one with status 1."""
    status, out, _ = issue(capsys, "--private-key", str(key_dir / PRIVATE_KEY_FILE))
    assert status == 0
    good = tmp_path / "good.json"
    good.write_text(out)
    public = str(key_dir / PUBLIC_KEY_FILE)
    assert main(["verify", "--public-key", public, str(good)]) == 0
    assert ": Valid: enterprise license " in capsys.readouterr().out

    tampered = tmp_path / "tampered.json"
    tampered.write_text(out.replace('"issued_to":"Unknown"', '"issued_to":"Mallory"'))
    assert main(["verify", "--public-key", public, str(tampered)]) == 1
    assert "Invalid: invalid signature: license signature verification failed" in (
        capsys.readouterr().out
    )


def test_verify_reads_stdin_and_reports_malformed(
    key_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A malformed document on stdin is bad input: status 2 and ECK's parse error."""
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b'{"license":{"type":"gold"}}')))
    assert main(["verify", "--public-key", str(key_dir / PUBLIC_KEY_FILE)]) == 2
    assert "is not an enterprise license" in capsys.readouterr().err


def test_issued_start_is_now(key_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The license starts at the moment of issue (bracketed by the clock before and after)."""
    before = datetime.now(UTC) - timedelta(milliseconds=1)
    status, out, _ = issue(capsys, "--private-key", str(key_dir / PRIVATE_KEY_FILE))
    after = datetime.now(UTC)
    assert status == 0
    start = from_millis(json.loads(out)["license"]["start_date_in_millis"])
    assert before <= start <= after
