"""The RSA key pool: keys made ahead, each handed out once, made on the spot when none is ready."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from itertools import count
from typing import cast

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from stackflow.stack import certificates
from stackflow.stack.certificates import CertificateSettings, create_ca
from stackflow.stack.rsa_keys import RsaKeyPool

#: Long enough for a thread to make a few fake keys on a loaded machine; never reached otherwise.
DEADLINE = 30.0


class FakeKeys:
    """Numbered stand-ins for keys, counting how many were made."""

    def __init__(self) -> None:
        self.numbers = count()
        self.made = 0

    def __call__(self) -> rsa.RSAPrivateKey:
        self.made += 1
        return cast(rsa.RSAPrivateKey, next(self.numbers))


def number(key: rsa.RSAPrivateKey) -> object:
    """The number a ``FakeKeys`` key stands for."""
    return cast(object, key)


def test_a_pool_never_started_makes_each_key_when_asked() -> None:
    keys = FakeKeys()
    pool = RsaKeyPool(size=3, generate=keys)
    assert [number(pool.take()), number(pool.take())] == [0, 1]
    assert keys.made == 2
    assert pool.ready == 0


def test_a_started_pool_hands_out_keys_made_ahead_and_makes_the_next() -> None:
    keys = FakeKeys()
    pool = RsaKeyPool(size=3, generate=keys)
    pool.start()
    try:
        assert pool.wait_filled(DEADLINE)
        assert pool.ready == 3
        assert number(pool.take()) == 0  # made ahead, first in first out
        assert pool.wait_filled(DEADLINE)  # the filler replaced it
        handed_out = [number(pool.take()) for _ in range(10)]
    finally:
        pool.stop()
    assert len(set(handed_out)) == len(handed_out)
    assert 0 not in handed_out


def test_stop_drops_the_ready_keys_and_a_start_fills_again() -> None:
    keys = FakeKeys()
    pool = RsaKeyPool(size=2, generate=keys)
    pool.start()
    assert pool.wait_filled(DEADLINE)
    pool.stop()
    assert pool.ready == 0
    made = keys.made
    assert number(pool.take()) == made  # made now: nothing was left
    pool.start()
    try:
        assert pool.wait_filled(DEADLINE)
    finally:
        pool.stop()
    assert not any(thread.name == "rsa-key-pool" for thread in threading.enumerate())


def test_a_key_being_made_when_the_pool_stops_is_not_kept() -> None:
    release = threading.Event()
    entered = threading.Event()

    def slow_key() -> rsa.RSAPrivateKey:
        entered.set()
        release.wait(DEADLINE)
        return cast(rsa.RSAPrivateKey, object())

    pool = RsaKeyPool(size=1, generate=slow_key)
    pool.start()
    assert entered.wait(DEADLINE)
    stopper = threading.Thread(target=pool.stop)
    stopper.start()
    release.set()
    stopper.join(DEADLINE)
    assert not stopper.is_alive()
    assert pool.ready == 0


@pytest.mark.parametrize("size", [0, -1])
def test_a_pool_holds_at_least_one_key(size: int) -> None:
    with pytest.raises(ValueError, match="at least one key"):
        RsaKeyPool(size=size)


def test_a_new_ca_gets_its_key_from_the_operators_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    ready_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pool = RsaKeyPool(size=1, generate=lambda: ready_key)
    monkeypatch.setattr(certificates, "RSA_KEYS", pool)
    pair = create_ca(
        common_name="test-ca",
        organizational_unit="test",
        now=datetime(2026, 12, 7, tzinfo=UTC),
        settings=CertificateSettings(),
    )
    certificate = x509.load_pem_x509_certificate(pair.cert_pem)
    public = certificate.public_key()
    assert isinstance(public, rsa.RSAPublicKey)
    assert public.public_numbers() == ready_key.public_key().public_numbers()
    loaded = serialization.load_pem_private_key(pair.key_pem, password=None)
    assert isinstance(loaded, rsa.RSAPrivateKey)
    assert loaded.private_numbers() == ready_key.private_numbers()
