"""Operator licenses: parsing, signature layout, validity rules, trials and the enterprise decision."""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from stackflow.licensing import (
    EnterpriseLicense,
    LicenseParseError,
    LicenseStatus,
    current_enterprise_license,
    enterprise_features_enabled,
    parse_license_json,
    parse_license_secret,
    signable_content_bytes,
    trial_public_key_from_status,
    verdict_from_checks,
)
from stackflow.licensing.issue import (
    generate_private_key,
    new_license,
    populate_trial_license,
    public_key_pem,
    sign_license,
    signed,
    trial_status_pubkey,
)
from stackflow.licensing.model import (
    ECK_LICENSE_ISSUER,
    TRIAL_DURATION,
    LicenseSpec,
    OperatorLicenseType,
    to_millis,
)
from stackflow.licensing.signature import (
    SignatureBlob,
    SignatureError,
    decode_signature,
    encrypted_key_fingerprint,
    sha256_key_fingerprint,
)

START = datetime(2026, 3, 1, tzinfo=UTC)
ONE_YEAR = timedelta(days=365)
OPERATOR_NS = "elastic-system"


@dataclass(frozen=True)
class Keys:
    """The key pairs the tests sign with."""

    operator: rsa.RSAPrivateKey
    other: rsa.RSAPrivateKey
    trial: rsa.RSAPrivateKey

    @property
    def operator_pem(self) -> bytes:
        """The configured public key, as the operator reads it from its PEM file."""
        return public_key_pem(self.operator.public_key())

    @property
    def trial_der(self) -> bytes:
        """The trial public key, as the trial-status Secret holds it."""
        return trial_status_pubkey(self.trial.public_key())


@pytest.fixture(scope="module")
def keys() -> Keys:
    """Three independent key pairs, made once for the module (key generation is slow)."""
    return Keys(generate_private_key(), generate_private_key(), generate_private_key())


def enterprise(
    signer: rsa.RSAPrivateKey, *, license_type: str = "enterprise", issuer: str = "Elastic"
) -> EnterpriseLicense:
    """A signed license valid for a year from START."""
    unsigned = new_license(
        now=START,
        validity=ONE_YEAR,
        license_type=license_type,
        issued_to="ACME & Sons <ops>",
        issuer=issuer,
        max_resource_units=20,
    )
    return signed(unsigned, private_key=signer)


def with_fields(license: EnterpriseLicense, **fields: Any) -> EnterpriseLicense:
    """The license with some fields changed after signing."""
    return EnterpriseLicense(license=license.license.model_copy(update=fields))


def secret(
    *documents: bytes | str, name: str = "eck-license", namespace: str = OPERATOR_NS
) -> dict[str, Any]:
    """A license Secret in the API's JSON form: one data key per document, base64-encoded."""
    data = {
        f"license{index or ''}": base64.b64encode(
            doc.encode() if isinstance(doc, str) else doc
        ).decode()
        for index, doc in enumerate(documents)
    }
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"license.k8s.elastic.co/scope": "operator"},
        },
        "data": data,
    }


def check_at(
    license: EnterpriseLicense, keys: Keys, now: datetime, *, trial_key: bool = True
) -> LicenseStatus:
    """The status of the license Secret at `now`, with the operator key configured."""
    result = parse_license_secret(
        secret(license.to_json()),
        public_keys=[keys.operator_pem],
        now=now,
        trial_public_key=keys.trial_der if trial_key else None,
    )
    return result.status


def sha256_signed(license: EnterpriseLicense, signer: rsa.RSAPrivateKey) -> EnterpriseLicense:
    """Signed with the v4+ fingerprint format (SHA-256 of the DER key), as Elasticsearch signs."""
    spec = license.license
    rsa_signature = signer.sign(signable_content_bytes(spec), padding.PKCS1v15(), hashes.SHA512())
    blob = SignatureBlob(5, b"m" * 13, sha256_key_fingerprint(signer.public_key()), rsa_signature)
    return with_fields(license, signature=blob.encode())


