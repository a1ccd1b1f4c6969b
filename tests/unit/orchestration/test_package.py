"""The package's public names resolve, each from a module of the package (the step types from
the engine's models, which a workflow carries)."""

from __future__ import annotations

import types

import pytest

import stackflow.stack.elasticsearch.orchestration as orchestration


@pytest.mark.parametrize("name", orchestration.__all__)
def test_public_name_resolves(name: str) -> None:
    value = getattr(orchestration, name)
    # A union alias (``Step``) is defined by its members.
    members = value.__args__ if isinstance(value, types.UnionType) else (value,)
    for member in members:
        module = getattr(member, "__module__", orchestration.__name__)
        assert module.startswith((orchestration.__name__, "stackflow.models.cluster_steps")), (
            name,
            module,
        )
