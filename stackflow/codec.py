"""AES-256-GCM encryption of Temporal payloads (config key ``temporal-payload-encryption-key``).

With the key set, every payload the operator and its command-line tools send to Temporal
(workflow and activity inputs and results, signals, updates, queries, memos) is encrypted before
it leaves the process, so a hosted Temporal (Temporal Cloud) stores only ciphertext. Each encrypted
payload carries the codec's name as its ``encoding`` and the key's id (the first 16 hex digits of
the key's SHA-256), so a payload read with another key fails with a message naming both ids
instead of an authentication error.

The key file is a keyring: one key a line, the first encrypts, every one decrypts (rotation: put
the new key first, keep the old ones until no history holds their payloads).

A payload encrypted for a workflow (the SDK tells the codec which one: its serialization context)
names the workflow's id in its metadata and authenticates it with the data, so a ciphertext
copied into another workflow's history fails to decode (a Schedule's runs, whose ids are the
Schedule's id and the run's time, read what was written for the Schedule). Payloads written
before this binding
(without the workflow id) still decode; so do the bound ones read without a context (a tool
decoding a history), against the id they name.

A payload that is not encrypted is refused, unless ``temporal-payload-encryption-allow-plaintext``
lets the histories written before the key was set be read.
"""

from __future__ import annotations

import base64
import binascii
import copy
import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    ActivitySerializationContext,
    PayloadCodec,
    SerializationContext,
    WithSerializationContext,
    WorkflowSerializationContext,
)

#: The ``encoding`` metadata of an encrypted payload.
ENCODING = b"binary/stackflow-aes256gcm"
#: The metadata key holding the id of the key a payload was encrypted with.
KEY_ID = "encryption-key-id"
#: The metadata key holding the id of the workflow a payload was encrypted for (authenticated).
WORKFLOW_ID = "encryption-workflow-id"
KEY_BYTES = 32
NONCE_BYTES = 12
#: The configuration key that lets unencrypted payloads through, named in the refusal.
ALLOW_PLAINTEXT_KEY = "temporal-payload-encryption-allow-plaintext"


class PayloadKeyError(ValueError):
    """A key file that does not hold a usable key, or a payload this key cannot decrypt."""


def parse_keyring(text: str) -> list[bytes]:
    """The keys of a key file's text: one base64-encoded 32-byte key a line, the first the one
    that encrypts. Blank lines and ``#`` comment lines are skipped; a bad line is named."""
    entries = [
        (number, line.strip())
        for number, line in enumerate(text.splitlines(), start=1)
        if line.strip() and not line.strip().startswith("#")
    ]
    keys: list[bytes] = []
    for number, entry in entries:
        # One key: the file is the key (the message of a single-key file names no line).
        where = f"line {number} " if len(entries) > 1 else ""
        try:
            key = base64.b64decode(entry, validate=True)
        except (binascii.Error, ValueError):
            raise PayloadKeyError(f"{where}must hold a 32-byte key, base64-encoded") from None
        if len(key) != KEY_BYTES:
            raise PayloadKeyError(
                f"{where}must hold a 32-byte key, base64-encoded; it decodes to {len(key)} bytes"
            )
        if key not in keys:
            keys.append(key)
    if not keys:
        raise PayloadKeyError("must hold a 32-byte key, base64-encoded; it holds none")
    return keys


def read_keyring(path: Path) -> list[bytes]:
    """The keys in the file at `path` (see `parse_keyring`), the encrypting one first."""
    try:
        text = path.read_text(encoding="ascii")
    except FileNotFoundError:
        raise PayloadKeyError("does not exist") from None
    except IsADirectoryError:
        raise PayloadKeyError("is a directory, not a file") from None
    except OSError as error:
        raise PayloadKeyError(f"cannot be read: {error.strerror}") from None
    except UnicodeDecodeError:
        raise PayloadKeyError("must hold a 32-byte key, base64-encoded") from None
    return parse_keyring(text)


def read_key_file(path: Path) -> bytes:
    """The key that encrypts: the first of the key file at `path`, whose every line is checked.
    A key is written base64-encoded, as ``head -c 32 /dev/urandom | base64`` writes it."""
    return read_keyring(path)[0]


def key_id(key: bytes) -> str:
    """A key's public name: the first 16 hex digits of its SHA-256 (it reveals nothing of it)."""
    return hashlib.sha256(key).hexdigest()[:16]


def workflow_of(context: SerializationContext) -> str | None:
    """The id of the workflow a serialization context's payloads belong to, if it names one."""
    if isinstance(context, WorkflowSerializationContext):
        return context.workflow_id
    if isinstance(context, ActivitySerializationContext):
        return context.workflow_id
    return None


#: What Temporal appends to a Schedule's workflow id for each run: ``-`` and the run's nominal
#: time in RFC 3339 (the codec sees the Schedule's id when the Schedule is written).
_SCHEDULED_RUN_SUFFIX = re.compile(r"-\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(Z|[+-]\d{2}:\d{2})")


def may_read(bound_to: str, reader: str) -> bool:
    """Whether the workflow `reader` may read a payload encrypted for the workflow `bound_to`:
    the same workflow, or a run a Schedule of that id started (``<id>-<nominal time>``)."""
    if reader == bound_to:
        return True
    suffix = reader.removeprefix(bound_to)
    return suffix != reader and _SCHEDULED_RUN_SUFFIX.fullmatch(suffix) is not None


