"""The real API server's print functions for the built-in kinds (kubernetes
``pkg/printers/internalversion``, v1.37): one object's Table cells, ``wide`` columns included,
computed as the server computes them, and the ages and label texts they print.

Their columns are :mod:`kubesim.printer_columns`; :mod:`kubesim.tables` puts both in a Table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

__all__ = [
    "builtin_cells",
    "format_label_selector",
    "format_labels",
    "human_duration",
    "parse_time",
    "selector_string",
]

_NODE_ROLE_PREFIX = "node-role.kubernetes.io/"
_NODE_ROLE_LABEL = "kubernetes.io/role"
_ACCESS_MODES = (
    ("ReadWriteOnce", "RWO"),
    ("ReadOnlyMany", "ROX"),
    ("ReadWriteMany", "RWX"),
    ("ReadWriteOncePod", "RWOP"),
)
# Roles and ClusterRoles have no printer: the server's default table.
_DEFAULT_TABLE_KINDS = frozenset(
    {("rbac.authorization.k8s.io", "roles"), ("rbac.authorization.k8s.io", "clusterroles")}
)

Obj = Mapping[str, Any]
Printer = Callable[[Obj, datetime], list[Any]]


def human_duration(seconds: float) -> str:
    """Age as ``kubectl`` prints it (apimachinery ``duration.HumanDuration``)."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        rest = whole % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        rest = (hours // 24) % 365
        years = hours // 24 // 365
        return f"{years}y" if rest == 0 else f"{years}y{rest}d"
    return f"{hours // 24 // 365}y"


def parse_time(text: str) -> datetime | None:
    """Parse an RFC3339 timestamp (``Z`` or offset, optional fraction); None when malformed."""
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


# -- small readers ---------------------------------------------------------------------------


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _meta(obj: Obj) -> Mapping[str, Any]:
    return _map(obj.get("metadata"))


def _spec(obj: Obj) -> Mapping[str, Any]:
    return _map(obj.get("spec"))


def _status(obj: Obj) -> Mapping[str, Any]:
    return _map(obj.get("status"))


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _since(value: Any, now: datetime) -> str:
    """``translateTimestampSince``: the age of a timestamp, ``<unknown>`` when unset."""
    if not isinstance(value, str) or not value:
        return "<unknown>"
    timestamp = parse_time(value)
    if timestamp is None:
        return "<unknown>"
    return human_duration((now - timestamp).total_seconds())


def _age(obj: Obj, now: datetime) -> str:
    return _since(_meta(obj).get("creationTimestamp"), now)


def _name(obj: Obj) -> str:
    return str(_meta(obj).get("name", ""))


def format_labels(labels: Any) -> str:
    """``labels.FormatLabels``: ``k=v`` sorted by key and comma-joined, ``<none>`` when empty."""
    pairs = sorted(_map(labels).items())
    return ",".join(f"{key}={value}" for key, value in pairs) or "<none>"


def selector_string(selector: Any) -> str:
    """``LabelSelectorAsSelector(s).String()``: requirements sorted by key, ``""`` for none."""
    if not isinstance(selector, Mapping):
        return ""
    requirements: list[tuple[str, str]] = []
    for key, value in _map(selector.get("matchLabels")).items():
        requirements.append((str(key), f"{key}={value}"))
    for expression in _list(selector.get("matchExpressions")):
        if not isinstance(expression, Mapping):
            continue
        key = str(expression.get("key", ""))
        operator = expression.get("operator")
        values = ",".join(sorted(str(v) for v in _list(expression.get("values"))))
        if operator == "In":
            requirements.append((key, f"{key} in ({values})"))
        elif operator == "NotIn":
            requirements.append((key, f"{key} notin ({values})"))
        elif operator == "Exists":
            requirements.append((key, key))
        elif operator == "DoesNotExist":
            requirements.append((key, f"!{key}"))
    return ",".join(text for _, text in sorted(requirements, key=lambda item: item[0]))


def format_label_selector(selector: Any) -> str:
    """``metav1.FormatLabelSelector``: the selector text, ``<none>`` when it selects by nothing."""
    return selector_string(selector) or "<none>"


def _containers_cells(template_spec: Mapping[str, Any]) -> list[str]:
    """``layoutContainerCells``: container names and images, comma-joined."""
    containers = [c for c in _list(template_spec.get("containers")) if isinstance(c, Mapping)]
    return [
        ",".join(str(c.get("name", "")) for c in containers),
        ",".join(str(c.get("image", "")) for c in containers),
    ]


