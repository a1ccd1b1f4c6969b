"""License verification and the enterprise-features decision, as ECK makes them.

Pure functions: the caller lists the operator-scope license Secrets (label
``license.k8s.elastic.co/scope: operator``), reads the trial public key from the ``trial-status``
Secret, and passes the clock in as ``now``. Rules (ECK's ``check.go``, ``verifier.go``, ``model.go``):

* a Secret must hold exactly one data key, whose value is a ``{"license": {...}}`` document of type
  ``enterprise`` or ``enterprise_trial`` (legacy ``enterprise-trial``); anything else is *malformed*:
  ignored, with a Warning event on the Secret;
* a license is valid at ``now`` iff ``start <= now < expiry`` (else *Expired*) and its signature
  verifies (else *Invalid*);
* an ECK-managed trial (trial type, issuer ``Elastic k8s operator`` or empty) is verified with the
  trial public key only; every other license with the configured public key(s) only — with no key
  configured nothing but a trial can be valid (ECK's "unlicensed development build");
* the current license is the first valid one after sorting by type rank (enterprise, trial, legacy
  trial) and then latest expiry; enterprise features are enabled iff there is one.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from stackflow.licensing.model import (
    TRIAL_PUBKEY_KEY,
    EnterpriseLicense,
    LicenseParseError,
    LicenseSpec,
    parse_license_json,
)
from stackflow.licensing.signature import (
    FingerprintMatch,
    SignatureError,
    decode_signature,
    match_key_fingerprint,
    signable_content_bytes,
)
from stackflow.models.objects import view

NO_PUBLIC_KEY_PROBLEM = (
    "no license public key is configured: enterprise licenses cannot be verified"
)
NO_TRIAL_KEY_PROBLEM = (
    "no readable trial public key (Secret trial-status, key pubkey): the trial cannot be verified"
)
WRONG_KEY_PROBLEM = "license signature was issued for a different key"


class LicenseStatus(StrEnum):
    """A license's standing at an instant; the first three are ECK's ``LicenseStatus``."""

    VALID = "Valid"
    # ECK reports a license that is not valid *yet* as Expired too.
    EXPIRED = "Expired"
    INVALID = "Invalid"
    MALFORMED = "Malformed"


def load_public_key(data: bytes) -> rsa.RSAPublicKey:
    """An RSA public key from PEM (``BEGIN PUBLIC KEY``) or DER (PKIX) bytes; ValueError if not."""
    try:
        if data.lstrip().startswith(b"-----BEGIN"):
            key = serialization.load_pem_public_key(data)
        else:
            key = serialization.load_der_public_key(data)
    except (ValueError, UnsupportedAlgorithm) as error:
        raise ValueError(f"not a PEM or DER public key: {error}") from error
    if not isinstance(key, rsa.RSAPublicKey):
        raise ValueError("public key is not an RSA key")
    return key


def verify_signature(spec: LicenseSpec, public_key: rsa.RSAPublicKey) -> None:
    """Check the license signature against one key; raise SignatureError saying why it fails."""
    blob = decode_signature(spec.signature)
    if match_key_fingerprint(blob.key_fingerprint, public_key) is FingerprintMatch.MISMATCH:
        raise SignatureError(WRONG_KEY_PROBLEM)
    try:
        public_key.verify(
            blob.rsa_signature, signable_content_bytes(spec), padding.PKCS1v15(), hashes.SHA512()
        )
    except InvalidSignature as error:
        raise SignatureError("license signature verification failed") from error


def signature_problem(spec: LicenseSpec, *, public_keys: Sequence[rsa.RSAPublicKey]) -> str | None:
    """None if any of the keys verifies the signature, else why none does."""
    if not public_keys:
        return NO_PUBLIC_KEY_PROBLEM
    problems: list[str] = []
    for public_key in public_keys:
        try:
            verify_signature(spec, public_key)
        except SignatureError as error:
            if str(error) not in problems:
                problems.append(str(error))
        else:
            return None
    return "; ".join(problems)


def verification_keys(
    spec: LicenseSpec,
    *,
    public_keys: Sequence[rsa.RSAPublicKey],
    trial_public_key: rsa.RSAPublicKey | None,
) -> list[rsa.RSAPublicKey]:
    """The keys that may sign this license: the trial key for operator trials, else the configured keys."""
    if spec.is_eck_managed_trial():
        return [trial_public_key] if trial_public_key is not None else []
    return list(public_keys)


def license_status(
    spec: LicenseSpec,
    *,
    public_keys: Sequence[rsa.RSAPublicKey],
    now: datetime,
    trial_public_key: rsa.RSAPublicKey | None = None,
) -> LicenseStatus:
    """ECK's ``Verifier.Valid``: dates first (Expired), then the signature (Invalid)."""
    if not spec.is_valid_at(now):
        return LicenseStatus.EXPIRED
    keys = verification_keys(spec, public_keys=public_keys, trial_public_key=trial_public_key)
    if not keys or signature_problem(spec, public_keys=keys) is not None:
        return LicenseStatus.INVALID
    return LicenseStatus.VALID


