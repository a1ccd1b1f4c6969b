"""The base of every API model: ECK's camelCase field names, unknown fields kept, exact round trips.

Every model accepts fields it does not declare and writes them back unchanged (``extra="allow"``),
so a manifest written for ECK survives ``from_object(...).to_object()`` field for field. Only the
fields a caller explicitly set are written back (``exclude_unset``): defaults never leak into
objects sent to the API server.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

FreeForm = dict[str, Any]
"""A free-form JSON object (config, podTemplate, …): kept as-is and never pruned by the CRD."""

IntOrString = int | str
"""A Kubernetes IntOrString (``x-kubernetes-int-or-string`` in the CRD schema)."""


class ApiModel(BaseModel):
    """A part of a custom resource: camelCase aliases, populate by name, unknown fields preserved."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        serialize_by_alias=True,
        defer_build=True,
    )

    def to_object(self) -> dict[str, Any]:
        """The JSON-ready dict of this model: ECK field names, only fields that were set."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


class ObjectMeta(ApiModel):
    """The fields of Kubernetes ObjectMeta the operator reads; every other field is preserved."""

    name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    owner_references: list[FreeForm] | None = None
    finalizers: list[str] | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None


class InvalidResourceError(ValueError):
    """A custom object that does not fit its model; ``problems`` are ``"field.path: message"`` lines."""

    def __init__(self, *, kind: str, name: str | None, problems: list[str]) -> None:
        """Build the error; the message names the object and every bad field."""
        self.kind = kind
        self.name = name
        self.problems = problems
        subject = f"{kind} {name!r}" if name else kind
        super().__init__(f"invalid {subject}: " + "; ".join(problems))


def field_path(location: tuple[int | str, ...]) -> str:
    """A pydantic error location as a Kubernetes field path: ``spec.nodeSets[0].count``."""
    path = ""
    for part in location:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path = f"{path}.{part}" if path else part
    return path


def validation_problems(error: ValidationError) -> list[str]:
    """One ``"field.path: message"`` line per pydantic error, paths in ECK's field names."""
    return [
        f"{field_path(tuple(item['loc'])) or '<root>'}: {item['msg']}" for item in error.errors()
    ]


class CustomResource(ApiModel):
    """A whole custom object (apiVersion, kind, metadata, spec, status) of one ECK kind.

    Subclasses set ``GROUP`` and ``KIND`` and declare ``spec`` and ``status`` with their own models.
    """

    GROUP: ClassVar[str] = ""
    KIND: ClassVar[str] = ""

    api_version: str
    kind: str
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)

    @classmethod
    def from_object(cls, obj: dict[str, Any]) -> Self:
        """Parse a custom object of this kind; raises :class:`InvalidResourceError` naming bad fields."""
        metadata = obj.get("metadata")
        name = metadata.get("name") if isinstance(metadata, dict) else None
        problems: list[str] = []
        if obj.get("kind") != cls.KIND:
            problems.append(f"kind: expected {cls.KIND!r}, got {obj.get('kind')!r}")
        api_version = obj.get("apiVersion")
        if not isinstance(api_version, str) or api_version.partition("/")[0] != cls.GROUP:
            problems.append(f"apiVersion: expected group {cls.GROUP!r}, got {api_version!r}")
        try:
            model = cls.model_validate(obj)
        except ValidationError as error:
            problems.extend(validation_problems(error))
            raise InvalidResourceError(kind=cls.KIND, name=name, problems=problems) from error
        if problems:
            raise InvalidResourceError(kind=cls.KIND, name=name, problems=problems)
        return model

    @property
    def name(self) -> str:
        """``metadata.name`` (empty when unset)."""
        return self.metadata.name or ""

    @property
    def namespace(self) -> str:
        """``metadata.namespace`` (empty when unset)."""
        return self.metadata.namespace or ""


def unknown_fields(model: BaseModel, path: str = "") -> list[str]:
    """The paths of the fields ``model`` keeps without knowing them (``extra="allow"``), pure.

    Free-form parts (``config``, ``podTemplate``) are plain dicts, not models, and are not
    looked into: anything goes there. A typo such as ``nodeSet`` for ``nodeSets`` shows up here.
    """
    found = [f"{path}.{name}" if path else name for name in (model.model_extra or {})]
    for name, info in type(model).model_fields.items():
        value = getattr(model, name, None)
        where = f"{path}.{info.alias or name}" if path else str(info.alias or name)
        if isinstance(value, BaseModel):
            found += unknown_fields(value, where)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, BaseModel):
                    found += unknown_fields(item, f"{where}[{index}]")
    return found
