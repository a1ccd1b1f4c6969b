"""Shape checks of the free-form parts of a spec, as pure functions.

The CRD schema types the fields the operator declares, but ``podTemplate``, ``config``, the
volume claim templates and the ``resources`` maps are free-form objects: the API server takes any
JSON there. The builders read them as Kubernetes would (a container list, a quantity, ...), so a
wrong shape would crash a build deep inside, as a traceback retried for ever. These checks run in
the validation (the webhook denies with them too) and name the field path, the value and the rule.

Every function returns ``(field path, message)`` pairs; empty when the part is well formed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from stackflow.models.quantity import parse_quantity

FieldError = tuple[str, str]

#: How deep a spec may nest, counted from ``spec``. Real specs nest about 15 levels (a pod
#: template's affinity); the builders recurse into user maps (merging, flattening, rendering YAML)
#: and a few hundred levels would exhaust Python's stack in the middle of a reconcile.
MAX_SPEC_DEPTH = 200
#: How many path segments a depth error names (enough to name the field, never the whole chain).
_NAMED_SEGMENTS = 4
#: The largest node set ``config`` (as compact JSON): its rendered ``elasticsearch.yml`` goes
#: into the node set's config Secret, which, like every Secret, may hold at most 1 MiB.
MAX_CONFIG_BYTES = 768 * 1024
#: The named lists of a container that the builders merge by name.
_CONTAINER_LISTS = ("env", "volumeMounts", "ports")


def describe(value: object) -> str:
    """A short rendering of a user's value for a message (long values are cut)."""
    text = json.dumps(value, default=str) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _type_name(value: object) -> str:
    if isinstance(value, Mapping):
        return "a map"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, Sequence):
        return "a list"
    return "null" if value is None else type(value).__name__


def not_a(path: str, value: object, expected: str) -> FieldError:
    """The error of a value of the wrong type: ``must be a list, not a string``."""
    return (path, f"must be {expected}, not {_type_name(value)} ({describe(value)})")


def is_list(value: object) -> bool:
    """Whether ``value`` is a JSON list (a string is not)."""
    return as_list(value) is not None


def as_list(value: object) -> Sequence[Any] | None:
    """``value`` when it is a JSON list (a string is not), else None."""
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return value
    return None


def _children(value: object) -> Iterator[tuple[str, object]]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield f".{key}", item
    else:
        for index, item in enumerate(as_list(value) or ()):
            yield f"[{index}]", item


def depth_problem(value: object, path: str, *, limit: int = MAX_SPEC_DEPTH) -> FieldError | None:
    """The error when ``value`` nests deeper than ``limit`` levels, naming where (iterative: a
    spec nested thousands of levels deep must not exhaust the stack that checks it)."""
    stack: list[tuple[object, int, str]] = [(value, 0, path)]
    while stack:
        item, depth, where = stack.pop()
        if depth > limit:
            return (where, f"nested more than {limit} levels deep")
        for segment, child in _children(item):
            # The path grows only while it still names a field: a bounded string per level.
            named = where + segment if where.count(".") < _NAMED_SEGMENTS else where
            stack.append((child, depth + 1, named))
    return None


def config_size_problem(config: object, path: str) -> FieldError | None:
    """The error when a (well nested) node set config is larger than ``MAX_CONFIG_BYTES``."""
    size = len(json.dumps(config, separators=(",", ":"), default=str))
    if size <= MAX_CONFIG_BYTES:
        return None
    return (
        path,
        f"config of {size} bytes is larger than the {MAX_CONFIG_BYTES} bytes allowed "
        "(its elasticsearch.yml must fit into a Secret of at most 1 MiB)",
    )


def quantity_problems(value: object, path: str) -> list[FieldError]:
    """Problems of a ``{name: quantity}`` map (``requests``, ``limits``)."""
    if value is None:
        return []
    if not isinstance(value, Mapping):
        return [not_a(path, value, "a map of resource quantities")]
    problems: list[FieldError] = []
    for name, amount in value.items():
        parsed = parse_quantity(amount)
        if parsed is None:
            problems.append(
                (
                    f"{path}.{name}",
                    f"{describe(amount)} is not a Kubernetes quantity (e.g. 2Gi, 500m, 1.5)",
                )
            )
        elif parsed < 0:
            problems.append((f"{path}.{name}", f"{describe(amount)} must not be negative"))
    return problems


