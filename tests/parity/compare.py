"""What the parity tier compares: the objects of a world, masked and flattened, and their diff.

Pure functions only (the tables of tests/parity/test_compare.py pin them). A world is every object
of the scenario's namespaces and of the operator namespace (less what was there before the
operator started), keyed ``Kind namespace/name``; Events become one object per namespace listing
``involved kind/name type reason`` (the scheduler's Events left out: their timing is the
machine's). Masked, because they differ from one run to the next whatever
the operator: uids, resourceVersions, timestamps, IPs, node names, the names the API server or
kube-controller-manager generate, values of Secrets (their keys are compared, never their values:
passwords and certificates are generated), PEM certificates anywhere, and the values of labels and
annotations named ``*hash*`` or ``*revision*`` (hashes of what is compared itself, or of those
generated values), and UUIDs (the operator's, a license's).
"""

from __future__ import annotations

import base64
import copy
import difflib
import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

MASK = "<masked>"
#: Kinds derived by kube-controller-manager from what the operators make (a Service's endpoints,
#: a Deployment's ReplicaSets): they follow the Services and Deployments, which are compared; so
#: are their Events left out.
DERIVED_KINDS = frozenset({"Endpoints", "EndpointSlice", "ReplicaSet"})
#: What a Pod's name ends with in place of the suffix the ReplicaSet controller generates.
GENERATED = "<generated>"
#: Keys whose values always differ between runs.
VOLATILE_KEYS = frozenset(
    {
        "uid",
        "resourceVersion",
        "managedFields",
        "podIP",
        "podIPs",
        "hostIP",
        "hostIPs",
        "clusterIP",
        "clusterIPs",
        "nodeName",
        "containerID",
        "imageID",
        "volumeName",
        "currentRevision",
        "updateRevision",
        "collisionCount",
        # A NodePort Service's port, picked at random by the API server when not given.
        "nodePort",
        # A StackConfigPolicy's file-settings version: the time it was written, in nanoseconds.
        "expectedVersion",
    }
)
#: A Secret key whose value is configuration, not a secret: compared parsed.
CONFIG_SECRET_KEYS = frozenset({"elasticsearch.yml"})
#: A value that is a PEM document (a generated certificate or key).
PEM = re.compile(r"-----BEGIN [A-Z ]+-----")
#: A generated identifier (the operator's, a license's).
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _volatile_key(key: str) -> bool:
    return key in VOLATILE_KEYS or key.endswith(("Time", "Timestamp", "At"))


def _volatile_label(key: str) -> bool:
    lowered = key.lower()
    return (
        "hash" in lowered
        or "revision" in lowered
        or lowered.endswith("timestamp")
        or key.startswith("pv.kubernetes.io/")
    )


def _mask(value: Any) -> Any:
    """Mask what differs between runs, recursively."""
    if isinstance(value, Mapping):
        return {
            key: MASK if _volatile_key(str(key)) else _mask(item) for key, item in value.items()
        }
    if isinstance(value, list):
        return [_mask(item) for item in value]
    if isinstance(value, str) and PEM.search(value):
        return "<pem>"
    if isinstance(value, str) and UUID.fullmatch(value):
        return "<uuid>"
    return value


def _secret_data(data: Mapping[str, Any]) -> dict[str, Any]:
    """A Secret's keys; the value only of a configuration key, parsed."""
    shown: dict[str, Any] = {}
    for key, value in data.items():
        if key in CONFIG_SECRET_KEYS:
            try:
                shown[key] = yaml.safe_load(base64.b64decode(value)) or {}
            except (ValueError, yaml.YAMLError):
                shown[key] = "<unparsable>"
        else:
            shown[key] = "<value>"
    return shown


def normalize(item: Mapping[str, Any]) -> dict[str, Any]:
    """One object as compared: masked, Secrets' values hidden, labels' hashes masked."""
    shown: dict[str, Any] = copy.deepcopy(dict(item))
    metadata = dict(shown.get("metadata") or {})
    for field in ("labels", "annotations"):
        if field in metadata:
            metadata[field] = {
                key: MASK if _volatile_label(key) else value
                for key, value in metadata[field].items()
            }
    shown["metadata"] = metadata
    generated = _generated_name(item)
    if generated is not None:
        metadata["name"] = metadata["generateName"] = generated
    if shown.get("kind") == "Secret":
        for field in ("data", "stringData"):
            if field in shown:
                shown[field] = _secret_data(shown[field])
    template = ((shown.get("spec") or {}).get("template") or {}).get("metadata")
    if isinstance(template, dict):
        for field in ("labels", "annotations"):
            if field in template:
                template[field] = {
                    key: MASK if _volatile_label(key) else value
                    for key, value in template[field].items()
                }
    return _mask(shown)  # type: ignore[no-any-return]