def unparseable_fingerprint(license: EnterpriseLicense) -> EnterpriseLicense:
    """The same RSA signature behind a fingerprint in no known format."""
    blob = decode_signature(license.license.signature)
    odd = SignatureBlob(blob.version, blob.magic, b"not-a-fingerprint", blob.rsa_signature)
    return with_fields(license, signature=odd.encode())


VALIDITY_CASES: list[tuple[str, Callable[[Keys], EnterpriseLicense], datetime, LicenseStatus]] = [
    ("valid", lambda k: enterprise(k.operator), START + timedelta(days=1), LicenseStatus.VALID),
    ("at start instant", lambda k: enterprise(k.operator), START, LicenseStatus.VALID),
    (
        "last microsecond before expiry",
        lambda k: enterprise(k.operator),
        START + ONE_YEAR - timedelta(microseconds=1),
        LicenseStatus.VALID,
    ),
    (
        "at expiry instant",
        lambda k: enterprise(k.operator),
        START + ONE_YEAR,
        LicenseStatus.EXPIRED,
    ),
    (
        "not yet valid",
        lambda k: enterprise(k.operator),
        START - timedelta(seconds=1),
        LicenseStatus.EXPIRED,
    ),
    (
        "expired and badly signed: dates are judged first",
        lambda k: enterprise(k.other),
        START + 2 * ONE_YEAR,
        LicenseStatus.EXPIRED,
    ),
    ("signed by another key", lambda k: enterprise(k.other), START, LicenseStatus.INVALID),
    (
        "tampered issued_to",
        lambda k: with_fields(enterprise(k.operator), issued_to="Mallory"),
        START,
        LicenseStatus.INVALID,
    ),
    (
        "tampered max_resource_units",
        lambda k: with_fields(enterprise(k.operator), max_resource_units=2000),
        START,
        LicenseStatus.INVALID,
    ),
    (
        "tampered expiry",
        lambda k: with_fields(
            enterprise(k.operator),
            expiry_date_in_millis=to_millis(START + 10 * ONE_YEAR),
        ),
        START,
        LicenseStatus.INVALID,
    ),
    (
        "signature not base64",
        lambda k: with_fields(enterprise(k.operator), signature="%%%not base64%%%"),
        START,
        LicenseStatus.INVALID,
    ),
    (
        "empty signature",
        lambda k: with_fields(enterprise(k.operator), signature=""),
        START,
        LicenseStatus.INVALID,
    ),
    (
        "unsigned fields outside the signable JSON may change",
        lambda k: with_fields(enterprise(k.operator), status="active"),
        START,
        LicenseStatus.VALID,
    ),
    (
        "SHA-256 fingerprint, right key",
        lambda k: sha256_signed(enterprise(k.operator), k.operator),
        START,
        LicenseStatus.VALID,
    ),
    (
        "SHA-256 fingerprint of another key",
        lambda k: sha256_signed(enterprise(k.operator), k.other),
        START,
        LicenseStatus.INVALID,
    ),
    (
        "unparseable fingerprint falls through to the RSA check",
        lambda k: unparseable_fingerprint(enterprise(k.operator)),
        START,
        LicenseStatus.VALID,
    ),
    (
        "operator trial signed with the trial key",
        lambda k: enterprise(k.trial, license_type="enterprise_trial", issuer=ECK_LICENSE_ISSUER),
        START,
        LicenseStatus.VALID,
    ),
    (
        "operator trial with an empty issuer is checked with the trial key",
        lambda k: enterprise(k.trial, license_type="enterprise_trial", issuer=""),
        START,
        LicenseStatus.VALID,
    ),
    (
        "operator trial signed with the operator key",
        lambda k: enterprise(
            k.operator, license_type="enterprise_trial", issuer=ECK_LICENSE_ISSUER
        ),
        START,
        LicenseStatus.INVALID,
    ),
    (
        "legacy trial type signed with the trial key",
        lambda k: enterprise(k.trial, license_type="enterprise-trial", issuer=ECK_LICENSE_ISSUER),
        START,
        LicenseStatus.VALID,
    ),
    (
        "trial from another issuer is checked with the operator key",
        lambda k: enterprise(k.operator, license_type="enterprise_trial", issuer="Elastic"),
        START,
        LicenseStatus.VALID,
    ),
    (
        "trial from another issuer signed with the trial key",
        lambda k: enterprise(k.trial, license_type="enterprise_trial", issuer="Elastic"),
        START,
        LicenseStatus.INVALID,
    ),
]