def associated_data(key_name: str, workflow_id: str | None) -> bytes:
    """What each ciphertext authenticates besides itself: its key id, and the id of the
    workflow it was written for (a key id is 16 hex digits, so the two cannot run together)."""
    if workflow_id is None:
        return key_name.encode()
    return f"{key_name}\0workflow\0{workflow_id}".encode()


@dataclass(frozen=True)
class _Keyring:
    """The keys by id, and the id of the one that encrypts."""

    ciphers: Mapping[str, AESGCM]
    primary: str


class AesGcmCodec(PayloadCodec, WithSerializationContext):
    """Encrypts each payload whole (metadata and data) with AES-256-GCM and a random nonce."""

    def __init__(
        self,
        key: bytes,
        *,
        older_keys: Sequence[bytes] = (),
        allow_plaintext: bool = False,
        workflow_id: str | None = None,
    ) -> None:
        """Encrypt with `key` (32 bytes); decrypt with it and `older_keys` (a rotation's keys
        still held by histories). `allow_plaintext` lets unencrypted payloads through decode;
        `workflow_id` binds the payloads to that workflow (the SDK sets it: `with_context`)."""
        ciphers: dict[str, AESGCM] = {}
        for each in (key, *older_keys):
            if len(each) != KEY_BYTES:
                raise PayloadKeyError(f"an AES-256 key has 32 bytes, got {len(each)}")
            ciphers.setdefault(key_id(each), AESGCM(each))
        self._keyring = _Keyring(ciphers=ciphers, primary=key_id(key))
        self.key_id = self._keyring.primary
        self.allow_plaintext = allow_plaintext
        self.workflow_id = workflow_id

    @classmethod
    def of_keyring(cls, keys: Sequence[bytes], *, allow_plaintext: bool = False) -> AesGcmCodec:
        """The codec of a key file's keys (`read_keyring`): the first encrypts."""
        return cls(keys[0], older_keys=keys[1:], allow_plaintext=allow_plaintext)

    @property
    def key_ids(self) -> list[str]:
        """The ids of every key this codec decrypts with, the encrypting one first."""
        return list(self._keyring.ciphers)

    def with_context(self, context: SerializationContext) -> Self:
        """This codec bound to the workflow `context` names (unbound when it names none)."""
        bound = workflow_of(context)
        if bound == self.workflow_id:
            return self
        rebound = copy.copy(self)
        rebound.workflow_id = bound
        return rebound

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Encrypt every payload; the key id and the workflow id are authenticated with it."""
        return [self._encrypt(payload) for payload in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Decrypt every payload; one that is not encrypted passes only with `allow_plaintext`."""
        return [self._decode_one(payload) for payload in payloads]

    def _decode_one(self, payload: Payload) -> Payload:
        if payload.metadata.get("encoding") == ENCODING:
            return self._decrypt(payload)
        if self.allow_plaintext:
            return payload
        encoding = payload.metadata.get("encoding", b"").decode(errors="replace") or "(none)"
        raise PayloadKeyError(
            f"payload is not encrypted (encoding {encoding}){self._where()}: with "
            f"temporal-payload-encryption-key set every payload must be; set "
            f"{ALLOW_PLAINTEXT_KEY}: true to read histories written before the key was set"
        )

    def _where(self) -> str:
        return f" in workflow {self.workflow_id}" if self.workflow_id is not None else ""

    def _encrypt(self, payload: Payload) -> Payload:
        nonce = os.urandom(NONCE_BYTES)
        primary = self._keyring.primary
        sealed = self._keyring.ciphers[primary].encrypt(
            nonce, payload.SerializeToString(), associated_data(primary, self.workflow_id)
        )
        metadata = {"encoding": ENCODING, KEY_ID: primary.encode()}
        if self.workflow_id is not None:
            metadata[WORKFLOW_ID] = self.workflow_id.encode()
        return Payload(metadata=metadata, data=nonce + sealed)

    def _decrypt(self, payload: Payload) -> Payload:
        written_with = payload.metadata.get(KEY_ID, b"").decode(errors="replace")
        cipher = self._keyring.ciphers.get(written_with)
        if cipher is None:
            ids = ", ".join(self._keyring.ciphers)
            raise PayloadKeyError(
                f"payload encrypted with key id {written_with or '(none)'}, but "
                f"temporal-payload-encryption-key has key id {ids}: a different key"
            )
        bound_to = (
            payload.metadata[WORKFLOW_ID].decode(errors="replace")
            if WORKFLOW_ID in payload.metadata
            else None
        )
        if (
            bound_to is not None
            and self.workflow_id is not None
            and not may_read(bound_to, self.workflow_id)
        ):
            raise PayloadKeyError(
                f"payload encrypted for workflow {bound_to} read in workflow {self.workflow_id}: "
                f"a ciphertext cannot move between workflows"
            )
        nonce, sealed = payload.data[:NONCE_BYTES], payload.data[NONCE_BYTES:]
        try:
            plain = cipher.decrypt(nonce, sealed, associated_data(written_with, bound_to))
        except InvalidTag:
            raise PayloadKeyError(
                f"payload (key id {written_with}){self._where()} fails authentication: "
                f"it was altered or truncated"
            ) from None
        return Payload.FromString(plain)