def resources_problems(value: object, path: str) -> list[FieldError]:
    """Problems of a container's ``resources`` (``requests``/``limits`` maps of quantities)."""
    if value is None:
        return []
    if not isinstance(value, Mapping):
        return [not_a(path, value, "a map with requests and limits")]
    return quantity_problems(value.get("requests"), f"{path}.requests") + quantity_problems(
        value.get("limits"), f"{path}.limits"
    )


def _named_items_problems(value: object, path: str) -> list[FieldError]:
    """Problems of a list of maps each holding a string ``name`` (env, mounts, volumes...)."""
    if value is None:
        return []
    items = as_list(value)
    if items is None:
        return [not_a(path, value, "a list")]
    problems: list[FieldError] = []
    for index, item in enumerate(items):
        where = f"{path}[{index}]"
        if not isinstance(item, Mapping):
            problems.append(not_a(where, item, "a map"))
        elif "name" in item and not isinstance(item["name"], str):
            problems.append(not_a(f"{where}.name", item["name"], "a string"))
    return problems


def _string_map_problems(value: object, path: str) -> list[FieldError]:
    if value is None:
        return []
    if not isinstance(value, Mapping):
        return [not_a(path, value, "a map of strings")]
    return [
        not_a(f"{path}.{key}", item, "a string")
        for key, item in value.items()
        if not isinstance(item, str)
    ]


def container_problems(value: object, path: str) -> list[FieldError]:
    """Problems of one container of a pod template."""
    if not isinstance(value, Mapping):
        return [not_a(path, value, "a map")]
    problems: list[FieldError] = []
    if "name" in value and not isinstance(value["name"], str):
        problems.append(not_a(f"{path}.name", value["name"], "a string"))
    for key in _CONTAINER_LISTS:
        problems += _named_items_problems(value.get(key), f"{path}.{key}")
    problems += resources_problems(value.get("resources"), f"{path}.resources")
    return problems


def pod_template_problems(value: object, path: str) -> list[FieldError]:
    """Problems of a ``podTemplate``: the parts the builders read and merge."""
    if value is None:
        return []
    if not isinstance(value, Mapping):
        return [not_a(path, value, "a map (a PodTemplateSpec)")]
    problems: list[FieldError] = []
    metadata = value.get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        problems.append(not_a(f"{path}.metadata", metadata, "a map"))
    elif metadata is not None:
        for key in ("labels", "annotations"):
            problems += _string_map_problems(metadata.get(key), f"{path}.metadata.{key}")
    spec = value.get("spec")
    if spec is None:
        return problems
    if not isinstance(spec, Mapping):
        return [*problems, not_a(f"{path}.spec", spec, "a map (a PodSpec)")]
    for key in ("containers", "initContainers"):
        if spec.get(key) is None:
            continue
        containers = as_list(spec.get(key))
        if containers is None:
            problems.append(not_a(f"{path}.spec.{key}", spec.get(key), "a list of containers"))
            continue
        for index, container in enumerate(containers):
            problems += container_problems(container, f"{path}.spec.{key}[{index}]")
    problems += _named_items_problems(spec.get("volumes"), f"{path}.spec.volumes")
    return problems


def claim_templates_problems(value: object, path: str) -> list[FieldError]:
    """Problems of ``volumeClaimTemplates``: a list of claims, each with a name and quantities."""
    if value is None:
        return []
    claims = as_list(value)
    if claims is None:
        return [not_a(path, value, "a list of PersistentVolumeClaims")]
    problems: list[FieldError] = []
    for index, claim in enumerate(claims):
        where = f"{path}[{index}]"
        if not isinstance(claim, Mapping):
            problems.append(not_a(where, claim, "a map (a PersistentVolumeClaim)"))
            continue
        metadata = claim.get("metadata")
        if metadata is not None and not isinstance(metadata, Mapping):
            problems.append(not_a(f"{where}.metadata", metadata, "a map"))
        elif metadata is not None and not isinstance(metadata.get("name"), str | None):
            problems.append(not_a(f"{where}.metadata.name", metadata.get("name"), "a string"))
        spec = claim.get("spec")
        if spec is None:
            continue
        if not isinstance(spec, Mapping):
            problems.append(not_a(f"{where}.spec", spec, "a map"))
            continue
        problems += resources_problems(spec.get("resources"), f"{where}.spec.resources")
    return problems