@pytest.mark.parametrize(
    ("make_license", "now", "expected"),
    [case[1:] for case in VALIDITY_CASES],
    ids=[case[0] for case in VALIDITY_CASES],
)
def test_license_validity(
    keys: Keys,
    make_license: Callable[[Keys], EnterpriseLicense],
    now: datetime,
    expected: LicenseStatus,
) -> None:
    """Each license is judged Valid, Expired (outside its dates) or Invalid (signature)."""
    assert check_at(make_license(keys), keys, now) is expected


def test_operator_trial_without_trial_key_is_invalid(keys: Keys) -> None:
    """Without the trial-status key an operator trial cannot be verified."""
    trial = enterprise(keys.trial, license_type="enterprise_trial", issuer=ECK_LICENSE_ISSUER)
    assert check_at(trial, keys, START, trial_key=False) is LicenseStatus.INVALID


def test_no_configured_key_means_no_valid_enterprise_license(keys: Keys) -> None:
    """As ECK's development builds: with no public key, only a trial can be valid."""
    result = parse_license_secret(
        secret(enterprise(keys.operator).to_json()), public_keys=[], now=START
    )
    assert result.status is LicenseStatus.INVALID
    assert result.problem_at(START) == (
        "invalid signature: no license public key is configured: "
        "enterprise licenses cannot be verified"
    )


def test_any_configured_key_may_verify(keys: Keys) -> None:
    """With several configured keys, a license signed by any one of them is valid."""
    result = parse_license_secret(
        secret(enterprise(keys.other).to_json()),
        public_keys=[keys.operator_pem, public_key_pem(keys.other.public_key())],
        now=START,
    )
    assert result.status is LicenseStatus.VALID


def test_wrong_key_is_named_in_the_problem(keys: Keys) -> None:
    """A license from another key says so, rather than a bare verification failure."""
    result = parse_license_secret(
        secret(enterprise(keys.other).to_json()), public_keys=[keys.operator_pem], now=START
    )
    assert result.problem_at(START) == (
        "invalid signature: license signature was issued for a different key"
    )


@pytest.mark.parametrize(
    ("now", "problem"),
    [
        (START - timedelta(days=1), "not valid before 2026-03-01T00:00:00+00:00"),
        (START + ONE_YEAR, "expired at 2027-03-01T00:00:00+00:00"),
        (START, None),
    ],
)
def test_problem_says_which_date_rule_failed(
    keys: Keys, now: datetime, problem: str | None
) -> None:
    """The human-readable problem distinguishes not-yet-valid from expired."""
    result = parse_license_secret(
        secret(enterprise(keys.operator).to_json()), public_keys=[keys.operator_pem], now=START
    )
    assert result.problem_at(now) == problem


def test_parse_requires_timezone_aware_now(keys: Keys) -> None:
    """A naive `now` is a programming error, not a silently wrong verdict."""
    with pytest.raises(ValueError, match="timezone-aware"):
        parse_license_secret(
            secret(enterprise(keys.operator).to_json()),
            public_keys=[keys.operator_pem],
            now=datetime(2026, 3, 1),  # naive on purpose
        )


def test_unreadable_configured_key_raises(keys: Keys) -> None:
    """A configured key that cannot be read is a configuration error."""
    with pytest.raises(ValueError, match="public key"):
        parse_license_secret(
            secret(enterprise(keys.operator).to_json()), public_keys=[b"garbage"], now=START
        )


