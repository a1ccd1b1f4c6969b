"""What a cluster takes from the StackConfigPolicies targeting it (``<es>-es-policy-config``).

The policy controller merges the policies and writes the Secret; the cluster's own reconcile
reads it here, as ECK does: the policies' ``elasticsearch.config`` is merged into every node
set's ``elasticsearch.yml`` over the node set's ``config`` (a policy wins a setting both name),
each ``secretMounts[]`` entry becomes a Secret volume of the Elasticsearch container (the
policy controller's copy ``<es>-es-scp-<hash>`` of the policy namespace's Secret), and the
policies' ``securityRoles`` join the file realm's ``roles.yml``.
"""

from __future__ import annotations

from typing import Any

from stackflow.stack.elasticsearch.context import BuildContext
from stackflow.stack.naming import hash_object
from stackflow.stack.policies.stack_config.reading import (
    PolicyElasticsearchConfig,
    read_es_policy_config,
)
from stackflow.stack.policies.stack_config.secrets import (
    ES_CONFIG_MOUNTS_HASH_ANNOTATION,
    es_policy_config_secret_name,
    es_secret_mount_copy_name,
)

__all__ = ["policy_config", "policy_pod_annotations", "secret_mount_volumes"]


def policy_config(context: BuildContext) -> PolicyElasticsearchConfig:
    """The merged policy settings of the cluster (empty when no policy targets it)."""
    return read_es_policy_config(
        context.existing.get(("Secret", es_policy_config_secret_name(context.name)))
    )


def secret_mount_volumes(
    context: BuildContext,
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(volume, volume mount) of every policy secret mount: the policy controller's copy of the
    named Secret in the cluster's namespace (``<es>-es-scp-<hash>``), read-only at its
    ``mountPath``. The volume is named after the Secret's ``HashObject`` (a Secret name may not
    be a valid volume name)."""
    pairs = []
    for secret_name, mount_path in policy_config(context).secret_mounts:
        volume = f"scp-secret-mount-{hash_object(secret_name)}"
        copy_name = es_secret_mount_copy_name(context.name, secret_name)
        pairs.append(
            (
                {"name": volume, "secret": {"secretName": copy_name, "optional": False}},
                {"name": volume, "mountPath": mount_path, "readOnly": True},
            )
        )
    return pairs


def policy_pod_annotations(context: BuildContext) -> dict[str, str]:
    """The policy-config hash on the pod template (as ECK): the policy controller compares it
    with its Secret's to tell whether the cluster took the policies' settings and mounts."""
    digest = policy_config(context).config_mounts_hash
    return {ES_CONFIG_MOUNTS_HASH_ANNOTATION: digest} if digest else {}
