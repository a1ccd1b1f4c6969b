"""``temporal-payload-encryption-key`` end to end: the operator works, Temporal holds ciphertext.

kubesim, a Temporal dev server and ``stackflow run`` with a payload key: an Elasticsearch is
reconciled (its nodes up, its health ``unknown``: kubesim's Pods run no Elasticsearch), and no payload of any workflow history is readable JSON; each carries the codec's
encoding, the key's id and the id of the workflow it is bound to, the same key decodes them again, and ``stackflow replay``'s replayer
with the configuration's converter replays them.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from temporalio.api.common.v1 import Payload

from stackflow.cli.replay import replay_histories
from stackflow.codec import ENCODING, KEY_ID, WORKFLOW_ID, AesGcmCodec, key_id
from stackflow.config import load_config
from stackflow.models.engine import RESOURCE_WORKFLOW
from stackflow.temporal import data_converter
from tests.clusters import KUBESIM, ClusterTarget
from tests.e2e.es_status import nodes_up_health_unknown
from tests.e2e.harness import (
    ES,
    Operator,
    accept_trial,
    create_namespace,
    manifest,
    temporal_server,
    write_operator_config,
)
from tests.polling import eventually

pytestmark = [pytest.mark.timeout(400)]

VERSION = "8.15.0"
#: A healthy Elasticsearch is reconciled within this many seconds on a loaded 2-core machine.
WITHIN = 240.0
KEY = bytes(range(100, 132))


def payloads_of(node: Any) -> list[Payload]:
    """Every payload (a mapping with ``metadata`` and ``data``) of a history as JSON."""
    found: list[Payload] = []
    if isinstance(node, dict):
        if isinstance(node.get("metadata"), dict) and isinstance(node.get("data"), str):
            metadata = {key: base64.b64decode(value) for key, value in node["metadata"].items()}
            found.append(Payload(metadata=metadata, data=base64.b64decode(node["data"])))
        for child in node.values():
            found.extend(payloads_of(child))
    elif isinstance(node, list):
        for child in node:
            found.extend(payloads_of(child))
    return found


def is_json(data: bytes) -> bool:
    """Whether `data` parses as JSON."""
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


#: The fields of what the SDK's core records itself, plain, whatever the codec: a
#: ``workflow.patched`` marker, and a local activity marker's bookkeeping (its result is a
#: separate payload, encoded by the codec).
PATCH_MARKER_FIELDS = frozenset({"id", "deprecated"})
LOCAL_ACTIVITY_MARKER_FIELDS = frozenset(
    {
        "seq",
        "attempt",
        "activity_id",
        "activity_type",
        "complete_time",
        "backoff",
        "original_schedule_time",
        "activation_index",
    }
)


def left_plain_by_design(payload: Payload) -> bool:
    """Whether a payload that is no ciphertext is one the codec never sees: a search attribute
    (typed, indexed by the server) or the SDK core's marker bookkeeping."""
    if payload.metadata.get("type"):
        return True
    try:
        fields = json.loads(payload.data)
    except ValueError:
        return False
    if not isinstance(fields, dict):
        return False
    return set(fields) <= PATCH_MARKER_FIELDS or set(fields) <= LOCAL_ACTIVITY_MARKER_FIELDS


@pytest.mark.parametrize(
    ("payload", "plain_by_design"),
    [
        (Payload(metadata={"type": b"Keyword"}, data=b'"Ready"'), True),
        (Payload(data=b'{"id":"reconcile-step","deprecated":false}'), True),
        (Payload(data=b'{"seq":1,"attempt":1,"activity_type":"x.reconcile_step"}'), True),
        (Payload(data=b'{"id":"reconcile-step","password":"x"}'), False),
        (Payload(data=b'{"phase":"Ready","reconciles":1}'), False),
        (Payload(data=b'"just a string"'), False),
    ],
)
def test_left_plain_by_design(payload: Payload, plain_by_design: bool) -> None:
    assert left_plain_by_design(payload) is plain_by_design


def test_is_json_tells_json_from_ciphertext() -> None:
    assert is_json(b'{"phase": "Ready"}')
    assert not is_json(bytes(range(40)))


@pytest.mark.asyncio
async def test_encrypted_operator_runs_and_history_payloads_are_ciphertext(
    tmp_path: Path,
) -> None:
    key_file = tmp_path / "payload.key"
    key_file.write_text(base64.b64encode(KEY).decode() + "\n")
    async with (
        ClusterTarget(KUBESIM).open(tmp_path) as cluster,
        temporal_server() as temporal,
    ):
        kube = cluster.kube
        await accept_trial(kube, operator_namespace="elastic-system")
        config = write_operator_config(tmp_path / "operator.yaml", temporal=temporal)
        settings = yaml.safe_load(config.read_text())
        settings["temporal-payload-encryption-key"] = str(key_file)
        config.write_text(yaml.safe_dump(settings))
        operator = Operator(
            config=config, kubeconfig=cluster.operator_kubeconfig, log=tmp_path / "operator.log"
        )
        await operator.start()
        try:
            await create_namespace(kube, "sealed", in_scope=True)
            spec = {"version": VERSION, "nodeSets": [{"name": "default", "count": 1}]}
            await kube.create(
                ES, manifest("Elasticsearch", "es", "sealed", spec), namespace="sealed"
            )

            async def reconciled() -> bool:
                es = await kube.get(ES, namespace="sealed", name="es")
                return nodes_up_health_unknown(es)

            try:
                await eventually(
                    reconciled, within=WITHIN, what="Elasticsearch sealed/es reconciled"
                )
            except AssertionError as error:
                raise AssertionError(f"{error}\n{operator.tail()}") from None
            client = temporal.client
            payloads: list[Payload] = []
            async for execution in client.list_workflows():
                handle = client.get_workflow_handle(execution.id, run_id=execution.run_id)
                history = await handle.fetch_history()
                payloads.extend(payloads_of(json.loads(history.to_json())))
            # ``stackflow replay`` with the key reads the encrypted histories.
            resource_histories = client.list_workflows(
                f"WorkflowType='{RESOURCE_WORKFLOW}'"
            ).map_histories()
            replayed, failures = await replay_histories(
                resource_histories, converter=data_converter(load_config(config, {}))
            )
        finally:
            status = await operator.stop()
        assert status == 0, operator.tail()
    assert replayed > 0
    assert failures == []
    sealed = [payload for payload in payloads if payload.metadata.get("encoding") == ENCODING]
    plain = [
        payload
        for payload in payloads
        if payload.metadata.get("encoding") != ENCODING and not left_plain_by_design(payload)
    ]
    assert sealed, "no encrypted payload in any history"
    assert plain == [], sorted({(str(dict(p.metadata)), p.data) for p in plain})
    assert {payload.metadata[KEY_ID] for payload in sealed} == {key_id(KEY).encode()}
    # The SDK gave the codec a workflow for every payload: each is bound to one.
    unbound = [payload for payload in sealed if not payload.metadata.get(WORKFLOW_ID)]
    assert unbound == [], f"{len(unbound)} of {len(sealed)} payloads bound to no workflow"
    assert not any(is_json(payload.data) for payload in sealed)
    decoded = await AesGcmCodec(KEY).decode(sealed)
    assert all(is_json(payload.data) for payload in decoded if payload.data)