def _template_spec(obj: Obj) -> Mapping[str, Any]:
    return _map(_map(_spec(obj).get("template")).get("spec"))


# -- printers (one per kind, as printers.go) -----------------------------------------------


def _print_namespace(obj: Obj, now: datetime) -> list[Any]:
    return [_name(obj), str(_status(obj).get("phase", "")), _age(obj, now)]


def _print_secret(obj: Obj, now: datetime) -> list[Any]:
    return [_name(obj), str(obj.get("type", "")), len(_map(obj.get("data"))), _age(obj, now)]


def _print_config_map(obj: Obj, now: datetime) -> list[Any]:
    count = len(_map(obj.get("data"))) + len(_map(obj.get("binaryData")))
    return [_name(obj), count, _age(obj, now)]


def _service_external_ip(obj: Obj) -> str:
    spec = _spec(obj)
    kind = spec.get("type")
    external = [str(ip) for ip in _list(spec.get("externalIPs"))]
    if kind in ("ClusterIP", "NodePort"):
        return ",".join(external) if external else "<none>"
    if kind == "LoadBalancer":
        ingress = _list(_map(_status(obj).get("loadBalancer")).get("ingress"))
        found = sorted(
            {
                str(i.get("ip") or i.get("hostname"))
                for i in ingress
                if isinstance(i, Mapping) and (i.get("ip") or i.get("hostname"))
            }
        )
        # The wide form (the server always prints wide) is not clipped.
        balancer = ",".join(found)
        if external:
            return ",".join([*(balancer.split(",") if balancer else []), *external])
        return balancer or "<pending>"
    if kind == "ExternalName":
        return str(spec.get("externalName", ""))
    return "<unknown>"


def _print_service(obj: Obj, now: datetime) -> list[Any]:
    spec = _spec(obj)
    cluster_ips = _list(spec.get("clusterIPs"))
    internal = str(cluster_ips[0]) if cluster_ips else "<none>"
    ports = []
    for port in _list(spec.get("ports")):
        if not isinstance(port, Mapping):
            continue
        text = f"{port.get('port', 0)}/{port.get('protocol', '')}"
        if _int(port.get("nodePort")) > 0:
            text = f"{port.get('port', 0)}:{port.get('nodePort')}/{port.get('protocol', '')}"
        ports.append(text)
    return [
        _name(obj),
        str(spec.get("type", "")),
        internal,
        _service_external_ip(obj),
        ",".join(ports) or "<none>",
        _age(obj, now),
        format_labels(spec.get("selector")),
    ]


def _format_endpoints(obj: Obj) -> str:
    subsets = [s for s in _list(obj.get("subsets")) if isinstance(s, Mapping)]
    if not subsets:
        return "<none>"
    shown: list[str] = []
    more = False
    count = 0
    limit = 3
    for subset in subsets:
        addresses = [a for a in _list(subset.get("addresses")) if isinstance(a, Mapping)]
        ports = [p for p in _list(subset.get("ports")) if isinstance(p, Mapping)]
        if not ports:
            count += len(addresses)
            for address in addresses:
                if len(shown) == limit:
                    more = True
                    break
                shown.append(str(address.get("ip", "")))
            continue
        for port in ports:
            count += len(addresses)
            for address in addresses:
                if len(shown) == limit:
                    more = True
                    break
                ip = str(address.get("ip", ""))
                host = f"[{ip}]" if ":" in ip else ip
                shown.append(f"{host}:{_int(port.get('port'))}")
    text = ",".join(shown)
    return f"{text} + {count - limit} more..." if more else text


def _print_endpoints(obj: Obj, now: datetime) -> list[Any]:
    return [_name(obj), _format_endpoints(obj), _age(obj, now)]


def _list_with_more(shown: list[str], more: bool, count: int, limit: int) -> str:
    """``listWithMoreString``: the shown items, how many more, ``<unset>`` for none."""
    text = ",".join(shown)
    if more:
        return f"{text} + {count - limit} more..."
    return text or "<unset>"