NOT_ENTERPRISE = (
    "[platinum] license [U1] is not an enterprise license. Only orchestration licenses of type "
    "enterprise or enterprise_trial are supported"
)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ({}, "license secret needs to contain exactly one file with any name"),
        (
            {"a": b"{}", "b": b"{}"},
            "license secret needs to contain exactly one file with any name",
        ),
        ({"license": "!!!"}, "license secret key 'license' is not valid base64"),
        ({"license": b"not json"}, "license cannot be unmarshalled: Invalid JSON"),
        ({"license": b"[]"}, "license cannot be unmarshalled: Input should be an object"),
        (
            {"license": b'{"license":{"type":"enterprise","max_instances":"3"}}'},
            "license cannot be unmarshalled: license.max_instances",
        ),
        ({"license": b'{"license":{"type":"platinum","uid":"U1"}}'}, NOT_ENTERPRISE),
        ({"license": b'{"license":{"uid":"U1"}}'}, "[] license [U1] is not an enterprise license"),
    ],
    ids=[
        "no key",
        "two keys",
        "not base64",
        "not json",
        "not an object",
        "string for a number",
        "cluster license type",
        "no type",
    ],
)
def test_malformed_secrets(keys: Keys, data: dict[str, Any], reason: str) -> None:
    """Unreadable Secrets are malformed, with ECK's parse error for the Warning event."""
    encoded = {
        key: base64.b64encode(value).decode() if isinstance(value, bytes) else value
        for key, value in data.items()
    }
    license_secret = secret() | {"data": encoded}
    result = parse_license_secret(license_secret, public_keys=[keys.operator_pem], now=START)
    assert result.status is LicenseStatus.MALFORMED
    assert result.is_malformed
    assert result.malformed_reason is not None
    assert result.malformed_reason.startswith(reason)
    assert result.problem_at(START) == f"malformed: {result.malformed_reason}"
    assert result.event_message == (
        f"while parsing license in {OPERATOR_NS}/eck-license: {result.malformed_reason}"
    )


def test_go_json_leniency(keys: Keys) -> None:
    """As Go: null means absent, unknown keys are ignored (ECK writes cluster_licenses: null)."""
    document = json.loads(enterprise(keys.operator).to_json())
    document["license"] |= {"cluster_licenses": None, "status": None, "Version": 0, "x": [1]}
    result = parse_license_secret(
        secret(json.dumps(document)), public_keys=[keys.operator_pem], now=START
    )
    assert result.status is LicenseStatus.VALID


def test_document_round_trip_keeps_cluster_licenses() -> None:
    """A document survives parse → to_json → parse, cluster licenses included, zero max omitted."""
    document = {
        "license": {
            "uid": "U1",
            "type": "enterprise",
            "issue_date_in_millis": 1,
            "start_date_in_millis": 1,
            "expiry_date_in_millis": 2,
            "max_resource_units": 5,
            "issued_to": "org",
            "issuer": "issuer",
            "signature": "sig",
            "cluster_licenses": [
                {"license": {"uid": "C1", "type": "platinum", "max_nodes": 100, "signature": "s"}}
            ],
        }
    }
    parsed = parse_license_json(json.dumps(document))
    rendered = json.loads(parsed.to_json())
    assert "max_instances" not in rendered["license"]
    assert rendered["license"]["cluster_licenses"][0]["license"]["max_nodes"] == 100
    assert parse_license_json(parsed.to_json()) == parsed


def test_signable_json_is_ecks() -> None:
    """Key order, zero fields omitted, no HTML escaping, Go's escapes, no whitespace."""
    spec = LicenseSpec(
        uid="U1",
        type="enterprise",
        issue_date_in_millis=1606262400000,
        start_date_in_millis=0,
        expiry_date_in_millis=1640995199999,
        max_instances=0,
        max_resource_units=100,
        issued_to='ECK & "test" <>\n\u2028é',
        issuer="i",
        signature="ignored",
        status="ignored",
    )
    assert signable_content_bytes(spec) == (
        b'{"uid":"U1","type":"enterprise","issue_date_in_millis":1606262400000,'
        b'"expiry_date_in_millis":1640995199999,"max_resource_units":100,'
        b'"issued_to":"ECK & \\"test\\" <>\\n\\u2028\xc3\xa9","issuer":"i"}'
    )


