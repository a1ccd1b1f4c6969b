"""Key generation and license signing: for ``stackflow license``, trials and tests.

Signatures follow ECK's signer byte for byte: a 13-byte random magic, the AES-ECB fingerprint of the
public key, and RSA PKCS#1 v1.5 over SHA-512 of the signable JSON, so a license issued here
verifies in ECK given the same public key, and the other way round.
"""

from __future__ import annotations

import os
import uuid
from datetime import datetime, timedelta

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from stackflow.licensing.model import (
    ECK_LICENSE_ISSUER,
    TRIAL_DURATION,
    EnterpriseLicense,
    LicenseSpec,
    OperatorLicenseType,
    to_millis,
)
from stackflow.licensing.signature import (
    MAGIC_LENGTH,
    SIGNATURE_VERSION,
    SignatureBlob,
    encrypted_key_fingerprint,
    public_key_der,
    signable_content_bytes,
)

DEFAULT_KEY_SIZE = 2048
DEFAULT_ISSUER = "Stackflow"
DEFAULT_ISSUED_TO = "Unknown"


def generate_private_key(*, key_size: int = DEFAULT_KEY_SIZE) -> rsa.RSAPrivateKey:
    """A new RSA signing key (ECK's trials use 2048 bits)."""
    return rsa.generate_private_key(public_exponent=65537, key_size=key_size)


def private_key_pem(private_key: rsa.RSAPrivateKey) -> bytes:
    """The key as unencrypted PKCS#8 PEM."""
    return private_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def public_key_pem(public_key: rsa.RSAPublicKey) -> bytes:
    """The key as ``BEGIN PUBLIC KEY`` (PKIX) PEM, the format of ``license-public-key``."""
    return public_key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def trial_status_pubkey(public_key: rsa.RSAPublicKey) -> bytes:
    """The DER bytes ECK stores under ``pubkey`` in the ``trial-status`` Secret."""
    return public_key_der(public_key)


def load_private_key(data: bytes) -> rsa.RSAPrivateKey:
    """An unencrypted RSA private key from PEM (PKCS#8 or PKCS#1); ValueError if it is not one."""
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm) as error:
        raise ValueError(f"not an unencrypted PEM private key: {error}") from error
    if not isinstance(key, rsa.RSAPrivateKey):
        raise ValueError("private key is not an RSA key")
    return key


def sign_license(
    spec: LicenseSpec,
    *,
    private_key: rsa.RSAPrivateKey,
    version: int = SIGNATURE_VERSION,
    magic: bytes | None = None,
) -> str:
    """The base64 signature of a license; pass `magic` only to get reproducible output in tests."""
    if magic is None:
        magic = os.urandom(MAGIC_LENGTH)
    rsa_signature = private_key.sign(
        signable_content_bytes(spec), padding.PKCS1v15(), hashes.SHA512()
    )
    blob = SignatureBlob(
        version=version,
        magic=magic,
        key_fingerprint=encrypted_key_fingerprint(private_key.public_key()),
        rsa_signature=rsa_signature,
    )
    return blob.encode()


def signed(license: EnterpriseLicense, *, private_key: rsa.RSAPrivateKey) -> EnterpriseLicense:
    """A copy of the license carrying a fresh signature."""
    signature = sign_license(license.license, private_key=private_key)
    return license.model_copy(
        update={"license": license.license.model_copy(update={"signature": signature})}
    )


def new_license(
    *,
    now: datetime,
    validity: timedelta,
    license_type: str = OperatorLicenseType.ENTERPRISE,
    issued_to: str = DEFAULT_ISSUED_TO,
    issuer: str = DEFAULT_ISSUER,
    max_resource_units: int = 0,
    uid: str | None = None,
) -> EnterpriseLicense:
    """An unsigned license valid from `now` for `validity`; issue and start dates are `now`."""
    if validity <= timedelta(0):
        raise ValueError("validity must be positive")
    if max_resource_units < 0:
        raise ValueError("max_resource_units must not be negative")
    start = to_millis(now)
    spec = LicenseSpec(
        uid=uid if uid is not None else str(uuid.uuid4()).upper(),
        type=license_type,
        issue_date_in_millis=start,
        start_date_in_millis=start,
        expiry_date_in_millis=to_millis(now + validity),
        max_resource_units=max_resource_units,
        issued_to=issued_to,
        issuer=issuer,
    )
    return EnterpriseLicense(license=spec)


def issue_license(
    *,
    private_key: rsa.RSAPrivateKey,
    now: datetime,
    validity: timedelta,
    license_type: str = OperatorLicenseType.ENTERPRISE,
    issued_to: str = DEFAULT_ISSUED_TO,
    issuer: str = DEFAULT_ISSUER,
    max_resource_units: int = 0,
) -> EnterpriseLicense:
    """A new signed license: what ``stackflow license issue`` prints."""
    unsigned = new_license(
        now=now,
        validity=validity,
        license_type=license_type,
        issued_to=issued_to,
        issuer=issuer,
        max_resource_units=max_resource_units,
    )
    return signed(unsigned, private_key=private_key)


def populate_trial_license(
    requested: EnterpriseLicense, *, private_key: rsa.RSAPrivateKey, now: datetime
) -> EnterpriseLicense:
    """ECK's trial activation: fill the empty fields of a trial request and sign it with the trial key.

    Issuer becomes ``Elastic k8s operator``, issued_to ``Unknown``, a random uid; unless both
    are already set, start = issue = `now` and expiry = `now` + 30 days.
    """
    spec = requested.license
    if not spec.is_trial():
        raise ValueError(f"{spec.uid} for {spec.issued_to} is not a trial license")
    updates: dict[str, object] = {
        "issuer": spec.issuer or ECK_LICENSE_ISSUER,
        "issued_to": spec.issued_to or DEFAULT_ISSUED_TO,
        "uid": spec.uid or str(uuid.uuid4()),
    }
    if spec.start_date_in_millis == 0 or spec.expiry_date_in_millis == 0:
        start = to_millis(now)
        updates |= {
            "start_date_in_millis": start,
            "issue_date_in_millis": start,
            "expiry_date_in_millis": to_millis(now + TRIAL_DURATION),
        }
    filled = EnterpriseLicense(license=spec.model_copy(update=updates))
    return signed(filled, private_key=private_key)