def _format_discovery_ports(obj: Obj) -> str:
    """``formatDiscoveryPorts``: the first three port numbers (a name, or ``*``, without one)."""
    shown: list[str] = []
    more, count, limit = False, 0, 3
    for port in _list(obj.get("ports")):
        port = port if isinstance(port, Mapping) else {}
        if len(shown) < limit:
            if port.get("port") is not None:
                shown.append(str(_int(port.get("port"))))
            elif port.get("name") is not None:
                shown.append(str(port.get("name")))
            else:
                shown.append("*")
        elif len(shown) == limit:
            more = True
        count += 1
    return _list_with_more(shown, more, count, limit)


def _format_discovery_endpoints(obj: Obj) -> str:
    """``formatDiscoveryEndpoints``: the first three addresses of all the endpoints."""
    shown: list[str] = []
    more, count, limit = False, 0, 3
    for endpoint in _list(obj.get("endpoints")):
        addresses = endpoint.get("addresses") if isinstance(endpoint, Mapping) else None
        for address in _list(addresses):
            if len(shown) < limit:
                shown.append(str(address))
            elif len(shown) == limit:
                more = True
            count += 1
    return _list_with_more(shown, more, count, limit)


def _print_endpoint_slice(obj: Obj, now: datetime) -> list[Any]:
    return [
        _name(obj),
        str(obj.get("addressType") or ""),
        _format_discovery_ports(obj),
        _format_discovery_endpoints(obj),
        _age(obj, now),
    ]


def _terminated_reason(state: Mapping[str, Any], prefix: str = "") -> str:
    reason = str(state.get("reason") or "")
    if reason:
        return prefix + reason
    signal = _int(state.get("signal"))
    if signal:
        return f"{prefix}Signal:{signal}"
    return f"{prefix}ExitCode:{_int(state.get('exitCode'))}"


def _condition_true(conditions: Any, kind: str) -> bool:
    return any(
        isinstance(c, Mapping) and c.get("type") == kind and c.get("status") == "True"
        for c in _list(conditions)
    )


def _print_pod(obj: Obj, now: datetime) -> list[Any]:
    """``printPod``: readiness, the aggregate status, restarts, and the wide columns."""
    spec, status = _spec(obj), _status(obj)
    containers = [c for c in _list(spec.get("containers")) if isinstance(c, Mapping)]
    init_containers = {
        str(c.get("name")): c for c in _list(spec.get("initContainers")) if isinstance(c, Mapping)
    }

    def restartable(name: str) -> bool:
        return init_containers.get(name, {}).get("restartPolicy") == "Always"

    total = len(containers) + sum(1 for name in init_containers if restartable(name))
    ready = 0
    restarts = 0
    sidecar_restarts = 0
    last_restart = ""
    sidecar_last_restart = ""
    phase = str(status.get("phase") or "")
    reason = str(status.get("reason") or phase)
    for condition in _list(status.get("conditions")):
        if (
            isinstance(condition, Mapping)
            and condition.get("type") == "PodScheduled"
            and condition.get("reason") == "SchedulingGated"
        ):
            reason = "SchedulingGated"

    def finished(container: Mapping[str, Any]) -> str:
        terminated = _map(_map(container.get("lastState")).get("terminated"))
        return str(terminated.get("finishedAt") or "") if terminated else ""

    initializing = False
    init_statuses = [
        s for s in _list(status.get("initContainerStatuses")) if isinstance(s, Mapping)
    ]
    for index, container in enumerate(init_statuses):
        restarts += _int(container.get("restartCount"))
        last_restart = max(last_restart, finished(container))
        name = str(container.get("name"))
        if restartable(name):
            sidecar_restarts += _int(container.get("restartCount"))
            sidecar_last_restart = max(sidecar_last_restart, finished(container))
        state = _map(container.get("state"))
        terminated = _map(state.get("terminated"))
        waiting = _map(state.get("waiting"))
        if terminated and _int(terminated.get("exitCode")) == 0:
            continue
        if restartable(name) and container.get("started") is True:
            if container.get("ready"):
                ready += 1
            continue
        if terminated:
            reason = _terminated_reason(terminated, "Init:")
        elif waiting.get("reason") and waiting.get("reason") != "PodInitializing":
            reason = f"Init:{waiting.get('reason')}"
        else:
            reason = f"Init:{index}/{len(init_containers)}"
        initializing = True
        break
    if not initializing or _condition_true(status.get("conditions"), "Initialized"):
        restarts = sidecar_restarts
        last_restart = sidecar_last_restart
        has_running = False
        statuses = [s for s in _list(status.get("containerStatuses")) if isinstance(s, Mapping)]
        for container in reversed(statuses):
            restarts += _int(container.get("restartCount"))
            last_restart = max(last_restart, finished(container))
            state = _map(container.get("state"))
            waiting, terminated = _map(state.get("waiting")), _map(state.get("terminated"))
            if waiting.get("reason"):
                reason = str(waiting.get("reason"))
            elif terminated:
                reason = _terminated_reason(terminated)
            elif container.get("ready") and state.get("running") is not None:
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            reason = "Running" if _condition_true(status.get("conditions"), "Ready") else "NotReady"
    deleting = bool(_meta(obj).get("deletionTimestamp"))
    if deleting and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif deleting and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"
    restarts_text = str(restarts)
    if restarts and last_restart:
        restarts_text = f"{restarts} ({_since(last_restart, now)} ago)"
    pod_ips = [p for p in _list(status.get("podIPs")) if isinstance(p, Mapping)]
    pod_ip = str(pod_ips[0].get("ip") or "") if pod_ips else ""
    gates = [g for g in _list(spec.get("readinessGates")) if isinstance(g, Mapping)]
    gates_text = "<none>"
    if gates:
        by_type = {
            c.get("type"): c.get("status")
            for c in reversed(_list(status.get("conditions")))
            if isinstance(c, Mapping)
        }
        passing = sum(1 for gate in gates if by_type.get(gate.get("conditionType")) == "True")
        gates_text = f"{passing}/{len(gates)}"
    return [
        _name(obj),
        f"{ready}/{total}",
        reason,
        restarts_text,
        _age(obj, now),
        pod_ip or "<none>",
        str(spec.get("nodeName") or "") or "<none>",
        str(status.get("nominatedNodeName") or "") or "<none>",
        gates_text,
    ]