@dataclass(frozen=True)
class LicenseCheck:
    """The outcome of reading one license Secret: a parsed license with its signature verdict, or malformed.

    The signature verdict does not depend on time, so `status_at` can re-judge the license at any
    later instant without repeating the cryptography.
    """

    namespace: str
    name: str
    status: LicenseStatus
    license: EnterpriseLicense | None = None
    malformed_reason: str | None = None
    signature_problem: str | None = None

    @property
    def is_malformed(self) -> bool:
        """Whether the Secret could not be read as a license (and must get a Warning event)."""
        return self.license is None

    @property
    def event_message(self) -> str | None:
        """The Warning event message for a malformed Secret (reason InvalidLicense), as ECK words it."""
        if self.malformed_reason is None:
            return None
        return f"while parsing license in {self.namespace}/{self.name}: {self.malformed_reason}"

    def status_at(self, now: datetime) -> LicenseStatus:
        """The license's status at another instant."""
        return _status_at(self.license, signature_problem=self.signature_problem, now=now)

    def problem_at(self, now: datetime) -> str | None:
        """One line saying why the license does not count at `now` (None when it is valid)."""
        if self.license is None:
            return f"malformed: {self.malformed_reason}"
        spec = self.license.license
        status = self.status_at(now)
        if status is LicenseStatus.EXPIRED:
            if now < spec.start_time():
                return f"not valid before {spec.start_time().isoformat()}"
            return f"expired at {spec.expiry_time().isoformat()}"
        if status is LicenseStatus.INVALID:
            return f"invalid signature: {self.signature_problem}"
        return None


def invalid_license_message(check: LicenseCheck, *, now: datetime) -> str | None:
    """The Warning event message (reason InvalidLicense) for a license Secret that does not count
    at ``now``; None when it is valid (pure).

    A malformed Secret keeps ECK's wording (``while parsing license in ns/name: …``). A well-formed
    one that fails verification, has expired or has not started yet is named with its problem too:
    while another license is valid the gate's reason never mentions it, and this message is then
    the only place a user learns why their license is not used.
    """
    if check.is_malformed:
        return check.event_message
    problem = check.problem_at(now)
    if problem is None:
        return None
    return f"license in {check.namespace}/{check.name} is not used: {problem}"


def license_data(secret: Mapping[str, Any]) -> dict[str, bytes]:
    """A Secret's ``data`` decoded from base64 (as the API serves it); bytes values pass through."""
    decoded: dict[str, bytes] = {}
    for key, value in (secret.get("data") or {}).items():
        if isinstance(value, bytes):
            decoded[key] = value
            continue
        try:
            decoded[key] = base64.b64decode(str(value), validate=True)
        except (binascii.Error, ValueError) as error:
            raise LicenseParseError(f"license secret key {key!r} is not valid base64") from error
    return decoded


def parse_license_data(data: Mapping[str, bytes]) -> EnterpriseLicense:
    """ECK's ``ParseEnterpriseLicense``: exactly one data key, holding a license of an accepted type."""
    if len(data) != 1:
        raise LicenseParseError("license secret needs to contain exactly one file with any name")
    (raw,) = data.values()
    return parse_license_json(raw)


