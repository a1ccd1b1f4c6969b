"""The license signature layout shared by Elasticsearch's license tooling and ECK.

A signature is the base64 of::

    u32be version | u32be len | magic | u32be len | key fingerprint | u32be len | RSA signature

where the RSA signature is PKCS#1 v1.5 over SHA-512 of the *signable JSON* (see
``signable_content_bytes``). The fingerprint names the signing key in one of two formats: a raw
SHA-256 of the DER (PKIX) public key (license format v4+), or the base64 of that DER key encrypted
with AES-ECB under a fixed, public Elasticsearch key (v1-v3, and what ECK's own signer writes).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import struct
from dataclasses import dataclass
from enum import Enum

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from stackflow.licensing.model import LicenseSpec

MAGIC_LENGTH = 13
# The version ECK writes for the licenses it signs (trials); Elasticsearch's tooling writes 4+ too.
SIGNATURE_VERSION = 4

# Not a secret: Elasticsearch's CryptUtils hard-codes it to obfuscate the embedded public key.
_FINGERPRINT_AES_KEY = b"\x76\x7a\x57\x69\x68\x4a\x4a\x4b\x6e\x30\x72\x6b\x61\x69\x50\x2b"
_CUSTOM_PADDING = 20
_AES_BLOCK = 16


class SignatureError(ValueError):
    """A signature that does not verify, or cannot even be read."""


@dataclass(frozen=True)
class SignatureBlob:
    """The decoded parts of a license signature."""

    version: int
    magic: bytes
    key_fingerprint: bytes
    rsa_signature: bytes

    def encode(self) -> str:
        """The base64 text that goes into the license's ``signature`` field."""
        parts = bytearray(struct.pack(">I", self.version))
        for chunk in (self.magic, self.key_fingerprint, self.rsa_signature):
            parts += struct.pack(">I", len(chunk)) + chunk
        return base64.b64encode(bytes(parts)).decode("ascii")


def decode_signature(signature: str) -> SignatureBlob:
    """Split a base64 signature into its parts; raise SignatureError naming what is wrong."""
    # Go's StdEncoding skips CR and LF but is otherwise strict, padding included.
    cleaned = signature.replace("\r", "").replace("\n", "")
    try:
        raw = base64.b64decode(cleaned, validate=True)
    except (binascii.Error, ValueError) as error:
        raise SignatureError(f"failed to base64 decode signature: {error}") from error
    reader = _BlobReader(raw)
    version = reader.read_u32("version")
    magic = reader.read_chunk("magic")
    fingerprint = reader.read_chunk("hash")
    rsa_signature = reader.read_chunk("signed content")
    # Trailing bytes are ignored, as ECK does (its buffer carries base64 padding slack).
    return SignatureBlob(version, magic, fingerprint, rsa_signature)