def _print_service_account(obj: Obj, now: datetime) -> list[Any]:
    return [_name(obj), _age(obj, now)]


def _access_modes(modes: Any) -> str:
    present = {str(mode) for mode in _list(modes)}
    return ",".join(short for mode, short in _ACCESS_MODES if mode in present)


def _print_claim(obj: Obj, now: datetime) -> list[Any]:
    spec, status = _spec(obj), _status(obj)
    phase = "Terminating" if _meta(obj).get("deletionTimestamp") else str(status.get("phase", ""))
    capacity = access = ""
    if spec.get("volumeName"):
        access = _access_modes(status.get("accessModes"))
        capacity = str(_map(status.get("capacity")).get("storage", ""))
    annotations = _map(_meta(obj).get("annotations"))
    storage_class = annotations.get("volume.beta.kubernetes.io/storage-class")
    if storage_class is None:
        storage_class = spec.get("storageClassName") or ""
    return [
        _name(obj),
        phase,
        str(spec.get("volumeName") or ""),
        capacity,
        access,
        str(storage_class),
        str(spec.get("volumeAttributesClassName") or "<unset>"),
        _age(obj, now),
        str(spec.get("volumeMode") or "<unset>"),
    ]


def _event_fields(obj: Obj) -> dict[str, Any]:
    """A core/v1 or events.k8s.io/v1 Event read as core/v1 (the printer prints the internal type)."""
    if "regarding" in obj or "note" in obj or "deprecatedCount" in obj:
        return {
            "involvedObject": _map(obj.get("regarding")),
            "message": obj.get("note", ""),
            "firstTimestamp": obj.get("deprecatedFirstTimestamp"),
            "lastTimestamp": obj.get("deprecatedLastTimestamp"),
            "count": obj.get("deprecatedCount"),
            "source": _map(obj.get("deprecatedSource")),
            "reportingComponent": obj.get("reportingController", ""),
            "reportingInstance": obj.get("reportingInstance", ""),
        }
    return {
        "involvedObject": _map(obj.get("involvedObject")),
        "message": obj.get("message", ""),
        "firstTimestamp": obj.get("firstTimestamp"),
        "lastTimestamp": obj.get("lastTimestamp"),
        "count": obj.get("count"),
        "source": _map(obj.get("source")),
        "reportingComponent": obj.get("reportingComponent", ""),
        "reportingInstance": obj.get("reportingInstance", ""),
    }


