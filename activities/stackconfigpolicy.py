"""The StackConfigPolicy controller's activities: reconcile, finalize and its flip mapper.

A reconcile reads the policy, the clusters and Kibana instances it targets now and the Secrets it
soft-owns from before, then, for each of those resources, every policy that may target it; the
pure rules of the ``stackflow.stack.policies.stack_config`` package merge them by weight (or find
a conflict) and build the Secrets, which are written here. A resource no policy targets any more gets an
empty file-settings state (a new version) and loses its policy-config Secret. Each cluster is
asked which file-settings version it applied; one that cannot be asked (the operator outside the
cluster does not dial it) is reported ``ApplyingChanges``. The policy's status is written last.

Every write goes through the scoped client: a resource whose namespace left scope is neither
counted nor touched (DESIGN principle 4).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from activities.binding import Family, FamilyActivities, Primary
from activities.context import ControllerContext
from activities.endpoints import operator_endpoint
from activities.errors import InvalidSpecError
from activities.generic import invalid_spec_status
from activities.unknown_fields import warn_unknown_fields
from stackflow.api.kinds import kind_info
from stackflow.controllers.stackconfigpolicy import (
    POLICY_SECRET_SELECTOR,
    STACK_CONFIG_POLICY,
    STACK_CONFIG_POLICY_CONTROLLER,
)
from stackflow.elastic import ElasticsearchError, ElasticsearchUnavailable
from stackflow.kube import errors
from stackflow.models.engine import (
    FinalizeInput,
    FinalizeResult,
    FlipDirectionName,
    Phase,
    ReconcileInput,
    ReconcileResult,
)
from stackflow.models.kinds import CONFIGMAPS, SECRETS, STATEFULSETS
from stackflow.models.objects import view
from stackflow.scope.selector import SelectorError
from stackflow.stack.labels import ES_CLUSTER_NAME_LABEL
from stackflow.stack.naming import Namer
from stackflow.stack.objects import controller_owner_reference, decode_secret_data
from stackflow.stack.pods import content_hash
from stackflow.stack.policies.stack_config.merge import (
    ElasticsearchMerge,
    MergeConflictError,
    merge_elasticsearch,
    merge_kibana,
)
from stackflow.stack.policies.stack_config.owners import secret_owners
from stackflow.stack.policies.stack_config.policy import Policy, parse_policy
from stackflow.stack.policies.stack_config.secrets import (
    ES_CONFIG_MOUNTS_HASH_ANNOTATION,
    KIBANA_NAME_LABEL,
    es_config_mounts_hash,
    es_policy_config_secret,
    es_policy_config_secret_name,
    es_secret_mount_copy,
    es_secret_mount_copy_name,
    file_settings_secret,
    file_settings_secret_name,
    is_es_secret_mount_copy_name,
    kb_policy_config_secret,
    kb_policy_config_secret_name,
)
from stackflow.stack.policies.stack_config.status import (
    ResourceStatus,
    kibana_applied,
    policy_status,
    resource_phase,
    status_patch,
)
from stackflow.stack.policies.stack_config.targeting import (
    ELASTICSEARCH,
    KIBANA,
    Target,
    policies_for,
    targets,
)
from stackflow.stack.policies.stack_config.variables import variable_sources, variables_of
from stackflow.stack.policies.validation import validate_stack_config_policy

__all__ = [
    "FAMILIES",
    "NOT_READY_REQUEUE_SECONDS",
    "READY_RECHECK_SECONDS",
    "StackConfigPolicyActivities",
]

logger = logging.getLogger(__name__)

#: How soon a policy whose resources have not all applied it is looked at again.
NOT_READY_REQUEUE_SECONDS = 30.0
#: How often a ready policy looks again for resources it does not know yet: a new cluster or a
#: label that now matches wakes no policy (the owner mappers see only the object itself).
READY_RECHECK_SECONDS = 120.0

_KINDS = {
    ELASTICSEARCH: kind_info("Elasticsearch").resource,
    KIBANA: kind_info("Kibana").resource,
}

_KB_NAMER = Namer("kb")

TargetKey = tuple[str, str, str]
"""(type, namespace, name) of a targeted resource."""


_VARIABLES_PREFIX = "spec.variablesFrom:"


class VariablesError(Exception):
    """A non-optional ``spec.variablesFrom`` source of a policy cannot be read."""


async def _variables(context: ControllerContext, obj: Mapping[str, Any]) -> dict[str, str]:
    """The policy's variables, its ``variablesFrom`` sources read in order (a later one wins).

    InvalidSpecError for a source in another namespace when the policy is not in the operator
    namespace (ECK's webhook forbids it); VariablesError for a missing non-optional source.
    """
    policy_namespace = view(obj).namespace
    variables: dict[str, str] = {}
    for source in variable_sources(obj):
        if source.namespace != policy_namespace != context.operator_namespace:
            raise InvalidSpecError(
                f"spec.variablesFrom: {source.kind} {source.namespace}/{source.name}: only a "
                "policy in the operator namespace may read variables from another namespace"
            )
        resource = SECRETS if source.kind == "Secret" else CONFIGMAPS
        try:
            found = await context.scoped.get(resource, namespace=source.namespace, name=source.name)
        except errors.NotFound:
            if source.optional:
                continue
            raise VariablesError(
                f'{_VARIABLES_PREFIX} {source.kind} "{source.namespace}/{source.name}" '
                "not found (set optional: true to go on without it)"
            ) from None
        variables.update(variables_of(source, found))
    return variables


async def _resolved_policy(context: ControllerContext, obj: Mapping[str, Any]) -> Policy:
    """The policy of ``obj`` with its variables substituted (errors as ``_variables``)."""
    return parse_policy(obj, await _variables(context, obj))


class _Policies:
    """The policies that may target resources of one namespace, read once per namespace."""

    def __init__(self, context: ControllerContext, *, excluded: str | None = None) -> None:
        self.context = context
        self.excluded = excluded
        self._by_namespace: dict[str, list[Policy]] = {}

    async def _in(self, namespace: str) -> list[Policy]:
        if namespace not in self._by_namespace:
            listed = await self.context.scoped.list(STACK_CONFIG_POLICY, namespace=namespace)
            policies = []
            for obj in listed["items"]:
                if view(obj).deletion_timestamp:
                    continue
                try:
                    policy = await _resolved_policy(self.context, obj)
                except (SelectorError, InvalidSpecError, VariablesError):
                    continue  # an invalid policy targets nothing (its own reconcile says why)
                if policy.key != self.excluded:
                    policies.append(policy)
            self._by_namespace[namespace] = policies
        return self._by_namespace[namespace]

    async def for_namespace(self, namespace: str) -> list[Policy]:
        """Every policy of the operator namespace and of ``namespace``."""
        operator = self.context.operator_namespace
        found = list(await self._in(operator))
        if namespace != operator:
            found.extend(await self._in(namespace))
        return found


async def _write(
    context: ControllerContext, current: Mapping[str, Any] | None, desired: dict[str, Any]
) -> bool:
    """Create or replace a Secret built whole by the pure rules; no write when it is unchanged."""
    namespace = view(desired).namespace
    if current is None:
        await context.scoped.create(SECRETS, desired, namespace=namespace)
        return True
    if desired == current:
        return False
    await context.scoped.replace(SECRETS, desired, namespace=namespace, name=view(desired).name)
    return True


async def _delete(context: ControllerContext, current: Mapping[str, Any] | None) -> bool:
    if current is None:
        return False
    try:
        await context.scoped.delete(
            SECRETS, namespace=view(current).namespace, name=view(current).name
        )
    except errors.NotFound:
        return False
    return True


def _first_version(context: ControllerContext) -> int:
    # ECK starts a file-settings document at the current time in nanoseconds.
    return int(context.clock().timestamp() * 1_000_000_000)


async def _applied_version(
    context: ControllerContext, es: Mapping[str, Any], expected: int
) -> ResourceStatus:
    """Ask the cluster which file-settings version it applied; ApplyingChanges when it cannot
    be asked (no internal user yet, not reachable, or not dialled outside the cluster)."""
    namespace, name = view(es).namespace, view(es).name
    endpoint = await operator_endpoint(context, es)
    if endpoint is None:
        return ResourceStatus(phase="ApplyingChanges", expected_version=expected)
    async with context.elasticsearch_session(endpoint) as api:
        try:
            state = await api.file_settings_state()
        except (ElasticsearchUnavailable, ElasticsearchError) as error:
            logger.info("cluster %s/%s not asked for its file settings: %s", namespace, name, error)
            return ResourceStatus(phase="ApplyingChanges", expected_version=expected)
    return resource_phase(
        expected_version=expected, reported_version=state.version, reported_errors=state.errors
    )


#: Ours, not ECK's: a digest of the policies' secure settings Secrets on ``<es>-es-file-settings``.
#: An edit of one wakes the policy (a reference), which changes this annotation; the file-settings
#: Secret carries the cluster-name label, so the cluster wakes and rebuilds its keystore.
SECURE_SETTINGS_CONTENT_ANNOTATION = "stackflow.dev/policy-secure-settings-digest"


async def _secure_settings_digest(
    context: ControllerContext, sources: Sequence[Mapping[str, Any]]
) -> str:
    """A digest of the content of the secure settings Secrets (an absent one counts as empty)."""
    contents = []
    for source in sources:
        found = await context.scoped.get_or_none(
            SECRETS, namespace=str(source["namespace"]), name=str(source["secretName"])
        )
        contents.append([source["namespace"], source["secretName"], (found or {}).get("data")])
    return content_hash(contents)


async def _apply_file_settings(
    context: ControllerContext,
    target: Target,
    merged: ElasticsearchMerge | None,
    owner: Mapping[str, Any],
) -> int | None:
    """Write the cluster's file-settings Secret for ``merged`` (None: reset it, if a policy made
    it; the Elasticsearch controller owns an unmarked one); the version written, if any.

    The Elasticsearch controller creates the Secret of a new cluster and another policy's
    workflow may write it at the same moment: a create that finds it, or a replace that finds it
    changed, is built again once from a fresh read (the versioning rule needs the current one).
    """
    name = file_settings_secret_name(target.name)
    for attempt in range(2):
        current = await context.scoped.get_or_none(SECRETS, namespace=target.namespace, name=name)
        if merged is None and not secret_owners(current):
            return None
        desired, version = file_settings_secret(
            current,
            namespace=target.namespace,
            es_name=target.name,
            merged=merged,
            first_version=_first_version(context),
            owner_reference=owner,
        )
        if merged is not None and merged.secure_settings:
            desired["metadata"].setdefault("annotations", {})[
                SECURE_SETTINGS_CONTENT_ANNOTATION
            ] = await _secure_settings_digest(context, merged.secure_settings)
        try:
            await _write(context, current, desired)
        except (errors.AlreadyExists, errors.Conflict):
            if attempt:
                raise
            continue
        return version
    return None


async def _sync_elasticsearch(
    context: ControllerContext, es: Mapping[str, Any], policies: Sequence[Policy]
) -> ResourceStatus | None:
    """Bring one cluster's policy Secrets in line with every policy targeting it; its status
    entry, or None when no policy targets it (its Secrets were reset)."""
    target = Target.of(ELASTICSEARCH, es)
    try:
        ordered = policies_for(target, policies, operator_namespace=context.operator_namespace)
        merged = merge_elasticsearch(ordered) if ordered else None
    except MergeConflictError as error:
        # Nothing is written: which policy should win is the user's call.
        return ResourceStatus(phase="Conflict", error=str(error))
    owner = controller_owner_reference(
        {"apiVersion": es.get("apiVersion"), "kind": es.get("kind"), "metadata": es["metadata"]}
    )
    sources: list[dict[str, Any]] = []
    if merged is not None:
        try:
            sources = await _mount_sources(context, merged)
        except MountSourceError as error:
            # Nothing is written for the cluster: its Pods would wait for a Secret never copied.
            return ResourceStatus(phase="Error", error=str(error))
    config_name = es_policy_config_secret_name(target.name)
    config_current = await context.scoped.get_or_none(
        SECRETS, namespace=target.namespace, name=config_name
    )
    version = await _apply_file_settings(context, target, merged, owner)
    if merged is None:
        if secret_owners(config_current):
            await _delete(context, config_current)
        await _sync_mount_copies(context, target, sources, owners=(), owner=owner)
        return None
    # The copies first: the policy-config Secret wakes the cluster, whose Pods mount them.
    await _sync_mount_copies(context, target, sources, owners=merged.owners, owner=owner)
    await _write(
        context,
        config_current,
        es_policy_config_secret(
            config_current,
            namespace=target.namespace,
            es_name=target.name,
            merged=merged,
            owner_reference=owner,
        ),
    )
    if version is None:  # not reached: a merge is always written
        return ResourceStatus(phase="ApplyingChanges")
    if (merged.config or merged.secret_mounts) and not await _config_taken(
        context, target, es_config_mounts_hash(merged)
    ):
        return ResourceStatus(phase="ApplyingChanges", expected_version=version)
    return await _applied_version(context, es, version)


class MountSourceError(Exception):
    """A ``secretMounts[]`` Secret is not in the namespace of the policy that mounts it."""


async def _mount_sources(
    context: ControllerContext, merged: ElasticsearchMerge
) -> list[dict[str, Any]]:
    """The ``secretMounts`` Secrets of the merged policies, each read from the namespace of the
    policy that mounts it (MountSourceError naming the first one that is not there)."""
    sources = []
    for mount in merged.secret_mounts:
        name = str(mount["secretName"])
        namespace = merged.mount_namespaces.get(name, "")
        found = (
            await context.scoped.get_or_none(SECRETS, namespace=namespace, name=name)
            if namespace
            else None
        )
        if found is None:
            raise MountSourceError(
                f'spec.elasticsearch.secretMounts: Secret "{namespace}/{name}" not found'
            )
        sources.append(found)
    return sources


async def _sync_mount_copies(
    context: ControllerContext,
    target: Target,
    sources: Sequence[Mapping[str, Any]],
    *,
    owners: Sequence[str],
    owner: Mapping[str, Any],
) -> None:
    """Copy each ``secretMounts`` Secret into the cluster's namespace as ``<es>-es-scp-<hash>``
    (kept in sync with its source) and delete the policy-made copies no longer mounted."""
    listed = await context.scoped.list(
        SECRETS,
        namespace=target.namespace,
        label_selector=f"{POLICY_SECRET_SELECTOR},{ES_CLUSTER_NAME_LABEL}={target.name}",
    )
    current = {
        view(item).name: item
        for item in listed["items"]
        if is_es_secret_mount_copy_name(target.name, view(item).name)
    }
    wanted = set()
    for source in sources:
        name = es_secret_mount_copy_name(target.name, view(source).name)
        wanted.add(name)
        # Read whole (a listed item may lack kind/apiVersion): an unchanged copy is not rewritten.
        existing = await context.scoped.get_or_none(SECRETS, namespace=target.namespace, name=name)
        desired = es_secret_mount_copy(
            existing,
            source,
            namespace=target.namespace,
            es_name=target.name,
            owners=owners,
            owner_reference=owner,
        )
        await _write(context, existing, desired)
    for name, secret in sorted(current.items()):
        if name not in wanted:
            await _delete(context, secret)


async def _config_taken(context: ControllerContext, target: Target, digest: str) -> bool:
    """Whether every StatefulSet of the cluster carries the policies' config/mounts hash on its
    pod template (the Elasticsearch controller rendered them; the Pods roll from there)."""
    listed = await context.scoped.list(
        STATEFULSETS,
        namespace=target.namespace,
        label_selector=f"{ES_CLUSTER_NAME_LABEL}={target.name}",
    )
    templates = [
        view((item.get("spec") or {}).get("template")).annotations for item in listed["items"]
    ]
    return bool(templates) and all(
        annotations.get(ES_CONFIG_MOUNTS_HASH_ANNOTATION) == digest for annotations in templates
    )


async def _sync_kibana(
    context: ControllerContext, kb: Mapping[str, Any], policies: Sequence[Policy]
) -> ResourceStatus | None:
    """Bring one Kibana's policy Secret in line with every policy targeting it; its status entry,
    or None when no policy targets it (its Secret was deleted)."""
    target = Target.of(KIBANA, kb)
    try:
        ordered = policies_for(target, policies, operator_namespace=context.operator_namespace)
    except MergeConflictError as error:
        return ResourceStatus(phase="Conflict", error=str(error))
    name = kb_policy_config_secret_name(target.name)
    current = await context.scoped.get_or_none(SECRETS, namespace=target.namespace, name=name)
    if not ordered:
        if secret_owners(current):
            await _delete(context, current)
        return None
    owner = controller_owner_reference(
        {"apiVersion": kb.get("apiVersion"), "kind": kb.get("kind"), "metadata": kb["metadata"]}
    )
    merged = merge_kibana(ordered)
    await _write(
        context,
        current,
        kb_policy_config_secret(
            current,
            namespace=target.namespace,
            kb_name=target.name,
            merged=merged,
            owner_reference=owner,
        ),
    )
    # Applied once the Kibana controller rendered the settings into kibana.yml (its Pods roll
    # on that Secret's hash).
    config = await context.scoped.get_or_none(
        SECRETS, namespace=target.namespace, name=_KB_NAMER.suffix(target.name, "config")
    )
    rendered = yaml.safe_load(decode_secret_data(config).get("kibana.yml") or b"{}")
    applied = kibana_applied(merged.config or {}, rendered if isinstance(rendered, Mapping) else {})
    return ResourceStatus(phase="Ready" if applied else "ApplyingChanges")


def _owned_target(secret: Mapping[str, Any]) -> TargetKey | None:
    """The resource a policy-made Secret belongs to, from its labels."""
    meta = view(secret)
    cluster = meta.labels.get(ES_CLUSTER_NAME_LABEL)
    if cluster and (
        meta.name in (file_settings_secret_name(cluster), es_policy_config_secret_name(cluster))
        or is_es_secret_mount_copy_name(cluster, meta.name)
    ):
        return (ELASTICSEARCH, meta.namespace, cluster)
    kibana = meta.labels.get(KIBANA_NAME_LABEL)
    if kibana and meta.name == kb_policy_config_secret_name(kibana):
        return (KIBANA, meta.namespace, kibana)
    return None


async def _owned_targets(context: ControllerContext, policy_key: str) -> set[TargetKey]:
    """The resources whose policy Secrets name ``policy_key`` among their owners (in scope)."""
    listed = await context.scoped.list(SECRETS, label_selector=POLICY_SECRET_SELECTOR)
    owned: set[TargetKey] = set()
    for secret in listed["items"]:
        if policy_key in {f"{ns}/{name}" for ns, name in secret_owners(secret)}:
            target = _owned_target(secret)
            if target is not None:
                owned.add(target)
    return owned


async def _sync(
    context: ControllerContext,
    keys: set[TargetKey],
    policies: _Policies,
) -> dict[str, dict[str, ResourceStatus]]:
    """Sync every resource of ``keys``; the status entries of those a policy still targets."""
    details: dict[str, dict[str, ResourceStatus]] = {ELASTICSEARCH: {}, KIBANA: {}}
    for type_, namespace, name in sorted(keys):
        obj = await context.scoped.get_or_none(_KINDS[type_], namespace=namespace, name=name)
        if obj is None:
            continue  # gone (its Secrets go with it) or out of scope (not touched)
        candidates = await policies.for_namespace(namespace)
        sync = _sync_elasticsearch if type_ == ELASTICSEARCH else _sync_kibana
        entry = await sync(context, obj, candidates)
        if entry is not None:
            details[type_][f"{namespace}/{name}"] = entry
    return details


async def _variables_missing(
    context: ControllerContext, request: ReconcileInput, obj: Mapping[str, Any], message: str
) -> ReconcileResult:
    """A variables source is missing: nothing is written for the policy, whose phase is
    ``Error`` with the message in a failed ``ReconciliationComplete`` condition; retried."""
    ref = request.ref
    patch = invalid_spec_status(obj, message=message, now=context.clock())
    patch["status"]["phase"] = "Error"
    current = obj.get("status") or {}
    if {**current, **patch["status"]} != current:
        await context.scoped.patch_status(
            ref.resource, patch, namespace=ref.namespace, name=ref.name
        )
    return ReconcileResult(
        phase=Phase.ERROR,
        message=message,
        requeue_after_seconds=NOT_READY_REQUEUE_SECONDS,
        observed_generation=view(obj).generation,
    )


class StackConfigPolicyActivities(FamilyActivities):
    """The StackConfigPolicy controller's activities, bound to the process's
    ``ControllerContext``."""

    async def reconcile(self, request: ReconcileInput, primary: Primary) -> ReconcileResult:
        """Apply one policy (merged with the others targeting the same resources) and report it."""
        context, obj = self.context, primary
        ref = request.ref
        problems = validate_stack_config_policy(obj)
        if problems:
            raise InvalidSpecError("; ".join(f"{field}: {message}" for field, message in problems))
        await warn_unknown_fields(context, ref, obj)
        try:
            policy = await _resolved_policy(context, obj)
        except SelectorError as error:
            raise InvalidSpecError(str(error)) from error
        except VariablesError as error:
            return await _variables_missing(context, request, obj, str(error))
        # A policy of the operator namespace may target every managed namespace; others their own.
        namespace = None if ref.namespace == context.operator_namespace else ref.namespace
        targeted: set[TargetKey] = set()
        for type_, kind in _KINDS.items():
            listed = await context.scoped.list(kind, namespace=namespace)
            for item in listed["items"]:
                target = Target.of(type_, item)
                if targets(policy, target, operator_namespace=context.operator_namespace):
                    targeted.add((type_, target.namespace, target.name))
        keys = targeted | await _owned_targets(context, policy.key)
        details = await _sync(context, keys, _Policies(context))
        # Only what this policy targets now is its own to report.
        mine = {
            type_: {
                key: entry
                for key, entry in entries.items()
                if (type_, *key.split("/", 1)) in targeted
            }
            for type_, entries in details.items()
        }
        status = policy_status(mine, observed_generation=view(obj).generation)
        conditions = (obj.get("status") or {}).get("conditions") or []
        kept = [
            c for c in conditions if not str(c.get("message", "")).startswith(_VARIABLES_PREFIX)
        ]
        if kept != conditions:
            # The variables source that was missing is back: its failed condition goes.
            status["conditions"] = kept
        patch = status_patch(obj.get("status") or {}, status)
        if patch is not None:
            await context.scoped.patch_status(
                ref.resource, {"status": patch}, namespace=ref.namespace, name=ref.name
            )
        ready = status["phase"] == "Ready"
        return ReconcileResult(
            phase=Phase.READY if ready else Phase.RECONCILING,
            message=f"{status['phase']}: {status['readyCount']} resources ready",
            requeue_after_seconds=READY_RECHECK_SECONDS if ready else NOT_READY_REQUEUE_SECONDS,
            observed_generation=view(obj).generation,
        )

    async def finalize(self, request: FinalizeInput) -> FinalizeResult:
        """A deleted policy: re-merge every resource it owned Secrets of without it (an empty
        file-settings state and no policy-config Secret where no other policy targets it)."""
        context = self.context
        ref = request.ref
        key = f"{ref.namespace}/{ref.name}"
        owned = await _owned_targets(context, key)
        await _sync(context, owned, _Policies(context, excluded=key))
        return FinalizeResult(
            deleted=tuple(f"{type_} {namespace}/{name}" for type_, namespace, name in sorted(owned))
        )

    async def flip_targets(
        self, namespace: str, direction: FlipDirectionName
    ) -> list[Mapping[str, Any]]:
        """The policies a flip of ``namespace`` concerns: its own and the operator namespace's
        (those may target it). Listed unscoped: the namespace may just have left scope."""
        context = self.context
        found = list(
            (await context.unscoped.list(STACK_CONFIG_POLICY, namespace=namespace))["items"]
        )
        if namespace != context.operator_namespace:
            operator = await context.unscoped.list(
                STACK_CONFIG_POLICY, namespace=context.operator_namespace
            )
            found.extend(operator["items"])
        return found


FAMILIES: Mapping[str, Family] = {STACK_CONFIG_POLICY_CONTROLLER.name: StackConfigPolicyActivities}
