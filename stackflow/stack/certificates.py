"""Self-signed CAs and leaf certificates, reused while valid and renewed shortly before expiry.

Every decision is a pure function of the current PEMs (from the Secret, when there is one) and ``now``:
a reconcile that finds a valid certificate returns it unchanged, so Secrets are not rewritten and pods
are not restarted on every pass. Only when the current material is missing, unreadable, signed by
another CA, for other names, or inside the rotation window is a new key and certificate generated.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from stackflow.stack.digests import RecentDigests, digest_of
from stackflow.stack.rsa_keys import RSA_KEYS

DEFAULT_VALIDITY = timedelta(days=365)
DEFAULT_ROTATE_BEFORE = timedelta(hours=24)
CLOCK_SKEW_ALLOWANCE = timedelta(minutes=10)
#: X.509's upper bound of a common name (RFC 5280's ``ub-common-name``); cryptography enforces it.
MAX_COMMON_NAME_LENGTH = 64


class CertificateError(ValueError):
    """A certificate could not be issued for a request; the message names the certificate."""


@dataclass(frozen=True)
class CertificateSettings:
    """How long certificates live and how long before expiry they are replaced."""

    validity: timedelta = DEFAULT_VALIDITY
    rotate_before: timedelta = DEFAULT_ROTATE_BEFORE


@dataclass(frozen=True)
class KeyPair:
    """A PEM certificate and its PEM (PKCS#8) private key."""

    cert_pem: bytes
    key_pem: bytes

    def certificate(self) -> x509.Certificate:
        """Parse the certificate."""
        return x509.load_pem_x509_certificate(self.cert_pem)


@dataclass(frozen=True)
class LeafRequest:
    """What a leaf certificate must say: its common name and subject alternative names."""

    common_name: str
    dns_names: tuple[str, ...] = ()
    ip_addresses: tuple[str, ...] = ()

    def subject_alternative_names(self) -> frozenset[str]:
        """Return the SANs as a comparable set of ``dns:…``/``ip:…`` strings."""
        return frozenset(
            [f"dns:{name}" for name in self.dns_names]
            + [f"ip:{ipaddress.ip_address(address)}" for address in self.ip_addresses]
        )


def fitted_request(request: LeafRequest) -> LeafRequest:
    """Return ``request`` with a common name X.509 accepts (pure; unchanged when it fits).

    A common name longer than 64 characters (a 63-character namespace makes
    ``<es>-es-http.<namespace>.es.local`` one) cannot be issued at all. As ECK, the long name moves
    to the SANs, where clients look for it anyway, and the common name becomes the first SAN DNS
    name that fits (the Service's short name), else the long name cut to 64 characters.
    """
    if len(request.common_name) <= MAX_COMMON_NAME_LENGTH:
        return request
    short = next(
        (name for name in request.dns_names if 0 < len(name) <= MAX_COMMON_NAME_LENGTH),
        request.common_name[:MAX_COMMON_NAME_LENGTH],
    )
    return LeafRequest(
        common_name=short,
        dns_names=unique_in_order((*request.dns_names, request.common_name)),
        ip_addresses=request.ip_addresses,
    )


def needs_renewal(
    certificate: x509.Certificate, *, now: datetime, rotate_before: timedelta
) -> bool:
    """Return whether ``certificate`` is not yet valid, expired, or expires within ``rotate_before``."""
    return (
        now < certificate.not_valid_before_utc
        or now >= certificate.not_valid_after_utc - rotate_before
    )


#: Digests of private keys that loaded with full validation (the keys themselves are not kept).
_VALIDATED_KEYS = RecentDigests(4096)


def _load_pair(
    cert_pem: bytes | None, key_pem: bytes | None
) -> tuple[x509.Certificate, object] | None:
    """Parse a certificate and key; ``None`` when either is missing, unreadable or they do not match."""
    if not cert_pem or not key_pem:
        return None
    try:
        certificate = x509.load_pem_x509_certificate(cert_pem)
        private_key = _load_private_key(key_pem)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        # TypeError: an encrypted key (a Secret edited by hand); it is replaced like garbage.
        return None
    public_bytes = private_key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    cert_public_bytes = certificate.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    if public_bytes != cert_public_bytes:
        return None
    return certificate, private_key


def _is_ca(certificate: x509.Certificate) -> bool:
    try:
        constraints = certificate.extensions.get_extension_for_class(x509.BasicConstraints)
    except x509.ExtensionNotFound:
        return False
    return constraints.value.ca


def certificate_sans(certificate: x509.Certificate) -> frozenset[str]:
    """Return a certificate's SANs as ``dns:…``/``ip:…`` strings (empty when it has none)."""
    try:
        extension = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except x509.ExtensionNotFound:
        return frozenset()
    names = [f"dns:{name}" for name in extension.value.get_values_for_type(x509.DNSName)]
    names += [f"ip:{address}" for address in extension.value.get_values_for_type(x509.IPAddress)]
    return frozenset(names)


def _new_key() -> rsa.RSAPrivateKey:
    # Ready made when the operator's pool has one (``stackflow.stack.rsa_keys``).
    return RSA_KEYS.take()


def _key_pem(key: rsa.RSAPrivateKey) -> bytes:
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    # A key this process generated is valid by construction: its next load skips the check.
    _VALIDATED_KEYS.add(digest_of(pem))
    return pem


def _load_private_key(key_pem: bytes) -> PrivateKeyTypes:
    """The private key of ``key_pem``, validated the first time these bytes are seen (validating
    an RSA key costs about 40 ms, and every reconcile loads the same keys), trusted after that.
    Raises what ``load_pem_private_key`` raises."""
    key_digest = digest_of(key_pem)
    key = serialization.load_pem_private_key(
        key_pem, password=None, unsafe_skip_rsa_key_validation=key_digest in _VALIDATED_KEYS
    )
    _VALIDATED_KEYS.add(key_digest)
    return key


def _cert_pem(certificate: x509.Certificate) -> bytes:
    return certificate.public_bytes(serialization.Encoding.PEM)


def create_ca(
    *, common_name: str, organizational_unit: str, now: datetime, settings: CertificateSettings
) -> KeyPair:
    """Generate a new self-signed CA."""
    key = _new_key()
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
            x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, organizational_unit),
        ]
    )
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW_ALLOWANCE)
        .not_valid_after(now + settings.validity)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return KeyPair(cert_pem=_cert_pem(certificate), key_pem=_key_pem(key))


