"""Which informers are narrowed, and the predicate a narrowed one keeps with (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from stackflow.kube.cache import Projection
from stackflow.models.kinds import CONFIGMAPS, SECRETS
from watchers.informers import InformerKey, any_of, narrowed_informers

SECRETS_KEY: InformerKey = (SECRETS.group, SECRETS.version, SECRETS.plural, "")
LABELLED_SECRETS: InformerKey = (SECRETS.group, SECRETS.version, SECRETS.plural, "app=web")
CONFIGMAPS_KEY: InformerKey = (CONFIGMAPS.group, CONFIGMAPS.version, CONFIGMAPS.plural, "")
SECRETS_KIND = SECRETS_KEY[:3]
CONFIGMAPS_KIND = CONFIGMAPS_KEY[:3]
META, WHOLE = Projection.METADATA, Projection.WHOLE


@pytest.mark.parametrize(
    ("case", "projections", "kept", "narrowed"),
    [
        ("unfiltered Secrets, told", {SECRETS_KEY: META}, [SECRETS_KIND], {SECRETS_KEY}),
        ("nobody said what it needs", {SECRETS_KEY: META}, [], set()),
        ("whole objects: a cache of every one", {SECRETS_KEY: WHOLE}, [SECRETS_KIND], set()),
        ("a selector's informer", {LABELLED_SECRETS: META}, [SECRETS_KIND], set()),
        ("not a narrowed kind", {CONFIGMAPS_KEY: META}, [CONFIGMAPS_KIND], set()),
        (
            "only the unfiltered one",
            {SECRETS_KEY: META, LABELLED_SECRETS: META, CONFIGMAPS_KEY: META},
            [SECRETS_KIND, CONFIGMAPS_KIND],
            {SECRETS_KEY},
        ),
    ],
)
def test_narrowed_informers(
    case: str,
    projections: dict[InformerKey, Projection],
    kept: list[tuple[str, str, str]],
    narrowed: set[InformerKey],
) -> None:
    assert narrowed_informers(projections, kept) == narrowed, case


def named(name: str) -> Mapping[str, Any]:
    return {"metadata": {"name": name}}


@pytest.mark.parametrize(
    ("case", "names", "obj", "kept"),
    [
        ("none accepts nothing", [], named("a"), False),
        ("one accepts", ["a"], named("a"), True),
        ("any of several", ["a", "b"], named("b"), True),
        ("none of several", ["a", "b"], named("c"), False),
    ],
)
def test_any_of(case: str, names: list[str], obj: Mapping[str, Any], kept: bool) -> None:
    predicates = [
        (lambda wanted: lambda candidate: candidate["metadata"]["name"] == wanted)(name)
        for name in names
    ]
    assert any_of(predicates)(obj) is kept, case