def _generated_name(item: Mapping[str, Any]) -> str | None:
    """A Pod's name as its ReplicaSet generates it, less what is generated: a Deployment's Pods
    (Kibana's) are named ``<deployment>-<pod-template-hash>-<5 random characters>``, the hash
    is of the template (compared on the Deployment); None for other objects."""
    metadata = item.get("metadata") or {}
    owners = metadata.get("ownerReferences") or []
    prefix = metadata.get("generateName")
    if item.get("kind") != "Pod" or not prefix:
        return None
    # A DaemonSet's Pods too: ``<daemonset>-<5 random characters>``, one per node (nodes
    # masked: they are the same Pod but for its node).
    if not any(owner.get("kind") in ("ReplicaSet", "DaemonSet") for owner in owners):
        return None
    template_hash = (metadata.get("labels") or {}).get("pod-template-hash")
    if template_hash and prefix.endswith(f"-{template_hash}-"):
        prefix = prefix[: -len(template_hash) - 1]
    if any(owner.get("kind") == "DaemonSet" for owner in owners):
        # One per node: keyed by its node, or two Pods of a world would share one key and which
        # one is compared would be the listing's order.
        node = (item.get("spec") or {}).get("nodeName") or ""
        return f"{prefix}{GENERATED}@{node}"
    return f"{prefix}{GENERATED}"


def object_key(item: Mapping[str, Any]) -> str:
    """``Kind namespace/name`` (``Kind name`` when cluster-scoped); a ReplicaSet's Pod by its
    name less the generated suffix."""
    metadata = item["metadata"]
    generated = _generated_name(item)
    if generated is not None:
        return f"{item['kind']} {metadata.get('namespace')}/{generated}"
    namespace = metadata.get("namespace")
    return (
        f"{item['kind']} {namespace}/{metadata['name']}"
        if namespace
        else f"{item['kind']} {metadata['name']}"
    )


#: The scheduler's name on its Events: whether a Pod waited for a node, and how long, is the
#: scheduler's timing on a machine shared with the other world, not something the operator made.
SCHEDULER = "default-scheduler"
#: Components whose Events are the machine's timing, not the operator's doing: the scheduler's,
#: the API server's cluster-IP repair loop (``ClusterIPNotAllocated`` when it runs between a
#: Service's creation and its IP's allocation becoming visible to it), and the volume binder's
#: (``FailedBinding`` when a claim is looked at before its volume exists: a stack-config-policy
#: run had it in one world only).
TIMING_COMPONENTS = frozenset(
    {SCHEDULER, "ipallocator-repair-controller", "persistentvolume-controller"}
)


def _scheduler_event(event: Mapping[str, Any]) -> bool:
    """Whether ``event`` was reported by the scheduler or another of ``TIMING_COMPONENTS``
    (old and new Event fields)."""
    source = event.get("source") or {}
    return bool(TIMING_COMPONENTS & {source.get("component"), event.get("reportingComponent")})