class _BlobReader:
    """Length-prefixed reads that never trust a length beyond the data."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._offset = 0

    def read_u32(self, what: str) -> int:
        end = self._offset + 4
        if end > len(self._data):
            raise SignatureError(f"failed to read {what}: signature too short")
        (value,) = struct.unpack(">I", self._data[self._offset : end])
        self._offset = end
        return int(value)

    def read_chunk(self, what: str) -> bytes:
        length = self.read_u32(f"{what} length")
        end = self._offset + length
        if end > len(self._data):
            raise SignatureError(f"{what} exceeds max length")
        chunk = self._data[self._offset : end]
        self._offset = end
        return chunk


def signable_content_bytes(spec: LicenseSpec) -> bytes:
    """The exact bytes that are signed: ECK's signable JSON of the license.

    Keys in the order ``uid, type, issue_date_in_millis, start_date_in_millis,
    expiry_date_in_millis, max_instances, max_resource_units, issued_to, issuer``; the millis and
    ``max_*`` fields are left out when zero; strings are escaped as Go's encoder does with HTML
    escaping off; no whitespace and no trailing newline.
    """
    fields: list[tuple[str, str | int]] = [("uid", spec.uid), ("type", spec.type)]
    for name, number in (
        ("issue_date_in_millis", spec.issue_date_in_millis),
        ("start_date_in_millis", spec.start_date_in_millis),
        ("expiry_date_in_millis", spec.expiry_date_in_millis),
        ("max_instances", spec.max_instances),
        ("max_resource_units", spec.max_resource_units),
    ):
        if number != 0:
            fields.append((name, number))
    fields += [("issued_to", spec.issued_to), ("issuer", spec.issuer)]
    members = ",".join(f"{_go_json_string(name)}:{_go_json_value(value)}" for name, value in fields)
    return ("{" + members + "}").encode("utf-8")


def _go_json_value(value: str | int) -> str:
    return str(value) if isinstance(value, int) else _go_json_string(value)


def _go_json_string(text: str) -> str:
    """A JSON string as Go encodes it with ``SetEscapeHTML(false)``."""
    # Go decodes a lone surrogate escape to U+FFFD, so the signed bytes carry U+FFFD.
    normalised = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    # Python and Go agree on every escape (\b \f \n \r \t, \u00xx lowercase) except these two,
    # which Go escapes so the output stays valid JavaScript.
    encoded = json.dumps(normalised, ensure_ascii=False)
    return encoded.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def public_key_der(public_key: rsa.RSAPublicKey) -> bytes:
    """The DER (PKIX SubjectPublicKeyInfo) encoding, the form fingerprints and trials use."""
    return public_key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def encrypted_key_fingerprint(public_key: rsa.RSAPublicKey) -> bytes:
    """The v1-v3 fingerprint ECK's signer writes: base64 of the AES-ECB-encrypted DER key."""
    der = public_key_der(public_key)
    # Elasticsearch's custom padding; deterministic for any real key (always 20+ bytes long).
    padded = der + bytes([1]) if len(der) >= _CUSTOM_PADDING else _short_pad(der)
    block_padding = _AES_BLOCK - len(padded) % _AES_BLOCK
    padded += bytes([block_padding]) * block_padding
    encryptor = Cipher(algorithms.AES(_FINGERPRINT_AES_KEY), modes.ECB()).encryptor()
    return base64.b64encode(encryptor.update(padded) + encryptor.finalize())


def _short_pad(data: bytes) -> bytes:
    pad_length = _CUSTOM_PADDING - len(data)
    return data + bytes(pad_length) + bytes([pad_length + 1])


def sha256_key_fingerprint(public_key: rsa.RSAPublicKey) -> bytes:
    """The v4+ fingerprint: SHA-256 of the DER key."""
    return hashlib.sha256(public_key_der(public_key)).digest()


class FingerprintMatch(Enum):
    """How a signature's key fingerprint compares with a verifying key."""

    MATCH = "match"
    MISMATCH = "mismatch"
    UNPARSEABLE = "unparseable"


def match_key_fingerprint(fingerprint: bytes, public_key: rsa.RSAPublicKey) -> FingerprintMatch:
    """Compare a fingerprint with a key, trying the SHA-256 format first, as ECK does."""
    if len(fingerprint) == hashlib.sha256().digest_size:
        matches = fingerprint == sha256_key_fingerprint(public_key)
        return FingerprintMatch.MATCH if matches else FingerprintMatch.MISMATCH
    embedded = _decrypt_fingerprint_key(fingerprint)
    if embedded is None:
        return FingerprintMatch.UNPARSEABLE
    if embedded.public_numbers() == public_key.public_numbers():
        return FingerprintMatch.MATCH
    return FingerprintMatch.MISMATCH


def _decrypt_fingerprint_key(fingerprint: bytes) -> rsa.RSAPublicKey | None:
    """The public key hidden in a v1-v3 fingerprint, or None if it is not one."""
    try:
        encrypted = base64.b64decode(fingerprint, validate=True)
    except (binascii.Error, ValueError):
        return None
    if not encrypted or len(encrypted) % _AES_BLOCK:
        return None
    decryptor = Cipher(algorithms.AES(_FINGERPRINT_AES_KEY), modes.ECB()).decryptor()
    plain = decryptor.update(encrypted) + decryptor.finalize()
    block_padding = plain[-1]
    if not 0 < block_padding <= _AES_BLOCK:
        return None
    plain = plain[:-block_padding]
    if not plain or not 0 < plain[-1] <= len(plain):
        return None
    der = plain[: -plain[-1]]
    try:
        key = serialization.load_der_public_key(der)
    except (ValueError, UnsupportedAlgorithm):
        return None
    return key if isinstance(key, rsa.RSAPublicKey) else None
