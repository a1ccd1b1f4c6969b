"""A pure-Python bcrypt (``$2a$``), the password hash ECK puts in association user Secrets.

No bcrypt library is installed, and ``cryptography`` has no bcrypt, so this is the OpenBSD algorithm
(EksBlowfish over the 24-byte ``OrpheanBeholderScryDoubt``) written out. The Blowfish initial state is
the fractional hex digits of pi, computed once rather than pasted in. Pure Python is slow, so hashes
are made with a low cost (:data:`DEFAULT_COST`); Elasticsearch and ECK read the cost from the hash, so
a low-cost hash is accepted everywhere a cost-10 one is, and the passwords are long random strings
for which the cost factor adds nothing.
"""

from __future__ import annotations

import base64
import functools
import hmac
import os

DEFAULT_COST = 4
MAX_VERIFY_COST = 8
"""Hashes with a higher cost are not verified (too slow in pure Python): treat them as stale."""

_BCRYPT_ALPHABET = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_STANDARD_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_TO_BCRYPT = str.maketrans(_STANDARD_ALPHABET, _BCRYPT_ALPHABET)
_FROM_BCRYPT = str.maketrans(_BCRYPT_ALPHABET, _STANDARD_ALPHABET)
_MAGIC = b"OrpheanBeholderScryDoubt"
_MASK = 0xFFFFFFFF
_STATE_WORDS = 18 + 4 * 256


@functools.cache
def _pi_words() -> tuple[int, ...]:
    """The first 1042 32-bit words of pi's fractional part: Blowfish's P-array then its S-boxes."""
    bits = _STATE_WORDS * 32
    guard = 64
    scale = 1 << (bits + guard)

    def arctan_inverse(x: int) -> int:
        total = term = scale // x
        x_squared = x * x
        divisor = 1
        sign = 1
        while term:
            term //= x_squared
            divisor += 2
            sign = -sign
            total += sign * (term // divisor)
        return total

    pi_scaled = 16 * arctan_inverse(5) - 4 * arctan_inverse(239)
    fraction = (pi_scaled - (3 << (bits + guard))) >> guard
    return tuple((fraction >> (bits - 32 * (index + 1))) & _MASK for index in range(_STATE_WORDS))


class _Blowfish:
    """Mutable Blowfish state for the EksBlowfish key schedule."""

    def __init__(self) -> None:
        words = _pi_words()
        self.p = list(words[:18])
        self.s = [list(words[18 + 256 * box : 18 + 256 * (box + 1)]) for box in range(4)]

    def encipher(self, left: int, right: int) -> tuple[int, int]:
        p = self.p
        s0, s1, s2, s3 = self.s
        left ^= p[0]
        for index in range(1, 17, 2):
            right ^= (
                (((s0[left >> 24] + s1[(left >> 16) & 0xFF]) & _MASK) ^ s2[(left >> 8) & 0xFF])
                + s3[left & 0xFF]
            ) & _MASK ^ p[index]
            left ^= (
                (((s0[right >> 24] + s1[(right >> 16) & 0xFF]) & _MASK) ^ s2[(right >> 8) & 0xFF])
                + s3[right & 0xFF]
            ) & _MASK ^ p[index + 1]
        return right ^ p[17], left

    def expand(self, key_words: list[int], salt_words: list[int] | None) -> None:
        """ExpandKey: mix ``key`` into P, then re-encrypt the state (xoring ``salt`` when given)."""
        for index in range(18):
            self.p[index] ^= key_words[index % len(key_words)]
        left = right = 0
        salt_index = 0

        def next_block(left: int, right: int) -> tuple[int, int]:
            nonlocal salt_index
            if salt_words is not None:
                left ^= salt_words[salt_index % 4]
                right ^= salt_words[(salt_index + 1) % 4]
                salt_index += 2
            return self.encipher(left, right)

        for index in range(0, 18, 2):
            left, right = next_block(left, right)
            self.p[index], self.p[index + 1] = left, right
        for box in self.s:
            for index in range(0, 256, 2):
                left, right = next_block(left, right)
                box[index], box[index + 1] = left, right


def _stream_words(data: bytes, count: int) -> list[int]:
    """Read ``count`` big-endian words from ``data`` cycled (bcrypt's ``stream2word``)."""
    return [
        int.from_bytes(bytes(data[(4 * word + offset) % len(data)] for offset in range(4)), "big")
        for word in range(count)
    ]


def _encode(data: bytes) -> str:
    return base64.b64encode(data).decode().rstrip("=").translate(_TO_BCRYPT)


def _decode(text: str) -> bytes:
    standard = text.translate(_FROM_BCRYPT)
    return base64.b64decode(standard + "=" * (-len(standard) % 4))


def _raw_hash(password: bytes, salt: bytes, cost: int) -> bytes:
    key = (password + b"\x00")[:72]
    key_words = _stream_words(key, 18)
    salt_words = _stream_words(salt, 4)
    state = _Blowfish()
    state.expand(key_words, salt_words)
    salt_key_words = _stream_words(salt, 18)
    for _ in range(1 << cost):
        state.expand(key_words, None)
        state.expand(salt_key_words, None)
    blocks = _stream_words(_MAGIC, 6)
    for _ in range(64):
        for index in range(0, 6, 2):
            blocks[index], blocks[index + 1] = state.encipher(blocks[index], blocks[index + 1])
    return b"".join(word.to_bytes(4, "big") for word in blocks)[:23]


def hash_password(password: bytes, *, cost: int = DEFAULT_COST, salt: bytes | None = None) -> bytes:
    """Return the ``$2a$<cost>$<salt><hash>`` bcrypt hash of ``password`` (random salt unless given)."""
    if not 4 <= cost <= 31:
        raise ValueError(f"bcrypt cost must be between 4 and 31, got {cost}")
    salt = os.urandom(16) if salt is None else salt
    if len(salt) != 16:
        raise ValueError("bcrypt salt must be 16 bytes")
    digest = _raw_hash(password, salt, cost)
    return f"$2a${cost:02d}${_encode(salt)}{_encode(digest)}".encode()


def check_password(password: bytes, hashed: bytes, *, max_cost: int = MAX_VERIFY_COST) -> bool:
    """Return whether ``hashed`` (a ``$2a$``/``$2b$``/``$2y$`` hash) matches ``password``.

    Hashes costlier than ``max_cost`` are reported as not matching rather than verified: in pure
    Python a cost-10 check takes seconds, and re-hashing the same password is always safe.
    """
    try:
        text = hashed.decode("ascii")
        _, variant, cost_text, rest = text.split("$")
        cost = int(cost_text)
    except ValueError:
        return False
    if variant not in ("2a", "2b", "2y") or len(rest) != 53 or not 4 <= cost <= max_cost:
        return False
    try:
        salt = _decode(rest[:22])[:16]
    except ValueError:
        return False
    expected = f"${variant}${cost_text}${rest[:22]}{_encode(_raw_hash(password, salt, cost))}"
    return hmac.compare_digest(expected.encode(), hashed)
