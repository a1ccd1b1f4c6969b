"""The payload codec of ``temporal-payload-encryption-key``: AES-256-GCM, the key file (a
keyring), key ids, the binding of each ciphertext to its workflow, plaintext refused."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    ActivitySerializationContext,
    NexusSerializationContext,
    SerializationContext,
    WorkflowSerializationContext,
)

from stackflow.codec import (
    ENCODING,
    KEY_ID,
    WORKFLOW_ID,
    AesGcmCodec,
    PayloadKeyError,
    key_id,
    may_read,
    parse_keyring,
    read_key_file,
    read_keyring,
)
from stackflow.config import ConfigError, OperatorConfig, load_config
from stackflow.models.engine import Phase, ResourceWorkflowResult
from stackflow.temporal import DATA_CONVERTER, data_converter

KEY = bytes(range(32))
OTHER_KEY = bytes(range(1, 33))
PAYLOAD = Payload(metadata={"encoding": b"json/plain"}, data=b'{"password":"hunter2-secret"}')
#: `PAYLOAD` as the codec wrote it before workflow binding and keyrings (key id only): histories
#: hold such ciphertexts, and they must keep decoding.
WRITTEN_BEFORE_BINDING = Payload(
    metadata={"encoding": ENCODING, KEY_ID: b"630dcd2966c43366"},
    data=base64.b64decode(
        "30Vazi3tQWbjZETdp4pOT+W05IXTbqvDuXrQStcMu6rNy0UvNOAgMNDgyDLoOlWnHrKwjFSVnNVQw3RZBDT53dMga4txv/NaOx6VKLBlrGfiU4o="
    ),
)


def in_workflow(workflow_id: str) -> WorkflowSerializationContext:
    """The context the SDK gives the codec for payloads of the workflow `workflow_id`."""
    return WorkflowSerializationContext(namespace="default", workflow_id=workflow_id)


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


async def test_plain_payload_is_refused_naming_the_key_that_allows_it() -> None:
    codec = AesGcmCodec(KEY).with_context(in_workflow("es/team-a/quickstart"))
    with pytest.raises(PayloadKeyError) as raised:
        await codec.decode([PAYLOAD])
    message = str(raised.value)
    assert "not encrypted (encoding json/plain) in workflow es/team-a/quickstart" in message
    assert "temporal-payload-encryption-allow-plaintext: true" in message


async def test_plain_payload_passes_when_allowed() -> None:
    # Histories written before the key was set stay readable while migrating.
    codec = AesGcmCodec(KEY, allow_plaintext=True)
    assert await codec.decode([PAYLOAD]) == [PAYLOAD]
    [encoded] = await codec.encode([PAYLOAD])
    assert encoded.metadata["encoding"] == ENCODING


async def test_ciphertext_written_before_binding_still_decodes() -> None:
    for codec in (AesGcmCodec(KEY), AesGcmCodec(KEY).with_context(in_workflow("any"))):
        assert await codec.decode([WRITTEN_BEFORE_BINDING]) == [PAYLOAD]


async def test_payload_is_bound_to_its_workflow() -> None:
    codec = AesGcmCodec(KEY)
    [encoded] = await codec.with_context(in_workflow("es/a/one")).encode([PAYLOAD])
    assert encoded.metadata[WORKFLOW_ID] == b"es/a/one"
    assert await codec.with_context(in_workflow("es/a/one")).decode([encoded]) == [PAYLOAD]
    # A tool reading a history has no context: the payload is checked against its own id.
    assert await codec.decode([encoded]) == [PAYLOAD]
    with pytest.raises(PayloadKeyError) as raised:
        await codec.with_context(in_workflow("es/b/other")).decode([encoded])
    assert str(raised.value) == (
        "payload encrypted for workflow es/a/one read in workflow es/b/other: "
        "a ciphertext cannot move between workflows"
    )


@pytest.mark.parametrize(
    "metadata",
    [
        # Renamed to the workflow it was copied into.
        {WORKFLOW_ID: b"es/b/other"},
        # Its binding removed, to pass for a ciphertext written before binding.
        {WORKFLOW_ID: None},
    ],
    ids=["renamed", "unbound"],
)
async def test_rebinding_a_payload_fails_authentication(
    metadata: dict[str, bytes | None],
) -> None:
    [encoded] = await AesGcmCodec(KEY).with_context(in_workflow("es/a/one")).encode([PAYLOAD])
    altered = dict(encoded.metadata)
    for name, value in metadata.items():
        if value is None:
            del altered[name]
        else:
            altered[name] = value
    forged = Payload(metadata=altered, data=encoded.data)
    reader = AesGcmCodec(KEY).with_context(in_workflow("es/b/other"))
    with pytest.raises(PayloadKeyError, match="fails authentication"):
        await reader.decode([forged])


@pytest.mark.parametrize(
    ("context", "bound_to"),
    [
        (in_workflow("es/a/one"), "es/a/one"),
        (
            ActivitySerializationContext(
                namespace="default",
                activity_id="1",
                activity_type="stackflow.read",
                activity_task_queue="stackflow",
                workflow_id="es/a/one",
                workflow_type="ResourceWorkflow",
                is_local=False,
            ),
            "es/a/one",
        ),
        (NexusSerializationContext(endpoint="e", service="s", operation="o"), None),
    ],
    ids=["workflow", "activity", "nexus"],
)
async def test_the_context_names_the_workflow_bound_to(
    context: SerializationContext, bound_to: str | None
) -> None:
    [encoded] = await AesGcmCodec(KEY).with_context(context).encode([PAYLOAD])
    named = encoded.metadata[WORKFLOW_ID].decode() if WORKFLOW_ID in encoded.metadata else None
    assert named == bound_to


@pytest.mark.parametrize(
    ("bound_to", "reader", "allowed"),
    [
        ("es/a/one", "es/a/one", True),
        ("es/a/one", "es/a/two", False),
        # A Schedule's runs: Temporal appends the nominal time to the Schedule's workflow id.
        ("stackflow-telemetry", "stackflow-telemetry-2026-12-06T08:00:00Z", True),
        ("stackflow-telemetry", "stackflow-telemetry-2026-12-06T08:00:00+01:00", True),
        ("stackflow-telemetry", "stackflow-telemetry-x", False),
        ("stackflow-telemetry", "stackflow-telemetry-2026-12-06T08:00:00Z-2", False),
        ("stackflow-telemetry", "other-2026-12-06T08:00:00Z", False),
        ("es/a/one-2026-12-06T08:00:00Z", "es/a/one", False),
    ],
)
def test_may_read(bound_to: str, reader: str, allowed: bool) -> None:
    assert may_read(bound_to, reader) is allowed


async def test_keyring_rotation_old_keys_decrypt_the_first_encrypts() -> None:
    [before] = await AesGcmCodec(KEY).encode([PAYLOAD])
    rotated = AesGcmCodec.of_keyring([OTHER_KEY, KEY])
    assert rotated.key_ids == [key_id(OTHER_KEY), key_id(KEY)]
    assert await rotated.decode([before, WRITTEN_BEFORE_BINDING]) == [PAYLOAD, PAYLOAD]
    [after] = await rotated.encode([PAYLOAD])
    assert after.metadata[KEY_ID] == key_id(OTHER_KEY).encode()
    # Once the old key is dropped, its payloads name the key they need.
    with pytest.raises(PayloadKeyError) as raised:
        await AesGcmCodec(OTHER_KEY).decode([before])
    assert f"key id {key_id(KEY)}" in str(raised.value)


def test_keyring_file_one_key_a_line_first_encrypts(tmp_path: Path) -> None:
    path = tmp_path / "key"
    first, second = base64.b64encode(OTHER_KEY).decode(), base64.b64encode(KEY).decode()
    path.write_text(f"# rotated 2026-12\n{first}\n\n  {second}  \n{first}\n")
    assert read_keyring(path) == [OTHER_KEY, KEY]
    assert read_key_file(path) == OTHER_KEY


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            f"{base64.b64encode(KEY).decode()}\n{base64.b64encode(bytes(16)).decode()}\n",
            "line 2 must hold a 32-byte key, base64-encoded; it decodes to 16 bytes",
        ),
        (
            f"# comment\nnot base64!\n{base64.b64encode(KEY).decode()}\n",
            "line 2 must hold a 32-byte key, base64-encoded",
        ),
        ("# only a comment\n\n", "must hold a 32-byte key, base64-encoded; it holds none"),
    ],
    ids=["short-second-key", "bad-line", "no-key"],
)
def test_bad_keyrings_name_the_line(text: str, problem: str) -> None:
    with pytest.raises(PayloadKeyError) as raised:
        parse_keyring(text)
    assert str(raised.value) == problem


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (base64.b64encode(bytes(16)).decode(), "decodes to 16 bytes"),
        ("not base64 at all!", "32-byte key, base64-encoded"),
        ("", "it holds none"),
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
    # The SDK binds the payloads of a workflow through the converter's context.
    in_one = converter.with_context(in_workflow("es/a/one"))
    [bound] = await in_one.encode([result])
    assert bound.metadata[WORKFLOW_ID] == b"es/a/one"
    with pytest.raises(PayloadKeyError, match="cannot move between workflows"):
        await converter.with_context(in_workflow("es/a/two")).decode([bound])


@pytest.mark.parametrize("allowed", [False, True])
async def test_data_converter_allows_plaintext_only_when_configured(
    tmp_path: Path, allowed: bool
) -> None:
    path = tmp_path / "key"
    path.write_text(base64.b64encode(KEY).decode())
    converter = data_converter(
        OperatorConfig.model_validate(
            {
                "temporal-payload-encryption-key": str(path),
                "temporal-payload-encryption-allow-plaintext": allowed,
            }
        )
    )
    [plain] = await DATA_CONVERTER.encode([ResourceWorkflowResult(phase=Phase.READY, reconciles=1)])
    if allowed:
        assert await converter.decode([plain], [ResourceWorkflowResult]) == [
            ResourceWorkflowResult(phase=Phase.READY, reconciles=1)
        ]
    else:
        with pytest.raises(PayloadKeyError, match="not encrypted"):
            await converter.decode([plain], [ResourceWorkflowResult])
