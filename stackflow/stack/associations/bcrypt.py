"""The ``$2a$`` bcrypt hash ECK puts in association user Secrets, over pyca's ``bcrypt``.

A thin layer that keeps the operator's conventions in one place: the ``$2a$`` prefix (what ECK's Go
``x/crypto/bcrypt`` writes and Elasticsearch's file realm reads), a low default cost, passwords cut
to bcrypt's 72 bytes, and malformed or over-costly stored hashes reported as "does not match" (so
the caller re-hashes) instead of raising.
"""

from __future__ import annotations

import base64

import bcrypt as _bcrypt

__all__ = ["DEFAULT_COST", "MAX_VERIFY_COST", "check_password", "hash_password"]

DEFAULT_COST = 4
"""The cost of new hashes.

Elasticsearch and ECK read the cost from the hash, so a cost-4 hash is accepted everywhere a cost-10
one is; the passwords are 24 random characters, for which key stretching adds nothing, while every
reconcile verifies the stored hash on the event loop, where a cheap check matters.
"""

MAX_VERIFY_COST = 8
"""Stored hashes costlier than this are not verified but reported stale (and so re-hashed).

Re-hashing the same password is always safe, and the cap bounds the time one check can block the
event loop: the cost is read from the Secret, and a cost-31 hash would take days to verify.
"""

_MAX_PASSWORD_BYTES = 72
_SALT_BYTES = 16
_VARIANTS = frozenset({"2a", "2b", "2y"})
# bcrypt's base64 is the standard alphabet reordered, without padding.
_TO_BCRYPT = bytes.maketrans(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
    b"./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
)


def _key(password: bytes) -> bytes:
    # bcrypt only ever reads the first 72 bytes; pyca's bcrypt 5 refuses longer input instead of
    # cutting it, so cut here to keep the hashes (and the accepted passwords) what they were.
    return password[:_MAX_PASSWORD_BYTES]


def hash_password(password: bytes, *, cost: int = DEFAULT_COST, salt: bytes | None = None) -> bytes:
    """Return the ``$2a$<cost>$<salt><hash>`` bcrypt hash of ``password``.

    ``salt`` is 16 raw bytes (random unless given; fixed salts are for tests). Raises
    ``ValueError`` for a cost outside 4..31 or a salt of the wrong length.
    """
    if not 4 <= cost <= 31:
        raise ValueError(f"bcrypt cost must be between 4 and 31, got {cost}")
    if salt is None:
        setting = _bcrypt.gensalt(rounds=cost, prefix=b"2a")
    elif len(salt) != _SALT_BYTES:
        raise ValueError("bcrypt salt must be 16 bytes")
    else:
        encoded = base64.b64encode(salt).rstrip(b"=").translate(_TO_BCRYPT)
        setting = b"$2a$%02d$%s" % (cost, encoded)
    return _bcrypt.hashpw(_key(password), setting)


def check_password(password: bytes, hashed: bytes, *, max_cost: int = MAX_VERIFY_COST) -> bool:
    """Return whether ``hashed`` (a ``$2a$``/``$2b$``/``$2y$`` hash) matches ``password``.

    Anything else (another scheme, a malformed hash, a cost above ``max_cost``) is reported as not
    matching rather than raising, so the caller writes a fresh hash.
    """
    try:
        _, variant, cost_text, rest = hashed.decode("ascii").split("$")
        cost = int(cost_text)
    except ValueError:  # UnicodeDecodeError is a ValueError too
        return False
    if variant not in _VARIANTS or len(rest) != 53 or not 4 <= cost <= max_cost:
        return False
    try:
        return _bcrypt.checkpw(_key(password), hashed)
    except ValueError:  # pyca's "Invalid salt": characters outside bcrypt's alphabet
        return False