def _print_event(obj: Obj, now: datetime) -> list[Any]:
    fields = _event_fields(obj)
    first = (
        _since(fields["firstTimestamp"], now)
        if fields["firstTimestamp"]
        else _since(obj.get("eventTime"), now)
    )
    last = _since(fields["lastTimestamp"], now) if fields["lastTimestamp"] else first
    count = _int(fields["count"])
    series = obj.get("series")
    if isinstance(series, Mapping):
        last = _since(series.get("lastObservedTime"), now)
        count = _int(series.get("count"))
    elif count == 0:
        count = 1
    involved = fields["involvedObject"]
    kind = str(involved.get("kind", "")).lower()
    target = f"{kind}/{involved.get('name')}" if involved.get("name") else kind
    source = fields["source"]
    component = str(source.get("component") or fields["reportingComponent"] or "")
    instance = str(source.get("host") or fields["reportingInstance"] or "")
    return [
        last,
        str(obj.get("type", "")),
        str(obj.get("reason", "")),
        target,
        str(involved.get("fieldPath", "")),
        f"{component}, {instance}" if instance else component,
        str(fields["message"] or "").strip(),
        first,
        count,
        _name(obj),
    ]


def _print_node(obj: Obj, now: datetime) -> list[Any]:
    spec, status = _spec(obj), _status(obj)
    states: list[str] = []
    for condition in _list(status.get("conditions")):
        if isinstance(condition, Mapping) and condition.get("type") == "Ready":
            states = ["Ready" if condition.get("status") == "True" else "NotReady"]
    states = states or ["Unknown"]
    if spec.get("unschedulable"):
        states.append("SchedulingDisabled")
    roles = set()
    for key, value in _map(_meta(obj).get("labels")).items():
        if key.startswith(_NODE_ROLE_PREFIX) and key[len(_NODE_ROLE_PREFIX) :]:
            roles.add(key[len(_NODE_ROLE_PREFIX) :])
        elif key == _NODE_ROLE_LABEL and value:
            roles.add(str(value))
    info = _map(status.get("nodeInfo"))

    def address(kind: str) -> str:
        for item in _list(status.get("addresses")):
            if isinstance(item, Mapping) and item.get("type") == kind:
                return str(item.get("address", ""))
        return "<none>"

    return [
        _name(obj),
        ",".join(states),
        ",".join(sorted(roles)) or "<none>",
        _age(obj, now),
        str(info.get("kubeletVersion", "")),
        address("InternalIP"),
        address("ExternalIP"),
        str(info.get("osImage") or "<unknown>"),
        str(info.get("kernelVersion") or "<unknown>"),
        str(info.get("containerRuntimeVersion") or "<unknown>"),
    ]


def _print_stateful_set(obj: Obj, now: datetime) -> list[Any]:
    ready = _int(_status(obj).get("readyReplicas"))
    desired = _int(_spec(obj).get("replicas"))
    return [
        _name(obj),
        f"{ready}/{desired}",
        _age(obj, now),
        *_containers_cells(_template_spec(obj)),
    ]


def _print_deployment(obj: Obj, now: datetime) -> list[Any]:
    spec, status = _spec(obj), _status(obj)
    return [
        _name(obj),
        f"{_int(status.get('readyReplicas'))}/{_int(spec.get('replicas'))}",
        _int(status.get("updatedReplicas")),
        _int(status.get("availableReplicas")),
        _age(obj, now),
        *_containers_cells(_template_spec(obj)),
        selector_string(spec.get("selector")),
    ]


def _print_daemon_set(obj: Obj, now: datetime) -> list[Any]:
    status = _status(obj)
    return [
        _name(obj),
        _int(status.get("desiredNumberScheduled")),
        _int(status.get("currentNumberScheduled")),
        _int(status.get("numberReady")),
        _int(status.get("updatedNumberScheduled")),
        _int(status.get("numberAvailable")),
        format_labels(_template_spec(obj).get("nodeSelector")),
        _age(obj, now),
        *_containers_cells(_template_spec(obj)),
        format_label_selector(_spec(obj).get("selector")),
    ]


def _print_replica_set(obj: Obj, now: datetime) -> list[Any]:
    spec, status = _spec(obj), _status(obj)
    return [
        _name(obj),
        _int(spec.get("replicas")),
        _int(status.get("replicas")),
        _int(status.get("readyReplicas")),
        _age(obj, now),
        *_containers_cells(_template_spec(obj)),
        format_label_selector(spec.get("selector")),
    ]


