"""Association user hashes written by the old pure-Python bcrypt still verify with pyca's bcrypt.

The table was generated with the hand-written implementation this module replaced
(``hash_password(password, cost=cost, salt=salt)``), before it was deleted; those hashes live in
users' clusters today, so both the library and the operator's wrapper must keep accepting them.
"""

from __future__ import annotations

import bcrypt
import pytest

from stackflow.stack.associations import bcrypt as association_bcrypt

# (password, cost, salt, hash written by the old implementation)
LEGACY_HASHES = [
    (b"", 4, b"\x00" * 16, b"$2a$04$......................w74bL5gU7LSJClZClCa.Pkz14aTv/XO"),
    (
        b"pw",
        4,
        b"0123456789abcdef",
        b"$2a$04$KBCwKxOzLha2MUDgW0PjXeHeA6RFjwuQook1qJZxSCCFGf7mJ9Nk.",
    ),
    (
        b"3bY8kq1Zx0Lr7Vw5Tn2Ms9Pd",
        4,
        bytes(range(16)),
        b"$2a$04$..CA.uOD/eaGAOmJB.yMBuaCKb257YjLDuYGQj4tSmf6MWsCQsCuq",
    ),
    (
        "pässwörd-ünïcode".encode(),
        4,
        bytes(range(16, 32)),
        b"$2a$04$C/CQCvOTDfaWEPmZF/ycFuiPXn9CXvzo9ABPDrHS550mfjll8eWn6",
    ),
    (
        b"generated-password-0123456789",
        5,
        b"saltsaltsaltsalt",
        b"$2a$05$a0DqbFLfZFPxWUvya0Dqb.sbCJUtpQeyK/H6Eg0hZKhJzEKD8Pj5q",
    ),
]
# bcrypt reads only 72 bytes: the old code cut longer passwords silently, pyca's bcrypt 5 refuses them.
LONG_PASSWORD = (
    b"x" * 80,
    4,
    b"\xff" * 16,
    b"$2a$04$999999999999999999999u1x7VD3ozvGUKf1VJyvMLvNfpRk09O0y",
)
IDS = ["empty", "short", "generated", "unicode", "cost-5"]


@pytest.mark.parametrize(("password", "cost", "salt", "hashed"), LEGACY_HASHES, ids=IDS)
def test_pyca_bcrypt_accepts_legacy_hashes(
    password: bytes, cost: int, salt: bytes, hashed: bytes
) -> None:
    assert bcrypt.checkpw(password, hashed)
    assert not bcrypt.checkpw(password + b"!", hashed)


@pytest.mark.parametrize(("password", "cost", "salt", "hashed"), LEGACY_HASHES, ids=IDS)
def test_wrapper_verifies_and_reproduces_legacy_hashes(
    password: bytes, cost: int, salt: bytes, hashed: bytes
) -> None:
    assert association_bcrypt.check_password(password, hashed)
    assert not association_bcrypt.check_password(b"wrong", hashed)
    assert association_bcrypt.hash_password(password, cost=cost, salt=salt) == hashed


def test_passwords_longer_than_72_bytes_still_use_their_first_72() -> None:
    password, cost, salt, hashed = LONG_PASSWORD
    assert bcrypt.checkpw(password[:72], hashed)
    assert association_bcrypt.check_password(password, hashed)
    assert association_bcrypt.check_password(password + b"ignored", hashed)
    assert not association_bcrypt.check_password(b"x" * 71, hashed)
    assert association_bcrypt.hash_password(password, cost=cost, salt=salt) == hashed


def test_new_hashes_are_2a_at_the_default_cost_with_a_random_salt() -> None:
    first = association_bcrypt.hash_password(b"secret")
    second = association_bcrypt.hash_password(b"secret")
    assert first.startswith(b"$2a$04$")
    assert len(first) == 60
    assert first != second
    assert bcrypt.checkpw(b"secret", first)
    assert bcrypt.checkpw(b"secret", second)


@pytest.mark.parametrize(
    "hashed",
    [
        b"",
        b"{PBKDF2}10000$x$y",
        b"$2a$04$KBCwKxOzLha2MUDgW0PjXeHeA6RFjwuQook1qJZxSCCFGf7mJ9Nk",  # one character short
        b"$2a$04$KBCwKxOzLha2MUDgW0PjXeHeA6RFjwuQook1qJZxSCCFGf7mJ9N!.",  # outside the alphabet
        b"$2x$04$KBCwKxOzLha2MUDgW0PjXeHeA6RFjwuQook1qJZxSCCFGf7mJ9Nk.",  # unsupported variant
        b"$2a$31$KBCwKxOzLha2MUDgW0PjXeHeA6RFjwuQook1qJZxSCCFGf7mJ9Nk.",  # too costly to check
        "$2a$04$é".encode(),
    ],
    ids=["empty", "other-scheme", "short", "bad-char", "variant", "cost", "non-ascii"],
)
def test_unusable_stored_hashes_do_not_match(hashed: bytes) -> None:
    assert association_bcrypt.check_password(b"pw", hashed) is False
