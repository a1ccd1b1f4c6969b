"""``stackflow license``: make signing keys, issue signed licenses, check a license.

* ``keygen --out-dir DIR`` writes ``DIR/license-private.pem`` and ``DIR/license-public.pem``
  (the public one is what the operator's ``license-public-key`` points at);
* ``issue --private-key FILE`` prints a signed ``{"license": {...}}`` document on stdout, ready to
  go into a Secret labelled ``license.k8s.elastic.co/scope: operator``;
* ``verify --public-key FILE [LICENSE]`` says whether a license document is valid now.

Bad input exits with status 2 and one line on stderr; a license that does not verify, with 1.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import NoReturn

from stackflow.licensing.issue import (
    DEFAULT_ISSUED_TO,
    DEFAULT_ISSUER,
    generate_private_key,
    issue_license,
    load_private_key,
    private_key_pem,
    public_key_pem,
)
from stackflow.licensing.model import LicenseParseError, OperatorLicenseType, parse_license_json
from stackflow.licensing.verify import check_license, load_public_key

PROG = "stackflow license"
PRIVATE_KEY_FILE = "license-private.pem"
PUBLIC_KEY_FILE = "license-public.pem"
DEFAULT_DAYS = 365
KEY_SIZES = (2048, 3072, 4096)
# A day short of 10,000 years keeps expiry inside what datetime (and Go's time) can represent.
MAX_DAYS = 3_650_000 - 1


class UsageError(Exception):
    """Bad command-line input; reported as one line with exit status 2."""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that reports errors as one line instead of usage plus message."""

    def error(self, message: str) -> NoReturn:
        """Raise instead of printing usage and exiting, so `main` controls the output."""
        raise UsageError(message)


def _positive_int(text: str) -> int:
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _non_negative_int(text: str) -> int:
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {value}")
    return value


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None


def build_parser() -> argparse.ArgumentParser:
    """The ``stackflow license`` parser and its subcommands."""
    parser = _Parser(prog=PROG, description="Create license signing keys and signed licenses.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    keygen = sub.add_parser("keygen", help="create an RSA key pair for signing licenses")
    keygen.add_argument("--out-dir", required=True, type=Path, help="directory for the key files")
    keygen.add_argument("--key-size", type=int, choices=KEY_SIZES, default=2048)

    issue = sub.add_parser("issue", help="print a signed license on stdout")
    issue.add_argument("--private-key", required=True, type=Path, help="PEM signing key")
    issue.add_argument(
        "--type",
        dest="license_type",
        choices=[OperatorLicenseType.ENTERPRISE.value, OperatorLicenseType.ENTERPRISE_TRIAL.value],
        default=OperatorLicenseType.ENTERPRISE.value,
    )
    issue.add_argument("--days", type=_positive_int, default=DEFAULT_DAYS, help="validity in days")
    issue.add_argument("--issued-to", default=DEFAULT_ISSUED_TO, help="licensee name")
    issue.add_argument("--issuer", default=DEFAULT_ISSUER, help="issuer name")
    issue.add_argument("--max-resource-units", type=_non_negative_int, default=0)

    verify = sub.add_parser("verify", help="check a license document against a public key")
    verify.add_argument("--public-key", required=True, type=Path, help="PEM public key")
    verify.add_argument("license", nargs="?", type=Path, help="license file (default: stdin)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``stackflow license``; returns the exit status."""
    try:
        args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
        if args.command == "keygen":
            return _keygen(out_dir=args.out_dir, key_size=args.key_size)
        if args.command == "issue":
            return _issue(args)
        return _verify(public_key_file=args.public_key, license_file=args.license)
    except UsageError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2
    except SystemExit as exiting:
        # --help: argparse has printed the help and asks to exit.
        return exiting.code if isinstance(exiting.code, int) else 0


def _keygen(*, out_dir: Path, key_size: int) -> int:
    private_file, public_file = out_dir / PRIVATE_KEY_FILE, out_dir / PUBLIC_KEY_FILE
    for existing in (private_file, public_file):
        if existing.exists():
            raise UsageError(f"{existing} already exists; refusing to overwrite a key")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(f"cannot create --out-dir {out_dir}: {error.strerror}") from error
    private_key = generate_private_key(key_size=key_size)
    try:
        # The private key is created owner-only from the start rather than chmod-ed afterwards.
        with open(private_file, "xb", opener=_owner_only) as handle:
            handle.write(private_key_pem(private_key))
        public_file.write_bytes(public_key_pem(private_key.public_key()))
    except OSError as error:
        raise UsageError(f"cannot write keys to {out_dir}: {error.strerror}") from error
    print(f"wrote {private_file} and {public_file}")
    return 0


def _owner_only(path: str, flags: int) -> int:
    return os.open(path, flags, 0o600)


def _issue(args: argparse.Namespace) -> int:
    try:
        private_key = load_private_key(_read(args.private_key, flag="--private-key"))
    except ValueError as error:
        raise UsageError(f"--private-key {args.private_key}: {error}") from error
    if args.days > MAX_DAYS:
        raise UsageError(f"argument --days: must be at most {MAX_DAYS}, got {args.days}")
    license = issue_license(
        private_key=private_key,
        now=datetime.now(UTC),
        validity=timedelta(days=args.days),
        license_type=args.license_type,
        issued_to=args.issued_to,
        issuer=args.issuer,
        max_resource_units=args.max_resource_units,
    )
    print(license.to_json())
    return 0


def _verify(*, public_key_file: Path, license_file: Path | None) -> int:
    try:
        public_key = load_public_key(_read(public_key_file, flag="--public-key"))
    except ValueError as error:
        raise UsageError(f"--public-key {public_key_file}: {error}") from error
    raw = sys.stdin.buffer.read() if license_file is None else _read(license_file, flag="license")
    try:
        license = parse_license_json(raw)
    except LicenseParseError as error:
        raise UsageError(f"license: {error}") from error
    source = "-" if license_file is None else str(license_file)
    now = datetime.now(UTC)
    # The one key given signs both kinds: an operator trial is checked like any other license.
    check = check_license(
        license, public_keys=[public_key], trial_public_key=public_key, now=now, name=source
    )
    reason = check.problem_at(now)
    if reason is not None:
        print(f"{source}: {check.status_at(now).value}: {reason}")
        return 1
    expiry = license.license.expiry_time().isoformat()
    print(f"{source}: Valid: {license.license.type} license {license.license.uid} until {expiry}")
    return 0


def _read(path: Path, *, flag: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise UsageError(f"{flag} {path}: {error.strerror}") from error