def parse_license_secret(
    secret: Mapping[str, Any],
    *,
    public_keys: Sequence[bytes],
    now: datetime,
    trial_public_key: bytes | None = None,
) -> LicenseCheck:
    """Read and verify an operator-scope license Secret (the API's JSON form, data in base64).

    `public_keys` are the configured keys (PEM or DER); an unreadable one is a configuration error
    and raises ValueError. `trial_public_key` is the DER ``pubkey`` of the ``trial-status`` Secret;
    an unreadable one only makes operator trials invalid, as it is cluster state, not configuration.
    """
    meta = view(secret)
    namespace, name = meta.namespace, meta.name
    try:
        parsed = parse_license_data(license_data(secret))
    except LicenseParseError as error:
        return LicenseCheck(namespace, name, LicenseStatus.MALFORMED, malformed_reason=str(error))
    return check_license(
        parsed,
        public_keys=[load_public_key(key) for key in public_keys],
        trial_public_key=_readable_key(trial_public_key),
        now=now,
        namespace=namespace,
        name=name,
    )


def _readable_key(data: bytes | None) -> rsa.RSAPublicKey | None:
    if not data:
        return None
    try:
        return load_public_key(data)
    except ValueError:
        return None


def check_license(
    license: EnterpriseLicense,
    *,
    public_keys: Sequence[rsa.RSAPublicKey],
    now: datetime,
    trial_public_key: rsa.RSAPublicKey | None = None,
    namespace: str = "",
    name: str = "",
) -> LicenseCheck:
    """Verify a parsed license with the keys that may sign it and judge it at `now`."""
    spec = license.license
    keys = verification_keys(spec, public_keys=public_keys, trial_public_key=trial_public_key)
    if keys:
        problem = signature_problem(spec, public_keys=keys)
    else:
        problem = NO_TRIAL_KEY_PROBLEM if spec.is_eck_managed_trial() else NO_PUBLIC_KEY_PROBLEM
    status = _status_at(license, signature_problem=problem, now=now)
    return LicenseCheck(namespace, name, status, license=license, signature_problem=problem)


def _status_at(
    license: EnterpriseLicense | None, *, signature_problem: str | None, now: datetime
) -> LicenseStatus:
    if license is None:
        return LicenseStatus.MALFORMED
    if not license.license.is_valid_at(now):
        return LicenseStatus.EXPIRED
    return LicenseStatus.INVALID if signature_problem is not None else LicenseStatus.VALID


def trial_public_key_from_status(secret: Mapping[str, Any] | None) -> bytes | None:
    """The DER trial public key held by the ``trial-status`` Secret, if there is a readable one."""
    if secret is None:
        return None
    try:
        return license_data(secret).get(TRIAL_PUBKEY_KEY)
    except LicenseParseError:
        return None


def current_enterprise_license(
    checks: Iterable[LicenseCheck], *, now: datetime
) -> EnterpriseLicense | None:
    """ECK's ``CurrentEnterpriseLicense``: the best license valid at `now`, or None."""
    candidates = [check for check in checks if check.license is not None]
    candidates.sort(
        key=lambda check: _rank_key(check.license.license if check.license else LicenseSpec()),
        reverse=True,
    )
    for check in candidates:
        if check.status_at(now) is LicenseStatus.VALID:
            return check.license
    return None


def _rank_key(spec: LicenseSpec) -> tuple[int, int]:
    return spec.type_rank(), spec.expiry_date_in_millis


def enterprise_features_enabled(licenses: Iterable[LicenseCheck], *, now: datetime) -> bool:
    """ECK's ``EnterpriseFeaturesEnabled``: whether a valid enterprise license or trial exists at `now`."""
    return current_enterprise_license(licenses, now=now) is not None


@dataclass(frozen=True)
class LicenseVerdict:
    """The license gate's answer, with a one-line reason when enterprise features are off."""

    licensed: bool
    license: EnterpriseLicense | None
    reason: str
    checks: tuple[LicenseCheck, ...]


def verdict_from_checks(checks: Sequence[LicenseCheck], *, now: datetime) -> LicenseVerdict:
    """Decide from the judged license Secrets (pure)."""
    current = current_enterprise_license(checks, now=now)
    if current is not None:
        return LicenseVerdict(True, current, "", tuple(checks))
    if not checks:
        reason = "no operator license Secret found"
    else:
        problems = [
            f"{check.namespace}/{check.name}: {check.problem_at(now)}"
            for check in checks
            if check.problem_at(now) is not None
        ]
        reason = "no valid enterprise license: " + "; ".join(problems)
    return LicenseVerdict(False, None, reason, tuple(checks))
