"""What an AutoOps policy asks of its agents: its validity, its ``autoOpsRef`` Secret and the
user's configuration layers (``spec.config``, ``spec.configRef``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from activities.context import ControllerContext
from activities.errors import InvalidSpecError
from stackflow.models.kinds import CONFIGMAPS, SECRETS
from stackflow.models.objects import view
from stackflow.stack.objects import decode_secret_data
from stackflow.stack.policies.autoops_agent import (
    AGENT_CONFIG_FILE,
    REF_SECRET_KEYS,
)
from stackflow.stack.policies.validation import validate_autoops_agent_policy

__all__ = ["CONFIG_FILE", "REQUIRED_REF_KEYS", "ref_secret_data", "user_config", "validate_policy"]

CONFIG_FILE = AGENT_CONFIG_FILE
#: The ``autoOpsRef`` Secret keys a policy cannot do without (ECK: the policy is Invalid).
REQUIRED_REF_KEYS = REF_SECRET_KEYS[:3]


async def user_config(
    context: ControllerContext, policy: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The user's agent configuration layers: ``spec.config``, and the ``autoops_es.yml`` of the
    ``configRef`` Secret or ConfigMap (policy namespace), each empty when not set."""
    spec = policy.get("spec") or {}
    inline = dict(spec.get("config") or {})
    ref = spec.get("configRef") or {}
    namespace = view(policy).namespace
    text: str | None = None
    if ref.get("secretName"):
        source = f"Secret {ref['secretName']}"
        secret = await context.scoped.get_or_none(
            SECRETS, namespace=namespace, name=str(ref["secretName"])
        )
        raw = decode_secret_data(secret).get(CONFIG_FILE)
        text = None if raw is None else raw.decode()
    elif ref.get("configMapName"):
        source = f"ConfigMap {ref['configMapName']}"
        config_map = (
            await context.scoped.get_or_none(
                CONFIGMAPS, namespace=namespace, name=str(ref["configMapName"])
            )
            or {}
        )
        text = (config_map.get("data") or {}).get(CONFIG_FILE)
    else:
        return inline, {}
    if text is None:
        raise InvalidSpecError(f"spec.configRef: {source} has no {CONFIG_FILE}")
    loaded = yaml.safe_load(text) or {}
    if not isinstance(loaded, dict):
        raise InvalidSpecError(f"spec.configRef: {CONFIG_FILE} is not a mapping")
    return inline, loaded


async def ref_secret_data(
    context: ControllerContext, policy: Mapping[str, Any]
) -> dict[str, bytes]:
    """The ``autoOpsRef`` Secret's data; InvalidSpecError, with ECK's message, when it is
    missing or lacks a required key."""
    meta = view(policy)
    name = str(((policy.get("spec") or {}).get("autoOpsRef") or {}).get("secretName") or "")
    if not name:
        raise InvalidSpecError("secret name cannot be empty")
    secret = await context.scoped.get_or_none(SECRETS, namespace=meta.namespace, name=name)
    if secret is None:
        raise InvalidSpecError(f"configuration secret {meta.namespace}/{name} not found")
    data = decode_secret_data(secret)
    for key in REQUIRED_REF_KEYS:
        if not data.get(key):
            raise InvalidSpecError(
                f"missing required key {key} in configuration secret {meta.namespace}/{name}"
            )
    return data


async def validate_policy(context: ControllerContext, policy: Mapping[str, Any]) -> None:
    """InvalidSpecError unless the policy is usable; the agent versions allowed depend on the
    operator's license (ECK: Basic from 9.2.4, Enterprise from 9.2.1)."""
    enterprise = (await context.licenses.verdict()).licensed
    problems = validate_autoops_agent_policy(policy, enterprise=enterprise)
    if problems:
        raise InvalidSpecError("; ".join(f"{field}: {message}" for field, message in problems))