def _int_or_string(value: Any) -> str:
    if value is None:
        return "N/A"
    return str(value)


def _print_disruption_budget(obj: Obj, now: datetime) -> list[Any]:
    spec = _spec(obj)
    return [
        _name(obj),
        _int_or_string(spec.get("minAvailable")),
        _int_or_string(spec.get("maxUnavailable")),
        _int(_status(obj).get("disruptionsAllowed")),
        _age(obj, now),
    ]


def _print_binding(obj: Obj, now: datetime) -> list[Any]:
    role = _map(obj.get("roleRef"))
    users: list[str] = []
    groups: list[str] = []
    accounts: list[str] = []
    for subject in _list(obj.get("subjects")):
        if not isinstance(subject, Mapping):
            continue
        kind, name = subject.get("kind"), str(subject.get("name", ""))
        if kind == "User":
            users.append(name)
        elif kind == "Group":
            groups.append(name)
        elif kind == "ServiceAccount":
            namespace = str(subject.get("namespace") or "")
            accounts.append(f"{namespace}/{name}" if namespace else name)
    return [
        _name(obj),
        f"{role.get('kind', '')}/{role.get('name', '')}",
        _age(obj, now),
        ", ".join(users),
        ", ".join(groups),
        ", ".join(accounts),
    ]


def _print_webhook_configuration(obj: Obj, now: datetime) -> list[Any]:
    return [_name(obj), len(_list(obj.get("webhooks"))), _age(obj, now)]


def _print_crd(obj: Obj, now: datetime) -> list[Any]:
    spec = _spec(obj)
    names = _map(spec.get("names"))
    versions = [
        str(v.get("name", "")) + ("(storage)" if v.get("storage") else "")
        for v in _list(spec.get("versions"))
        if isinstance(v, Mapping) and v.get("served")
    ]
    established = _condition_true(_status(obj).get("conditions"), "Established")
    return [
        _name(obj),
        str(spec.get("scope", "")),
        ",".join(versions),
        _meta(obj).get("creationTimestamp"),
        str(spec.get("group", "")),
        str(names.get("kind", "")),
        ",".join(str(s) for s in _list(names.get("shortNames"))),
        established,
    ]


def _print_lease(obj: Obj, now: datetime) -> list[Any]:
    return [_name(obj), str(_spec(obj).get("holderIdentity") or ""), _age(obj, now)]


def _print_default(obj: Obj, now: datetime) -> list[Any]:
    return [_name(obj), _meta(obj).get("creationTimestamp")]


_PRINTERS: dict[tuple[str, str], Printer] = {
    ("", "namespaces"): _print_namespace,
    ("", "secrets"): _print_secret,
    ("", "configmaps"): _print_config_map,
    ("", "services"): _print_service,
    ("", "endpoints"): _print_endpoints,
    ("discovery.k8s.io", "endpointslices"): _print_endpoint_slice,
    ("", "pods"): _print_pod,
    ("", "serviceaccounts"): _print_service_account,
    ("", "persistentvolumeclaims"): _print_claim,
    ("", "events"): _print_event,
    ("events.k8s.io", "events"): _print_event,
    ("", "nodes"): _print_node,
    ("apps", "statefulsets"): _print_stateful_set,
    ("apps", "deployments"): _print_deployment,
    ("apps", "daemonsets"): _print_daemon_set,
    ("apps", "replicasets"): _print_replica_set,
    ("policy", "poddisruptionbudgets"): _print_disruption_budget,
    ("rbac.authorization.k8s.io", "rolebindings"): _print_binding,
    ("rbac.authorization.k8s.io", "clusterrolebindings"): _print_binding,
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): (
        _print_webhook_configuration
    ),
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): (
        _print_webhook_configuration
    ),
    ("apiextensions.k8s.io", "customresourcedefinitions"): _print_crd,
    ("coordination.k8s.io", "leases"): _print_lease,
}


def builtin_cells(group: str, plural: str, obj: Obj, now: datetime) -> list[Any]:
    """The cells of one object of a built-in kind, by its printer (the default ``Name`` +
    ``Created At`` cells for a kind without one); ``now`` is the reference time of ages."""
    if (group, plural) in _DEFAULT_TABLE_KINDS:
        return _print_default(obj, now)
    return _PRINTERS.get((group, plural), _print_default)(obj, now)