def reconcile_ca(
    *,
    current: KeyPair | None,
    common_name: str,
    organizational_unit: str,
    now: datetime,
    settings: CertificateSettings,
) -> KeyPair:
    """Return ``current`` when it is a usable CA not due for renewal, else a new CA."""
    if current is not None:
        loaded = _load_pair(current.cert_pem, current.key_pem)
        if (
            loaded is not None
            and _is_ca(loaded[0])
            and not needs_renewal(loaded[0], now=now, rotate_before=settings.rotate_before)
        ):
            return current
    return create_ca(
        common_name=common_name, organizational_unit=organizational_unit, now=now, settings=settings
    )


def _issued_by(certificate: x509.Certificate, ca: x509.Certificate) -> bool:
    try:
        certificate.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def is_reusable_leaf(
    current: KeyPair,
    *,
    ca: KeyPair,
    request: LeafRequest,
    now: datetime,
    settings: CertificateSettings,
) -> bool:
    """Return whether ``current`` is signed by ``ca``, names exactly ``request``'s SANs and is fresh."""
    # The SANs compared are those a new certificate would carry.
    request = fitted_request(request)
    loaded = _load_pair(current.cert_pem, current.key_pem)
    if loaded is None:
        return False
    certificate = loaded[0]
    return (
        _issued_by(certificate, ca.certificate())
        and certificate_sans(certificate) == request.subject_alternative_names()
        and not needs_renewal(certificate, now=now, rotate_before=settings.rotate_before)
    )


def _alternative_names(request: LeafRequest) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = [x509.DNSName(name) for name in request.dns_names]
    names += [x509.IPAddress(ipaddress.ip_address(address)) for address in request.ip_addresses]
    return names


def issue_leaf(
    *, ca: KeyPair, request: LeafRequest, now: datetime, settings: CertificateSettings
) -> KeyPair:
    """Generate a new key and a certificate for ``request`` signed by ``ca``.

    Raise :class:`CertificateError` naming the certificate when its names cannot be encoded (a
    user's SAN that is not a DNS name or an IP address), rather than cryptography's bare message.
    """
    request = fitted_request(request)
    try:
        return _issue_leaf(ca=ca, request=request, now=now, settings=settings)
    except (ValueError, TypeError, UnsupportedAlgorithm) as error:
        # TypeError: a user's CA key that is encrypted (no password is ever given).
        raise CertificateError(
            f"cannot issue the certificate for {request.common_name!r}: {error}"
        ) from error


def _issue_leaf(
    *, ca: KeyPair, request: LeafRequest, now: datetime, settings: CertificateSettings
) -> KeyPair:
    ca_key = _load_private_key(ca.key_pem)
    if not isinstance(ca_key, rsa.RSAPrivateKey):
        raise ValueError("the CA key must be an RSA key")
    ca_certificate = ca.certificate()
    key = _new_key()
    not_after = min(now + settings.validity, ca_certificate.not_valid_after_utc)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, request.common_name)]))
        .issuer_name(ca_certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW_ALLOWANCE)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
    )
    alternative_names = _alternative_names(request)
    if alternative_names:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(alternative_names), critical=False
        )
    certificate = builder.sign(ca_key, hashes.SHA256())
    return KeyPair(cert_pem=_cert_pem(certificate), key_pem=_key_pem(key))


def reconcile_leaf(
    *,
    current: KeyPair | None,
    ca: KeyPair,
    request: LeafRequest,
    now: datetime,
    settings: CertificateSettings,
) -> KeyPair:
    """Return ``current`` when reusable (see :func:`is_reusable_leaf`), else a newly issued leaf."""
    if current is not None and is_reusable_leaf(
        current, ca=ca, request=request, now=now, settings=settings
    ):
        return current
    return issue_leaf(ca=ca, request=request, now=now, settings=settings)


def service_dns_names(service_name: str, namespace: str) -> tuple[str, ...]:
    """Return the DNS names a Service answers to inside the cluster."""
    return (
        service_name,
        f"{service_name}.{namespace}",
        f"{service_name}.{namespace}.svc",
        f"{service_name}.{namespace}.svc.cluster.local",
    )


def unique_in_order(values: Iterable[str]) -> tuple[str, ...]:
    """Return ``values`` without duplicates, keeping the first occurrence's position."""
    return tuple(dict.fromkeys(values))