def test_signature_layout(keys: Keys) -> None:
    """version | magic | AES fingerprint of the key | RSA signature, deterministic given the magic."""
    spec = enterprise(keys.operator).license
    first = sign_license(spec, private_key=keys.operator, magic=b"M" * 13)
    again = sign_license(spec, private_key=keys.operator, magic=b"M" * 13)
    assert first == again
    raw = base64.b64decode(first)
    assert struct.unpack(">II", raw[:8]) == (4, 13)
    blob = decode_signature(first)
    assert blob.magic == b"M" * 13
    assert blob.key_fingerprint == encrypted_key_fingerprint(keys.operator.public_key())
    keys.operator.public_key().verify(
        blob.rsa_signature, signable_content_bytes(spec), padding.PKCS1v15(), hashes.SHA512()
    )


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"", "failed to read version"),
        (struct.pack(">I", 4), "failed to read magic length"),
        (struct.pack(">II", 4, 0xFFFFFFFF) + b"x" * 20, "magic exceeds max length"),
        (struct.pack(">II", 4, 1) + b"m" + struct.pack(">I", 999), "hash exceeds max length"),
        (
            struct.pack(">II", 4, 1) + b"m" + struct.pack(">II", 0, 50) + b"s",
            "signed content exceeds max length",
        ),
    ],
)
def test_malformed_signature_blobs(raw: bytes, message: str) -> None:
    """Lengths are never trusted beyond the data."""
    with pytest.raises(SignatureError, match=message):
        decode_signature(base64.b64encode(raw).decode())


def test_populate_trial_license(keys: Keys) -> None:
    """ECK's trial activation: operator issuer, Unknown licensee, 30 days from now, signed."""
    request = EnterpriseLicense(license=LicenseSpec(type="enterprise_trial"))
    trial = populate_trial_license(request, private_key=keys.trial, now=START)
    spec = trial.license
    assert (spec.issuer, spec.issued_to) == (ECK_LICENSE_ISSUER, "Unknown")
    assert spec.uid
    assert spec.start_time() == START
    assert spec.issue_date_in_millis == spec.start_date_in_millis
    assert spec.expiry_time() == START + TRIAL_DURATION
    assert check_at(trial, keys, START + TRIAL_DURATION - timedelta(seconds=1)) is (
        LicenseStatus.VALID
    )
    assert check_at(trial, keys, START + TRIAL_DURATION) is LicenseStatus.EXPIRED


def test_populate_refuses_non_trial(keys: Keys) -> None:
    """Only trial requests are filled in."""
    with pytest.raises(ValueError, match="not a trial license"):
        populate_trial_license(
            EnterpriseLicense(license=LicenseSpec(type="enterprise", uid="U1")),
            private_key=keys.trial,
            now=START,
        )


def test_trial_public_key_from_status(keys: Keys) -> None:
    """The trial key is read from the trial-status Secret's pubkey (DER, base64 in the API)."""
    status = {
        "metadata": {"name": "trial-status", "namespace": OPERATOR_NS},
        "data": {"pubkey": base64.b64encode(keys.trial_der).decode()},
    }
    assert trial_public_key_from_status(status) == keys.trial_der
    assert trial_public_key_from_status(None) is None
    assert trial_public_key_from_status({"data": {"pubkey": "!!"}}) is None


def checks_for(keys: Keys, *licenses: EnterpriseLicense | str) -> list[Any]:
    """One LicenseCheck per license Secret (strings are raw, possibly malformed, documents)."""
    return [
        parse_license_secret(
            secret(lic if isinstance(lic, str) else lic.to_json(), name=f"license-{index}"),
            public_keys=[keys.operator_pem],
            now=START,
            trial_public_key=keys.trial_der,
        )
        for index, lic in enumerate(licenses)
    ]


