"""The flip fast path's decisions: which cached resources a flip signals at once, with what, and
how the resource workflow takes a flip delivered twice (the fast path's, the flip workflow's)."""

from __future__ import annotations

import pytest

from stackflow.controllers import CONTROLLERS
from stackflow.models.engine import (
    FLIP_SOURCE_PREFIX,
    FlipDirectionName,
    ObjectKey,
    StepVerdict,
    Trigger,
    TriggerReason,
    flip_of,
    namespace_flip_trigger,
)
from stackflow.models.keys import GroupKindName, ResourceKey
from stackflow.models.kinds import SECRETS
from watchers.flips import fast_flip_targets, fast_path_enabled, flip_trigger, flip_workflow_id
from watchers.references import ReferenceIndex
from workflows import decisions

ES_KEY = ResourceKey("elasticsearch", "es-ns", "es")
KB_ASSOCIATION = ResourceKey("kb-es-association", "kb-ns", "kb")
POLICY = ResourceKey("stackconfigpolicy", "ops", "policy")


@pytest.mark.parametrize(
    ("in_namespace", "referrers", "mapped", "expected"),
    [
        # ECK's default: the primaries in the flipped namespace.
        ({"elasticsearch": ["es"]}, [], [], [ES_KEY]),
        # A referrer elsewhere is signalled only for a controller with its own flip mapper.
        (
            {"elasticsearch": ["es"]},
            [KB_ASSOCIATION],
            ["kb-es-association"],
            [ES_KEY, KB_ASSOCIATION],
        ),
        ({"elasticsearch": ["es"]}, [KB_ASSOCIATION], [], [ES_KEY]),
        # A resource both in the namespace and a referrer is signalled once.
        (
            {"kb-es-association": ["kb"]},
            [ResourceKey("kb-es-association", "es-ns", "kb")],
            ["kb-es-association"],
            [ResourceKey("kb-es-association", "es-ns", "kb")],
        ),
        # Sorted, across controllers.
        (
            {"elasticsearch": ["b", "a"]},
            [POLICY],
            ["stackconfigpolicy"],
            [
                ResourceKey("elasticsearch", "es-ns", "a"),
                ResourceKey("elasticsearch", "es-ns", "b"),
                POLICY,
            ],
        ),
        ({}, [], [], []),
    ],
)
def test_fast_flip_targets(
    in_namespace: dict[str, list[str]],
    referrers: list[ResourceKey],
    mapped: list[str],
    expected: list[ResourceKey],
) -> None:
    assert (
        fast_flip_targets(
            "es-ns",
            in_namespace=in_namespace,
            referrers=referrers,
            mapped=mapped,
        )
        == expected
    )


@pytest.mark.parametrize(
    ("deferred", "expected"),
    [
        ([], [ES_KEY, KB_ASSOCIATION, ResourceKey("license", "es-ns", "es")]),
        (["license"], [ES_KEY, KB_ASSOCIATION]),
        (["license", "kb-es-association"], [ES_KEY]),
    ],
)
def test_deferred_controllers_wait_for_the_flip_workflow(
    deferred: list[str], expected: list[ResourceKey]
) -> None:
    assert (
        fast_flip_targets(
            "es-ns",
            in_namespace={"elasticsearch": ["es"], "license": ["es"]},
            referrers=[KB_ASSOCIATION],
            mapped=["license", "kb-es-association"],
            deferred=deferred,
        )
        == expected
    )


def test_an_elasticsearchs_license_and_remote_clusters_follow_a_flip_through_the_workflow() -> None:
    deferred = {controller.name for controller in CONTROLLERS if not controller.fast_flip}
    assert deferred == {"license", "remotecluster"}


def test_the_fast_trigger_is_the_flip_workflows_trigger() -> None:
    """Same reason, source (the flip workflow's id) and detail: the resource workflow coalesces
    the fast path's trigger and the flip workflow's when they meet in one batch."""
    trigger = flip_trigger("team-b", "42", FlipDirectionName.OUT_OF_SCOPE)
    assert trigger.reason is TriggerReason.NAMESPACE_FLIP
    assert trigger.source == flip_workflow_id("team-b", "42")
    assert trigger.detail == "namespace team-b OutOfScope"


@pytest.mark.parametrize(
    ("environ", "enabled"),
    [
        ({}, True),
        ({"STACKFLOW_FLIP_FAST_PATH": "1"}, True),
        ({"STACKFLOW_FLIP_FAST_PATH": "true"}, True),
        ({"STACKFLOW_FLIP_FAST_PATH": "0"}, False),
        ({"STACKFLOW_FLIP_FAST_PATH": "False"}, False),
        ({"STACKFLOW_FLIP_FAST_PATH": " off "}, False),
    ],
)
def test_fast_path_enabled(environ: dict[str, str], enabled: bool) -> None:
    assert fast_path_enabled(environ) is enabled


def test_referrers_into_a_namespace() -> None:
    index = ReferenceIndex()
    index.set_references(
        controller="kb-es-association",
        namespace="kb-ns",
        name="kb",
        references=[ObjectKey.of(SECRETS, namespace="es-ns", name="es-http-certs-public")],
    )
    index.set_references(
        controller="elasticsearch",
        namespace="es-ns",
        name="es",
        references=[ObjectKey.of(SECRETS, namespace="es-ns", name="users")],
    )
    index.set_references(
        controller="elasticsearch",
        namespace="other",
        name="es",
        references=[ObjectKey.of(SECRETS, namespace="other", name="users")],
    )
    assert index.referrers_into("es-ns") == [
        ResourceKey("elasticsearch", "es-ns", "es"),
        KB_ASSOCIATION,
    ]
    assert index.referrers_into("nowhere") == []
    assert GroupKindName("", "Secret", "es-ns", "users") in {
        *index.references_of(controller="elasticsearch", namespace="es-ns", name="es")
    }


