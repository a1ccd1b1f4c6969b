"""AES-256-GCM encryption of Temporal payloads (config key ``temporal-payload-encryption-key``).

With the key set, every payload the operator and its command-line tools send to Temporal
(workflow and activity inputs and results, signals, updates, queries, memos) is encrypted before
it leaves the process, so a hosted Temporal (Temporal Cloud) stores only ciphertext. Each encrypted
payload carries the codec's name as its ``encoding`` and the key's id (the first 16 hex digits of
the key's SHA-256), so a payload read with another key fails with a message naming both ids
instead of an authentication error. Payloads without this encoding (written before the key was
set) pass through undecoded.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadCodec

#: The ``encoding`` metadata of an encrypted payload.
ENCODING = b"binary/stackflow-aes256gcm"
#: The metadata key holding the id of the key a payload was encrypted with.
KEY_ID = "encryption-key-id"
KEY_BYTES = 32
NONCE_BYTES = 12


class PayloadKeyError(ValueError):
    """A key file that does not hold a usable key, or a payload this key cannot decrypt."""


def read_key_file(path: Path) -> bytes:
    """The 32-byte key in `path`: its text is the key base64-encoded (surrounding space ignored),
    as ``head -c 32 /dev/urandom | base64`` writes it."""
    try:
        text = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        raise PayloadKeyError("does not exist") from None
    except IsADirectoryError:
        raise PayloadKeyError("is a directory, not a file") from None
    except OSError as error:
        raise PayloadKeyError(f"cannot be read: {error.strerror}") from None
    except UnicodeDecodeError:
        raise PayloadKeyError("must hold a 32-byte key, base64-encoded") from None
    try:
        key = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise PayloadKeyError("must hold a 32-byte key, base64-encoded") from None
    if len(key) != KEY_BYTES:
        raise PayloadKeyError(
            f"must hold a 32-byte key, base64-encoded; it decodes to {len(key)} bytes"
        )
    return key


def key_id(key: bytes) -> str:
    """A key's public name: the first 16 hex digits of its SHA-256 (it reveals nothing of it)."""
    return hashlib.sha256(key).hexdigest()[:16]


class AesGcmCodec(PayloadCodec):
    """Encrypts each payload whole (metadata and data) with AES-256-GCM and a random nonce."""

    def __init__(self, key: bytes) -> None:
        """Use `key` (32 bytes) for both directions."""
        if len(key) != KEY_BYTES:
            raise PayloadKeyError(f"an AES-256 key has 32 bytes, got {len(key)}")
        self._aead = AESGCM(key)
        self.key_id = key_id(key)

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Encrypt every payload; the key id is authenticated with it."""
        return [self._encrypt(payload) for payload in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Decrypt the payloads this codec encrypted; leave any other payload as it is."""
        return [
            self._decrypt(payload) if payload.metadata.get("encoding") == ENCODING else payload
            for payload in payloads
        ]

    def _encrypt(self, payload: Payload) -> Payload:
        nonce = os.urandom(NONCE_BYTES)
        sealed = self._aead.encrypt(nonce, payload.SerializeToString(), self.key_id.encode())
        return Payload(
            metadata={"encoding": ENCODING, KEY_ID: self.key_id.encode()}, data=nonce + sealed
        )

    def _decrypt(self, payload: Payload) -> Payload:
        written_with = payload.metadata.get(KEY_ID, b"").decode(errors="replace")
        if written_with != self.key_id:
            raise PayloadKeyError(
                f"payload encrypted with key id {written_with or '(none)'}, but "
                f"temporal-payload-encryption-key has key id {self.key_id}: a different key"
            )
        nonce, sealed = payload.data[:NONCE_BYTES], payload.data[NONCE_BYTES:]
        try:
            plain = self._aead.decrypt(nonce, sealed, self.key_id.encode())
        except InvalidTag:
            raise PayloadKeyError(
                f"payload (key id {self.key_id}) fails authentication: it was altered or truncated"
            ) from None
        return Payload.FromString(plain)