def dated(
    signer: rsa.RSAPrivateKey,
    *,
    days: int,
    license_type: str = "enterprise",
    issuer: str = "Elastic",
    start: datetime = START,
) -> EnterpriseLicense:
    """A signed license from `start` for `days`."""
    unsigned = new_license(
        now=start, validity=timedelta(days=days), license_type=license_type, issuer=issuer
    )
    return signed(unsigned, private_key=signer)


def test_current_license_prefers_enterprise_over_a_longer_trial(keys: Keys) -> None:
    """Type rank first: enterprise beats a trial that expires later."""
    trial = dated(keys.trial, days=300, license_type="enterprise_trial", issuer=ECK_LICENSE_ISSUER)
    short_enterprise = dated(keys.operator, days=10)
    current = current_enterprise_license(checks_for(keys, trial, short_enterprise), now=START)
    assert current == short_enterprise


def test_current_license_prefers_latest_expiry_and_skips_invalid(keys: Keys) -> None:
    """Within a type the latest expiry wins, unless it does not verify."""
    forged = dated(keys.other, days=900)
    long_valid = dated(keys.operator, days=400)
    short_valid = dated(keys.operator, days=100)
    checks = checks_for(keys, short_valid, forged, long_valid, "not json")
    assert current_enterprise_license(checks, now=START) == long_valid


def test_enterprise_features_follow_the_clock(keys: Keys) -> None:
    """The same checks are re-judged at each `now`: on while a license is valid, off after."""
    checks = checks_for(
        keys,
        dated(keys.operator, days=10),
        dated(keys.trial, days=30, license_type="enterprise_trial", issuer=ECK_LICENSE_ISSUER),
    )
    assert enterprise_features_enabled(checks, now=START)
    assert enterprise_features_enabled(checks, now=START + timedelta(days=20))
    assert not enterprise_features_enabled(checks, now=START + timedelta(days=30))
    assert not enterprise_features_enabled(checks, now=START - timedelta(seconds=1))


@pytest.mark.parametrize(
    "licenses",
    [
        [],
        ["{}"],
        ["not json"],
    ],
    ids=["no license", "typeless", "malformed only"],
)
def test_enterprise_features_off_without_a_valid_license(keys: Keys, licenses: list[str]) -> None:
    """No valid license, no enterprise features."""
    assert not enterprise_features_enabled(checks_for(keys, *licenses), now=START)


def test_enterprise_features_off_with_forged_and_expired(keys: Keys) -> None:
    """Forged and expired licenses do not enable anything."""
    expired = dated(keys.operator, days=10, start=START - timedelta(days=20))
    checks = checks_for(keys, dated(keys.other, days=10), expired)
    assert not enterprise_features_enabled(checks, now=START)


def test_parse_license_json_rejects_wrong_type() -> None:
    """The document parser reports ECK's wrong-type message."""
    with pytest.raises(LicenseParseError, match="not an enterprise license"):
        parse_license_json('{"license": {"type": "gold", "uid": "x"}}')


def test_license_type_values() -> None:
    """The type strings are ECK's."""
    assert [t.value for t in OperatorLicenseType] == [
        "basic",
        "enterprise",
        "enterprise_trial",
        "enterprise-trial",
    ]


def test_the_verdict_says_why_enterprise_features_are_off(keys: Keys) -> None:
    """The license gate's answer: the current license when one is valid, else a one-line reason
    naming every license Secret that does not count, or that there is none."""
    valid = dated(keys.operator, days=30)
    forged = dated(keys.other, days=30)

    licensed = verdict_from_checks(checks_for(keys, forged, valid), now=START)
    assert (licensed.licensed, licensed.license, licensed.reason) == (True, valid, "")

    unlicensed = verdict_from_checks(checks_for(keys, forged), now=START)
    assert not unlicensed.licensed
    assert unlicensed.reason == (
        "no valid enterprise license: elastic-system/license-0: invalid signature:"
        " license signature was issued for a different key"
    )

    nothing = verdict_from_checks([], now=START)
    assert (nothing.licensed, nothing.reason) == (False, "no operator license Secret found")
