"""Certificates are reused while valid and renewed when near expiry, for other names or another CA."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from cryptography.x509.oid import NameOID

from stackflow.stack.certificates import (
    MAX_COMMON_NAME_LENGTH,
    CertificateError,
    CertificateSettings,
    KeyPair,
    LeafRequest,
    certificate_sans,
    create_ca,
    fitted_request,
    needs_renewal,
    reconcile_ca,
    reconcile_leaf,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)
SETTINGS = CertificateSettings(validity=timedelta(days=30), rotate_before=timedelta(days=1))
REQUEST = LeafRequest(
    common_name="es-http",
    dns_names=("es-es-http", "es-es-http.ns.svc"),
    ip_addresses=("127.0.0.1",),
)


@pytest.fixture(scope="module")
def ca() -> KeyPair:
    return create_ca(common_name="es-http", organizational_unit="es", now=NOW, settings=SETTINGS)


@pytest.fixture(scope="module")
def leaf(ca: KeyPair) -> KeyPair:
    return reconcile_leaf(current=None, ca=ca, request=REQUEST, now=NOW, settings=SETTINGS)


def test_leaf_carries_the_requested_sans(leaf: KeyPair) -> None:
    assert certificate_sans(leaf.certificate()) == {
        "dns:es-es-http",
        "dns:es-es-http.ns.svc",
        "ip:127.0.0.1",
    }


@pytest.mark.parametrize("later", [timedelta(0), timedelta(days=10), timedelta(days=28)])
def test_valid_leaf_is_reused(ca: KeyPair, leaf: KeyPair, later: timedelta) -> None:
    again = reconcile_leaf(current=leaf, ca=ca, request=REQUEST, now=NOW + later, settings=SETTINGS)

    assert again == leaf


def test_leaf_near_expiry_is_renewed(ca: KeyPair, leaf: KeyPair) -> None:
    renewed = reconcile_leaf(
        current=leaf,
        ca=ca,
        request=REQUEST,
        now=NOW + timedelta(days=29, hours=1),
        settings=SETTINGS,
    )

    assert renewed.cert_pem != leaf.cert_pem
    assert certificate_sans(renewed.certificate()) == REQUEST.subject_alternative_names()


def test_leaf_for_other_names_is_reissued(ca: KeyPair, leaf: KeyPair) -> None:
    request = LeafRequest(common_name="es-http", dns_names=("other",))

    reissued = reconcile_leaf(current=leaf, ca=ca, request=request, now=NOW, settings=SETTINGS)

    assert certificate_sans(reissued.certificate()) == {"dns:other"}


def test_leaf_signed_by_another_ca_is_reissued(leaf: KeyPair) -> None:
    other_ca = create_ca(common_name="other", organizational_unit="x", now=NOW, settings=SETTINGS)

    reissued = reconcile_leaf(
        current=leaf, ca=other_ca, request=REQUEST, now=NOW, settings=SETTINGS
    )

    assert reissued.cert_pem != leaf.cert_pem
    reissued.certificate().verify_directly_issued_by(other_ca.certificate())


@pytest.mark.parametrize(
    "broken",
    [
        KeyPair(cert_pem=b"garbage", key_pem=b"garbage"),
        KeyPair(cert_pem=b"", key_pem=b""),
    ],
)
def test_unreadable_leaf_is_reissued(ca: KeyPair, broken: KeyPair) -> None:
    reissued = reconcile_leaf(current=broken, ca=ca, request=REQUEST, now=NOW, settings=SETTINGS)

    reissued.certificate().verify_directly_issued_by(ca.certificate())


def test_leaf_with_a_key_of_another_certificate_is_reissued(ca: KeyPair, leaf: KeyPair) -> None:
    other = reconcile_leaf(current=None, ca=ca, request=REQUEST, now=NOW, settings=SETTINGS)
    mismatched = KeyPair(cert_pem=leaf.cert_pem, key_pem=other.key_pem)

    reissued = reconcile_leaf(
        current=mismatched, ca=ca, request=REQUEST, now=NOW, settings=SETTINGS
    )

    assert reissued.cert_pem not in (leaf.cert_pem, other.cert_pem)


@pytest.mark.parametrize(
    ("later", "reused"),
    [(timedelta(days=1), True), (timedelta(days=29, hours=12), False), (timedelta(days=40), False)],
)
def test_ca_reuse_and_renewal(ca: KeyPair, later: timedelta, reused: bool) -> None:
    result = reconcile_ca(
        current=ca,
        common_name="es-http",
        organizational_unit="es",
        now=NOW + later,
        settings=SETTINGS,
    )

    assert (result == ca) is reused


def test_leaf_cannot_outlive_its_ca(ca: KeyPair) -> None:
    long_lived = CertificateSettings(validity=timedelta(days=365), rotate_before=timedelta(days=1))

    issued = reconcile_leaf(current=None, ca=ca, request=REQUEST, now=NOW, settings=long_lived)

    assert issued.certificate().not_valid_after_utc <= ca.certificate().not_valid_after_utc


@pytest.mark.parametrize(
    ("offset", "expected"),
    [
        (timedelta(minutes=-20), True),
        (timedelta(days=1), False),
        (timedelta(days=28, hours=23), False),
        (timedelta(days=29), True),
        (timedelta(days=31), True),
    ],
)
def test_needs_renewal(leaf: KeyPair, offset: timedelta, expected: bool) -> None:
    assert (
        needs_renewal(leaf.certificate(), now=NOW + offset, rotate_before=timedelta(days=1))
        is expected
    )


LONGEST_NAMESPACE = "n" * 63
LONG_HTTP_NAME = f"es-es-http.{LONGEST_NAMESPACE}.es.local"


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        # A name that fits is kept as it is.
        (REQUEST, REQUEST),
        (
            LeafRequest(common_name="c" * 64, dns_names=("a",)),
            LeafRequest(common_name="c" * 64, dns_names=("a",)),
        ),
        # Too long: the first SAN that fits becomes the name, the long name joins the SANs.
        (
            LeafRequest(
                common_name=LONG_HTTP_NAME,
                dns_names=("es-es-http", f"es-es-http.{LONGEST_NAMESPACE}"),
                ip_addresses=("10.0.0.1",),
            ),
            LeafRequest(
                common_name="es-es-http",
                dns_names=("es-es-http", f"es-es-http.{LONGEST_NAMESPACE}", LONG_HTTP_NAME),
                ip_addresses=("10.0.0.1",),
            ),
        ),
        # No SAN fits (or there is none): the long name, cut to 64 characters.
        (
            LeafRequest(common_name="c" * 65, dns_names=("d" * 65,)),
            LeafRequest(common_name="c" * 64, dns_names=("d" * 65, "c" * 65)),
        ),
        (
            LeafRequest(common_name="c" * 65),
            LeafRequest(common_name="c" * 64, dns_names=("c" * 65,)),
        ),
        # The long name already among the SANs is not repeated.
        (
            LeafRequest(common_name="c" * 65, dns_names=("c" * 65, "short")),
            LeafRequest(common_name="short", dns_names=("c" * 65, "short")),
        ),
    ],
)
def test_fitted_request(request_: LeafRequest, expected: LeafRequest) -> None:
    fitted = fitted_request(request_)

    assert fitted == expected
    assert fitted_request(fitted) == fitted
    assert len(fitted.common_name) <= MAX_COMMON_NAME_LENGTH


def test_a_leaf_for_a_too_long_common_name_is_issued_and_reused(ca: KeyPair) -> None:
    request = LeafRequest(common_name=LONG_HTTP_NAME, dns_names=("es-es-http",))

    leaf = reconcile_leaf(current=None, ca=ca, request=request, now=NOW, settings=SETTINGS)

    certificate = leaf.certificate()
    common_names = certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    assert [attribute.value for attribute in common_names] == ["es-es-http"]
    assert certificate_sans(certificate) == {"dns:es-es-http", f"dns:{LONG_HTTP_NAME}"}
    again = reconcile_leaf(current=leaf, ca=ca, request=request, now=NOW, settings=SETTINGS)
    assert again == leaf


def test_a_leaf_that_cannot_be_issued_names_its_certificate(ca: KeyPair) -> None:
    request = LeafRequest(common_name="es-es-http", dns_names=("h\u00e9",))

    with pytest.raises(CertificateError, match="certificate for 'es-es-http'"):
        reconcile_leaf(current=None, ca=ca, request=request, now=NOW, settings=SETTINGS)
