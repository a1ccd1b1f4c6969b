"""The payload codec of ``temporal-payload-encryption-key``: AES-256-GCM, key file, key ids."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from temporalio.api.common.v1 import Payload

from stackflow.codec import ENCODING, KEY_ID, AesGcmCodec, PayloadKeyError, key_id, read_key_file
from stackflow.config import ConfigError, OperatorConfig, load_config
from stackflow.models.engine import Phase, ResourceWorkflowResult
from stackflow.temporal import DATA_CONVERTER, data_converter

KEY = bytes(range(32))
OTHER_KEY = bytes(range(1, 33))
PAYLOAD = Payload(metadata={"encoding": b"json/plain"}, data=b'{"password":"hunter2-secret"}')


async def test_round_trip_hides_data_and_metadata() -> None:
    codec = AesGcmCodec(KEY)
    [encoded] = await codec.encode([PAYLOAD])
    assert encoded.metadata["encoding"] == ENCODING
    assert encoded.metadata[KEY_ID] == key_id(KEY).encode()
    assert b"hunter2" not in encoded.SerializeToString()
    assert await codec.decode([encoded]) == [PAYLOAD]


async def test_each_encoding_uses_a_fresh_nonce() -> None:
    codec = AesGcmCodec(KEY)
    first, second = await codec.encode([PAYLOAD, PAYLOAD])
    assert first.data != second.data


async def test_wrong_key_names_both_key_ids() -> None:
    [encoded] = await AesGcmCodec(KEY).encode([PAYLOAD])
    with pytest.raises(PayloadKeyError) as raised:
        await AesGcmCodec(OTHER_KEY).decode([encoded])
    assert f"key id {key_id(KEY)}" in str(raised.value)
    assert f"has key id {key_id(OTHER_KEY)}" in str(raised.value)


@pytest.mark.parametrize(
    ("where", "tamper"),
    [
        ("ciphertext", lambda data: data[:20] + bytes([data[20] ^ 1]) + data[21:]),
        ("nonce", lambda data: bytes([data[0] ^ 1]) + data[1:]),
        ("truncated", lambda data: data[:-1]),
    ],
)
async def test_tampered_payload_fails_authentication(where: str, tamper: object) -> None:
    codec = AesGcmCodec(KEY)
    [encoded] = await codec.encode([PAYLOAD])
    altered = Payload(metadata=dict(encoded.metadata), data=tamper(encoded.data))  # type: ignore[operator]
    with pytest.raises(PayloadKeyError, match="fails authentication"):
        await codec.decode([altered])


async def test_payload_of_another_encoding_passes_through() -> None:
    # Histories written before the key was set stay readable.
    assert await AesGcmCodec(KEY).decode([PAYLOAD]) == [PAYLOAD]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (base64.b64encode(bytes(16)).decode(), "decodes to 16 bytes"),
        ("not base64 at all!", "32-byte key, base64-encoded"),
        ("", "decodes to 0 bytes"),
    ],
)
def test_bad_key_files(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "key"
    path.write_text(text)
    with pytest.raises(PayloadKeyError, match=problem):
        read_key_file(path)


def test_key_file_is_base64_with_surrounding_space(tmp_path: Path) -> None:
    path = tmp_path / "key"
    path.write_text(f"  {base64.b64encode(KEY).decode()}\n")
    assert read_key_file(path) == KEY


def test_config_key_names_the_file_and_problem(tmp_path: Path) -> None:
    config = tmp_path / "operator.yaml"
    config.write_text(f"temporal-payload-encryption-key: {tmp_path / 'missing'}\n")
    with pytest.raises(ConfigError) as raised:
        load_config(config, {})
    message = str(raised.value)
    assert "temporal-payload-encryption-key" in message
    assert "does not exist" in message
    assert "\n" not in message


async def test_data_converter_encrypts_only_with_the_key(tmp_path: Path) -> None:
    assert data_converter(OperatorConfig()) is DATA_CONVERTER
    path = tmp_path / "key"
    path.write_text(base64.b64encode(KEY).decode())
    converter = data_converter(
        OperatorConfig.model_validate({"temporal-payload-encryption-key": str(path)})
    )
    assert isinstance(converter.payload_codec, AesGcmCodec)
    assert converter.payload_converter_class is DATA_CONVERTER.payload_converter_class
    result = ResourceWorkflowResult(phase=Phase.DELETED, reconciles=3)
    [encoded] = await converter.encode([result])
    assert encoded.metadata["encoding"] == ENCODING
    assert await converter.decode([encoded], [ResourceWorkflowResult]) == [result]
