"""Desired state of a stack application (Kibana, APM Server, …): every child manifest, in apply order.

One mechanism for every kind in :data:`stackflow.stack.apps.kinds.APP_KINDS`: the kind's table entry
names the children and its ``parts`` hook supplies the kind's own settings. ``desired_children`` is pure
apart from the injected randomness (``random_secret``, and fresh keys when no certificate is
reusable): generated values and certificates found in ``existing`` are kept, so building again from
the output of a build returns identical manifests.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from stackflow.stack.apps.associations import (
    confs_from_annotations,
    parse_confs,
    referenced_secret_names,
)
from stackflow.stack.apps.context import AppContext, AppParts, ExistingObjects
from stackflow.stack.apps.kinds import app_kind
from stackflow.stack.apps.settings import merge_layers, read_yaml_settings, render_yaml
from stackflow.stack.apps.tls import http_certificate_secrets, http_service_name
from stackflow.stack.apps.workload import http_port_name, workload
from stackflow.stack.certificates import CertificateSettings
from stackflow.stack.objects import Manifest, encode_secret_data
from stackflow.stack.pods import content_hash
from stackflow.stack.policies.stack_config.reading import read_kb_policy_config
from stackflow.stack.policies.stack_config.secrets import kb_policy_config_secret_name
from stackflow.stack.services import service

RANDOM_SECRET_BYTES = 32


def random_secret() -> str:
    """Return a new random key or token (64 hex characters)."""
    return secrets.token_hex(RANDOM_SECRET_BYTES)


def services(context: AppContext) -> list[Manifest]:
    """Return the HTTP Service (when the object serves HTTP) and, for Logstash, the user's Services."""
    result: list[Manifest] = []
    user_services = {
        str(entry.get("name")): entry
        for entry in (context.spec.get("services") or [] if context.kind.user_services else [])
        if entry.get("name")
    }
    if context.serves_http:
        default_spec: dict[str, Any] = {
            "type": "ClusterIP",
            "selector": context.selector_labels(),
            "ports": [
                {
                    "name": http_port_name(context),
                    "port": context.kind.http_port,
                    "protocol": "TCP",
                    "targetPort": context.kind.http_port,
                }
            ],
        }
        # A user Service named like the default one (Logstash ``api``) customises it.
        own = user_services.pop(context.kind.http_service_parts[-1], None)
        template = (own or {}).get("service") or (context.spec.get("http") or {}).get("service")
        result.append(
            service(
                context, http_service_name(context), default_spec=default_spec, template=template
            )
        )
    for name in sorted(user_services):
        result.append(
            service(
                context,
                context.child_name(name),
                default_spec={"selector": context.selector_labels()},
                template=user_services[name].get("service"),
            )
        )
    return result


def config_settings(context: AppContext, parts: AppParts) -> dict[str, Any]:
    """Return the merged settings: operator defaults < ``configRef`` Secret < ``spec.config``
    < the StackConfigPolicies' ``kibana.config`` (Kibana only, merged last as ECK)."""
    referenced: dict[str, Any] = {}
    reference = (context.spec.get("configRef") or {}).get("secretName")
    if reference:
        data = context.existing_secret_data(str(reference))
        key = context.render(context.kind.config_file)
        referenced = read_yaml_settings(
            data.get(key), source=f"spec.configRef: key {key} of Secret {reference}"
        )
    return merge_layers(
        parts.config, referenced, context.spec.get("config"), policy_settings(context)
    )


def policy_settings(context: AppContext) -> dict[str, Any]:
    """The policy controller's ``<kb>-kb-policy-config`` settings of a Kibana (empty for the
    other kinds, which no policy configures)."""
    if context.kind.kind != "Kibana":
        return {}
    name = kb_policy_config_secret_name(context.name)
    return read_kb_policy_config(context.existing.get(("Secret", name)))


def config_secret(context: AppContext, parts: AppParts) -> Manifest:
    """Return the config Secret: the rendered config file plus the kind's extra keys."""
    data: dict[str, bytes | str] = {
        context.render(context.kind.config_file): render_yaml(config_settings(context, parts))
    }
    data.update(parts.extra_config_data)
    return context.secret(
        context.child_name(*context.kind.config_secret_parts), encode_secret_data(data)
    )


def config_hash(context: AppContext, pod_secrets: list[Manifest]) -> str:
    """Return the hash of everything the pods read at start-up: config Secrets and association Secrets.

    It goes into a pod-template annotation, so any change rolls the pods.
    """
    inputs: dict[str, Any] = {
        str(secret["metadata"]["name"]): secret.get("data") for secret in pod_secrets
    }
    for name in referenced_secret_names(context.associations):
        current = context.existing.get(("Secret", name))
        inputs[name] = (current or {}).get("data")
    return content_hash(inputs)


def desired_children(
    kind: str,
    obj: Mapping[str, Any],
    *,
    existing: ExistingObjects,
    now: datetime,
    association_confs: Mapping[str, Mapping[str, Any]] | None = None,
    random_secret: Callable[[], str] = random_secret,
    certificate_settings: CertificateSettings | None = None,
    with_workload: bool = True,
) -> list[Manifest]:
    """Return every child manifest of the application ``obj`` of ``kind``, in apply order.

    ``kind`` is the Kubernetes kind (``Kibana``) or its short name (``kb``). ``existing`` maps
    ``(kind, name)`` to the current objects of the namespace (children and referenced Secrets).
    ``association_confs`` maps association annotation keys to their parsed confs; ``None`` reads
    them from ``obj``'s annotations. Services come first, the workload last, so that everything the
    pods mount exists before they start. Without ``with_workload`` (a Fleet-mode Agent waiting for
    Kibana's Fleet API, see :mod:`stackflow.stack.apps.fleet`) only the Services and the HTTP
    certificates are returned, as ECK makes them before it asks Fleet: no workload nor its config.
    """
    confs = confs_from_annotations(obj) if association_confs is None else association_confs
    context = AppContext(
        kind=app_kind(kind),
        obj=obj,
        existing=existing,
        now=now,
        associations=parse_confs(confs),
        random_secret=random_secret,
        certificate_settings=certificate_settings or CertificateSettings(),
    )
    parts = context.kind.parts(context)
    children: list[Manifest] = [*services(context), *parts.services]
    children += http_certificate_secrets(context)
    if not with_workload:
        return children
    pod_secrets = [config_secret(context, parts), *parts.secrets]
    children += pod_secrets
    children.append(workload(context, parts=parts, config_hash=config_hash(context, pod_secrets)))
    return children
