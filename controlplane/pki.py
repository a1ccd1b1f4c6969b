"""The control plane's certificates: one CA, the API server's serving certificate, a client
certificate per component, and the service-account signing key."""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

#: The names the API server answers to: loopback, and the in-cluster names a ServiceAccount
#: token's audience or a kubeconfig may carry (they resolve nowhere here; nothing dials them).
SERVING_NAMES = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)
#: The first address of the Service range: the ``kubernetes`` Service's ClusterIP, which a
#: client inside a cluster would dial. Only named in the certificate; never dialled.
SERVICE_RANGE = "10.96.0.0/16"
KUBERNETES_SERVICE_IP = "10.96.0.1"
VALIDITY = datetime.timedelta(days=2)


@dataclass(frozen=True)
class Credential:
    """A certificate and its private key, as PEM files."""

    cert: Path
    key: Path


@dataclass(frozen=True)
class Pki:
    """Every file the components are started with."""

    ca: Credential
    serving: Credential
    admin: Credential
    controller_manager: Credential
    scheduler: Credential
    service_account_key: Path
    service_account_public_key: Path


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def write_private(path: Path, data: bytes) -> None:
    """Write a file only its owner can read, from its creation on (a key, a token): never a
    moment with the umask's wider mode, and an older, more open file is narrowed too."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        os.fchmod(handle.fileno(), 0o600)
        handle.write(data)


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> None:
    write_private(
        path,
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )


def _name(common_name: str, organization: str | None = None) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attributes)


def _issue(
    directory: Path,
    stem: str,
    subject: x509.Name,
    *,
    ca: tuple[x509.Certificate, ec.EllipticCurvePrivateKey] | None,
    usage: x509.ObjectIdentifier | None = None,
    names: tuple[str, ...] = (),
    addresses: tuple[str, ...] = (),
) -> tuple[Credential, x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = _key()
    now = datetime.datetime.now(datetime.UTC)
    issuer_name, signing_key = (ca[0].subject, ca[1]) if ca else (subject, key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=ca is None, path_length=None), critical=True)
    )
    if ca is None:
        builder = builder.add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    if usage is not None:
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if names or addresses:
        alternatives: list[x509.GeneralName] = [x509.DNSName(name) for name in names]
        alternatives += [x509.IPAddress(ipaddress.ip_address(a)) for a in addresses]
        builder = builder.add_extension(x509.SubjectAlternativeName(alternatives), critical=False)
    certificate = builder.sign(signing_key, hashes.SHA256())
    credential = Credential(cert=directory / f"{stem}.crt", key=directory / f"{stem}.key")
    credential.cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    _write_key(credential.key, key)
    return credential, certificate, key


def generate(directory: Path) -> Pki:
    """Write a fresh PKI into ``directory`` (created if missing)."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_credential, ca_cert, ca_key = _issue(
        directory, "ca", _name("stackflow-controlplane-ca"), ca=None
    )
    authority = (ca_cert, ca_key)
    serving, _, _ = _issue(
        directory,
        "apiserver",
        _name("kube-apiserver"),
        ca=authority,
        usage=ExtendedKeyUsageOID.SERVER_AUTH,
        names=SERVING_NAMES,
        addresses=("127.0.0.1", KUBERNETES_SERVICE_IP),
    )

    def client(stem: str, user: str, group: str | None = None) -> Credential:
        credential, _, _ = _issue(
            directory, stem, _name(user, group), ca=authority, usage=ExtendedKeyUsageOID.CLIENT_AUTH
        )
        return credential

    signing = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    service_account_key = directory / "service-account.key"
    _write_key(service_account_key, signing)
    service_account_public_key = directory / "service-account.pub"
    service_account_public_key.write_bytes(
        signing.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return Pki(
        ca=ca_credential,
        serving=serving,
        admin=client("admin", "stackflow-admin", "system:masters"),
        controller_manager=client("controller-manager", "system:kube-controller-manager"),
        scheduler=client("scheduler", "system:kube-scheduler"),
        service_account_key=service_account_key,
        service_account_public_key=service_account_public_key,
    )