def _flip(source: str) -> Trigger:
    return Trigger(reason=TriggerReason.NAMESPACE_FLIP, source=source, detail="namespace a")


SPEC = Trigger(reason=TriggerReason.SPEC_CHANGED, source="watch Elasticsearch")
RESYNC = _flip("leader resync")


@pytest.mark.parametrize(
    ("triggers", "handled", "kept"),
    [
        # The flip workflow's delivery of a flip the fast path brought already.
        ((_flip("flip/a/1"),), ("flip/a/1",), ()),
        ((_flip("flip/a/1"), SPEC), ("flip/a/1",), (SPEC,)),
        # Another flip of the same namespace is new.
        ((_flip("flip/a/2"),), ("flip/a/1",), (_flip("flip/a/2"),)),
        # A resync's flip repeats its source: never taken for a handled one.
        ((RESYNC,), ("leader resync",), (RESYNC,)),
        ((), ("flip/a/1",), ()),
    ],
)
def test_unhandled(
    triggers: tuple[Trigger, ...], handled: tuple[str, ...], kept: tuple[Trigger, ...]
) -> None:
    assert decisions.unhandled(triggers, handled) == kept


@pytest.mark.parametrize(
    ("handled", "triggers", "remembered"),
    [
        ((), (_flip("flip/a/1"), SPEC, RESYNC), ("flip/a/1",)),
        (("flip/a/1",), (_flip("flip/a/1"),), ("flip/a/1",)),
        (
            tuple(f"flip/a/{number}" for number in range(decisions.FLIPS_REMEMBERED)),
            (_flip("flip/b/1"),),
            (*(f"flip/a/{number}" for number in range(1, decisions.FLIPS_REMEMBERED)), "flip/b/1"),
        ),
    ],
)
def test_remember_flips(
    handled: tuple[str, ...], triggers: tuple[Trigger, ...], remembered: tuple[str, ...]
) -> None:
    assert decisions.remember_flips(handled, triggers) == remembered


def test_the_flip_source_prefix_names_flip_workflows() -> None:
    assert flip_workflow_id("a", "1").startswith(FLIP_SOURCE_PREFIX)


IN = FlipDirectionName.INTO_SCOPE
OUT = FlipDirectionName.OUT_OF_SCOPE


def _of(namespace: str, direction: FlipDirectionName, number: int = 1) -> Trigger:
    return namespace_flip_trigger(f"flip/{namespace}/{number}", namespace, direction)


@pytest.mark.parametrize(
    ("triggers", "verdict", "seen"),
    [
        # The step shows the flip: into scope and past the scope gate, or out and stopped there.
        ((_of("team-a", IN),), StepVerdict.RECONCILED, (_of("team-a", IN),)),
        ((_of("team-a", IN),), StepVerdict.UNLICENSED, (_of("team-a", IN),)),
        ((_of("team-a", IN),), StepVerdict.INVALID_SPEC, (_of("team-a", IN),)),
        ((_of("team-a", OUT),), StepVerdict.OUT_OF_SCOPE, (_of("team-a", OUT),)),
        # A step that decided on the old scope (a replica whose cache lags): not seen.
        ((_of("team-a", IN),), StepVerdict.OUT_OF_SCOPE, ()),
        ((_of("team-a", OUT),), StepVerdict.RECONCILED, ()),
        # Another namespace's flip (a referrer of a target there): no verdict shows it.
        ((_of("team-b", OUT),), StepVerdict.RECONCILED, ()),
        # No step ran, or not a flip workflow's trigger.
        ((_of("team-a", IN),), None, ()),
        ((RESYNC, SPEC), StepVerdict.RECONCILED, ()),
        (
            (_of("team-a", IN, 1), _of("team-b", IN, 2)),
            StepVerdict.RECONCILED,
            (_of("team-a", IN, 1),),
        ),
    ],
)
def test_flips_seen(
    triggers: tuple[Trigger, ...], verdict: StepVerdict | None, seen: tuple[Trigger, ...]
) -> None:
    assert decisions.flips_seen(triggers, "team-a", verdict) == seen


@pytest.mark.parametrize(
    ("trigger", "flip"),
    [
        (_of("team-a", IN), ("team-a", IN)),
        (namespace_flip_trigger("flip/x/2-selector-5", "x", OUT), ("x", OUT)),
        (Trigger(reason=TriggerReason.NAMESPACE_FLIP, source="flip/a/1", detail="flip"), None),
        (
            Trigger(
                reason=TriggerReason.NAMESPACE_FLIP, source="resync", detail="namespace a IntoScope"
            ),
            None,
        ),
        (
            Trigger(
                reason=TriggerReason.SPEC_CHANGED, source="flip/a/1", detail="namespace a IntoScope"
            ),
            None,
        ),
    ],
)
def test_flip_of(trigger: Trigger, flip: tuple[str, FlipDirectionName] | None) -> None:
    assert flip_of(trigger) == flip