def world(
    items: Iterable[Mapping[str, Any]], *, ignore: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """The compared world of ``items``: normalized objects by key, Events grouped by namespace;
    the keys in ``ignore`` (what existed before the operator started) and derived kinds left out."""
    objects: dict[str, Any] = {}
    events: dict[str, set[str]] = {}
    for item in items:
        kind = item.get("kind")
        if kind in DERIVED_KINDS:
            continue
        if kind == "Event":
            if _scheduler_event(item):
                continue
            involved = item.get("involvedObject") or {}
            if involved.get("kind") in DERIVED_KINDS:
                continue
            line = f"{involved.get('kind')}/{involved.get('name')} {item.get('type')} {item.get('reason')}"
            events.setdefault(item["metadata"]["namespace"], set()).add(line)
            continue
        key = object_key(item)
        if key in ignore:
            continue
        objects[key] = normalize(item)
    for namespace, lines in events.items():
        objects[f"Events {namespace}"] = dict.fromkeys(sorted(lines), "recorded")
    return objects


def _element_key(items: list[Any]) -> str | None:
    """The field that names the elements of a list of objects, when one does uniquely."""
    if not items or not all(isinstance(item, Mapping) for item in items):
        return None
    for field in ("name", "type", "mountPath", "key", "path"):
        values = [item.get(field) for item in items]
        if all(isinstance(value, str) for value in values) and len(set(values)) == len(values):
            return field
    return None


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Leaf values by path: ``a.b[name].c``; a list of named objects is keyed by the name."""
    if isinstance(value, Mapping):
        if not value:
            return {prefix: {}}
        flat: dict[str, Any] = {}
        for key, item in value.items():
            flat |= flatten(item, f"{prefix}.{key}" if prefix else str(key))
        return flat
    if isinstance(value, list):
        if not value:
            return {prefix: []}
        field = _element_key(value)
        flat = {}
        for index, item in enumerate(value):
            label = item[field] if field else str(index)
            flat |= flatten(item, f"{prefix}[{label}]")
        return flat
    return {prefix: value}


@dataclass(frozen=True)
class Difference:
    """One field of one object that differs (``path`` empty: the whole object is on one side)."""

    object: str
    path: str
    eck: Any
    stackflow: Any


ABSENT = "(absent)"


def diff(eck: Mapping[str, Any], stackflow: Mapping[str, Any]) -> list[Difference]:
    """Every difference between two worlds, object by object and field by field."""
    found: list[Difference] = []
    for key in sorted(set(eck) | set(stackflow)):
        if key not in stackflow:
            found.append(Difference(key, "", "present", ABSENT))
            continue
        if key not in eck:
            found.append(Difference(key, "", ABSENT, "present"))
            continue
        left, right = flatten(eck[key]), flatten(stackflow[key])
        for path in sorted(set(left) | set(right)):
            a, b = left.get(path, ABSENT), right.get(path, ABSENT)
            if a != b:
                found.append(Difference(key, path, a, b))
    return found


@dataclass(frozen=True)
class Until:
    """A condition a step waits for in a world: the field at ``path`` (a :func:`flatten` path)
    of the object ``object`` (``Kind namespace/name``) equals ``value``."""

    object: str
    path: str
    value: Any


def holds(current: Mapping[str, Any], conditions: Iterable[Until]) -> bool:
    """Whether every condition holds in the compared world ``current`` (a missing object or
    field does not hold)."""
    for condition in conditions:
        found = current.get(condition.object)
        if found is None or flatten(found).get(condition.path, ABSENT) != condition.value:
            return False
    return True


def short(value: Any, width: int = 60) -> str:
    """A value as a table cell: long text as its line count and digest."""
    text = value if isinstance(value, str) else repr(value)
    if "\n" in text or len(text) > width:
        digest = hashlib.sha256(text.encode()).hexdigest()[:8]
        return f"{text.count(chr(10)) + 1} lines, sha256 {digest}"
    return text


def explain(difference: Difference) -> str:
    """A difference for a failure message: both values, and a line diff of long texts."""
    head = f"{difference.object} :: {difference.path or '(object)'}"
    a, b = difference.eck, difference.stackflow
    if isinstance(a, str) and isinstance(b, str) and ("\n" in a or "\n" in b):
        lines = difflib.unified_diff(
            a.splitlines(), b.splitlines(), "eck", "stackflow", lineterm="", n=1
        )
        return head + "\n" + "\n".join(list(lines)[:40])
    return f"{head}\n  eck:       {a!r}\n  stackflow: {b!r}"


@dataclass(frozen=True)
class Row:
    """A documented difference: in which scenarios, objects and paths (``*`` globs, several per
    cell), and why."""

    scenarios: tuple[str, ...]
    objects: tuple[str, ...]
    paths: tuple[str, ...]
    reason: str

    def covers(self, scenario: str) -> bool:
        """Whether this row is about ``scenario``: a pattern of its scenario cell matches it and
        no ``!pattern`` excludes it (``*<br>!license-basic``: every scenario but one, where the
        row would otherwise be stale)."""
        excluded = [pattern[1:] for pattern in self.scenarios if pattern.startswith("!")]
        included = [pattern for pattern in self.scenarios if not pattern.startswith("!")]
        return any(glob(scenario, pattern) for pattern in included) and not any(
            glob(scenario, pattern) for pattern in excluded
        )

    def matches(self, scenario: str, difference: Difference) -> bool:
        """Whether this row documents ``difference`` of ``scenario``."""
        return (
            self.covers(scenario)
            and any(glob(difference.object, pattern) for pattern in self.objects)
            and any(glob(difference.path, pattern) for pattern in self.paths)
        )


def glob(text: str, pattern: str) -> bool:
    """Whether ``text`` matches ``pattern``, where only ``*`` is special (paths hold ``[name]``)."""
    return re.fullmatch(".*".join(map(re.escape, pattern.split("*"))), text, re.S) is not None


def _patterns(cell: str) -> tuple[str, ...]:
    """A cell's patterns: code spans separated by ``<br>``."""
    return tuple(part.strip().strip("`").replace("\\|", "|") for part in cell.split("<br>"))


def parse_rows(markdown: str) -> list[Row]:
    """The rows of the differences table of DIFFERENCES.md: ``| scenario | object | field path |
    ECK | Stackflow | reason |``; the scenario, object and path cells are patterns separated by
    ``<br>``
    (the ECK and Stackflow cells are prose for the reader)."""
    rows: list[Row] = []
    in_table = False
    for line in markdown.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("| scenario |"):
            in_table = True
            continue
        if not in_table or not line.startswith("|"):
            in_table = in_table and line.startswith("|")
            continue
        if set(cells[0]) <= {"-", ":"}:
            continue
        rows.append(Row(_patterns(cells[0]), _patterns(cells[1]), _patterns(cells[2]), cells[-1]))
    return rows


def undocumented(
    scenario: str, differences: Iterable[Difference], rows: Iterable[Row]
) -> tuple[list[Difference], list[Row]]:
    """The differences no row documents, and the rows of ``scenario`` that match no difference
    (a table cannot outlive a fixed difference)."""
    rows = list(rows)
    differences = list(differences)
    loose = [d for d in differences if not any(row.matches(scenario, d) for row in rows)]
    stale = [
        row
        for row in rows
        if row.covers(scenario) and not any(row.matches(scenario, d) for d in differences)
    ]
    return loose, stale
