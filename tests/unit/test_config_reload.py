"""The live reload of the configuration file: what each change makes the operator do (tables)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from stackflow.config import ConfigError, OperatorConfig
from stackflow.models.engine import FlipDirectionName
from stackflow.scope import NamespaceMatcher, SelectorFlip, selector_change_flips
from tests.polling import eventually
from watchers.config_reload import (
    ConfigFileWatcher,
    ReloadAction,
    ReloadDecision,
    changed_keys,
    decide_reload,
)

DYNAMIC = {"namespace-selector": {"matchLabels": {"team": "a"}}}


def config(**settings: Any) -> OperatorConfig:
    """A configuration from kebab-case keys (``namespace_selector`` → ``namespace-selector``)."""
    return OperatorConfig.model_validate({key.replace("_", "-"): v for key, v in settings.items()})


def dynamic(labels: dict[str, str], **settings: Any) -> OperatorConfig:
    return config(namespace_selector={"matchLabels": labels}, **settings)


@pytest.mark.parametrize(
    ("current", "loaded", "action", "reason_has"),
    [
        (dynamic({"team": "a"}), dynamic({"team": "a"}), ReloadAction.KEEP, "no effective change"),
        (dynamic({"team": "a"}), dynamic({"team": "b"}), ReloadAction.APPLY_SELECTOR, "selector"),
        (
            dynamic({"team": "a"}),
            config(namespace_selector={"matchExpressions": [{"key": "t", "operator": "Exists"}]}),
            ReloadAction.APPLY_SELECTOR,
            "namespace-selector changed",
        ),
        (config(), config(namespace_selector={}), ReloadAction.KEEP, "no effective change"),
        (config(), dynamic({"team": "a"}), ReloadAction.RESTART, "all-namespaces to dynamic"),
        (dynamic({"team": "a"}), config(), ReloadAction.RESTART, "dynamic to all-namespaces"),
        (
            dynamic({"team": "a"}),
            config(namespaces=["a"]),
            ReloadAction.RESTART,
            "dynamic to static-list",
        ),
        (config(namespaces=["a"]), dynamic({"t": "a"}), ReloadAction.RESTART, "static-list to"),
        (
            config(namespaces=["a"]),
            config(namespaces=["a", "b"]),
            ReloadAction.APPLY_NAMESPACES,
            "namespaces changed",
        ),
        (
            config(namespaces=["a"]),
            config(namespaces=["b"], log_verbosity=1),
            ReloadAction.RESTART,
            "log-verbosity",
        ),
        (config(namespaces=["a"]), config(namespaces=["a"]), ReloadAction.KEEP, "no effective"),
        (
            dynamic({"team": "a"}),
            dynamic({"team": "b"}, log_verbosity=1),
            ReloadAction.RESTART,
            "log-verbosity changed",
        ),
        (
            dynamic({"team": "a"}),
            dynamic({"team": "a"}, operator_namespace="other"),
            ReloadAction.RESTART,
            "operator-namespace changed",
        ),
        (config(), config(temporal_address="x:1"), ReloadAction.RESTART, "temporal-address"),
        (
            config(),
            config(enforce_rbac_on_refs=True),
            ReloadAction.RESTART,
            "enforce-rbac-on-refs",
        ),
        (
            dynamic({"team": "a"}),
            ConfigError('namespace-selector: invalid selector "a=="'),
            ReloadAction.REJECT,
            "namespace-selector",
        ),
    ],
)
def test_decide_reload(
    current: OperatorConfig,
    loaded: OperatorConfig | ConfigError,
    action: ReloadAction,
    reason_has: str,
) -> None:
    decision = decide_reload(current, loaded)
    assert decision.action is action
    assert reason_has in decision.reason
    assert "\n" not in decision.reason


@pytest.mark.parametrize(
    ("current", "loaded", "keys"),
    [
        (config(), config(), []),
        (config(), config(namespace_selector={}), []),
        (config(), config(metrics_port=9000, log_verbosity=2), ["metrics-port", "log-verbosity"]),
        (dynamic({"a": "b"}), dynamic({"a": "c"}), ["namespace-selector"]),
    ],
)
def test_changed_keys(current: OperatorConfig, loaded: OperatorConfig, keys: list[str]) -> None:
    assert changed_keys(current, loaded) == keys


class _Namespaces:
    def namespace_labels(self, name: str) -> None:
        return None

    def namespace_names(self) -> list[str]:
        return []


def namespace(name: str, labels: dict[str, str], rv: str = "7") -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels, "resourceVersion": rv}}


def matcher(labels: dict[str, str]) -> NamespaceMatcher:
    return NamespaceMatcher(dynamic(labels).scope(), source=_Namespaces())


NAMESPACES = [
    namespace("only-old", {"team": "a"}, "1"),
    namespace("only-new", {"team": "b"}, "2"),
    namespace("both", {"team": "a", "tier": "b"}, "3"),
    namespace("neither", {"team": "c"}, "4"),
    namespace("elastic-system", {"team": "a"}, "5"),
]


@pytest.mark.parametrize(
    ("before", "after", "flips"),
    [
        ({"team": "a"}, {"team": "a"}, []),
        (
            {"team": "a"},
            {"team": "b"},
            [
                SelectorFlip("both", "3", FlipDirectionName.OUT_OF_SCOPE),
                SelectorFlip("only-new", "2", FlipDirectionName.INTO_SCOPE),
                SelectorFlip("only-old", "1", FlipDirectionName.OUT_OF_SCOPE),
            ],
        ),
        (
            {"team": "a"},
            {"tier": "b"},
            [SelectorFlip("only-old", "1", FlipDirectionName.OUT_OF_SCOPE)],
        ),
        (
            {"team": "c"},
            {"team": "a"},
            [
                SelectorFlip("both", "3", FlipDirectionName.INTO_SCOPE),
                SelectorFlip("neither", "4", FlipDirectionName.OUT_OF_SCOPE),
                SelectorFlip("only-old", "1", FlipDirectionName.INTO_SCOPE),
            ],
        ),
    ],
)
def test_selector_change_flips(
    before: dict[str, str], after: dict[str, str], flips: list[SelectorFlip]
) -> None:
    # The operator namespace never flips, whatever the selectors say of its labels.
    assert selector_change_flips(NAMESPACES, before=matcher(before), after=matcher(after)) == flips


def test_the_matcher_takes_a_new_selector_only_within_dynamic_mode() -> None:
    live = matcher({"team": "a"})
    assert not live.namespace_matches(namespace("x", {"team": "b"}))
    live.reconfigure(dynamic({"team": "b"}).scope())
    assert live.namespace_matches(namespace("x", {"team": "b"}))
    with pytest.raises(ValueError, match="only the selector"):
        live.reconfigure(config(namespaces=["a"]).scope())
    with pytest.raises(ValueError, match="only the selector"):
        live.reconfigure(dynamic({"team": "b"}, operator_namespace="other").scope())


class _Cache:
    def __init__(self, namespaces: list[dict[str, Any]]) -> None:
        self.namespaces = namespaces

    def list(self) -> list[dict[str, Any]]:
        return self.namespaces


class _NamespaceInformer(_Namespaces):
    def __init__(self, namespaces: list[dict[str, Any]]) -> None:
        self.cache = _Cache(namespaces)


class _Informers:
    def __init__(self) -> None:
        self.changes = 0

    async def change_namespaces(self) -> None:
        self.changes += 1


class _Watchers:
    """What the config watcher uses of ``Watchers``: the Namespace cache, the informer set,
    leadership, flips."""

    def __init__(self, *, leader: bool) -> None:
        self.namespaces = _NamespaceInformer(NAMESPACES)
        self.informers = _Informers()
        self.is_leader = leader
        self.flips: list[tuple[str, str, FlipDirectionName]] = []

    async def start_flip(self, namespace: str, revision: str, direction: FlipDirectionName) -> bool:
        self.flips.append((namespace, revision, direction))
        return True


@pytest.mark.parametrize(
    ("written", "leader", "action", "restarts", "flipped", "selector_after"),
    [
        ({"team": "a"}, True, ReloadAction.KEEP, False, [], "team=a"),
        (
            {"team": "b"},
            True,
            ReloadAction.APPLY_SELECTOR,
            False,
            ["both", "only-new", "only-old"],
            "team=b",
        ),
        ({"team": "b"}, False, ReloadAction.APPLY_SELECTOR, False, [], "team=b"),
        (None, True, ReloadAction.RESTART, True, [], "team=a"),
        ("not a selector ==", True, ReloadAction.REJECT, False, [], "team=a"),
    ],
)
async def test_the_watcher_acts_on_what_it_decides(
    tmp_path: Path,
    written: Any,
    leader: bool,
    action: ReloadAction,
    restarts: bool,
    flipped: list[str],
    selector_after: str,
) -> None:
    path = tmp_path / "operator.yaml"
    settings: dict[str, Any] = {}
    if isinstance(written, dict):
        settings["namespace-selector"] = {"matchLabels": written}
    elif written is not None:
        settings["namespace-selector"] = written
    path.write_text(yaml.safe_dump(settings))
    live = matcher({"team": "a"})
    watchers = _Watchers(leader=leader)
    restarted: list[bool] = []
    watcher = ConfigFileWatcher(
        path,
        current=dynamic({"team": "a"}),
        matcher=live,
        watchers=watchers,  # type: ignore[arg-type]
        restart=lambda: restarted.append(True),
        environ={},
    )
    decision = await watcher.check()
    assert decision.action is action
    assert bool(restarted) is restarts
    assert sorted(flip[0] for flip in watchers.flips) == flipped
    # Each flip has an id of its own: the Namespace's resourceVersion, then the selector change.
    assert all("-selector-" in flip[1] for flip in watchers.flips)
    assert live.scope.namespace_selector is not None
    assert live.scope.namespace_selector.to_string() == selector_after


@pytest.mark.parametrize(
    ("before", "after", "flipped"),
    [
        (["only-old"], ["only-old"], []),
        (["only-old"], ["only-old", "both"], [("both", FlipDirectionName.INTO_SCOPE)]),
        (
            ["only-old", "neither"],
            ["only-new", "unknown"],
            [
                ("neither", FlipDirectionName.OUT_OF_SCOPE),
                ("only-new", FlipDirectionName.INTO_SCOPE),
                ("only-old", FlipDirectionName.OUT_OF_SCOPE),
            ],
        ),
    ],
)
async def test_a_new_static_list_is_watched_and_flips_what_turned(
    tmp_path: Path,
    before: list[str],
    after: list[str],
    flipped: list[tuple[str, FlipDirectionName]],
) -> None:
    path = tmp_path / "operator.yaml"
    path.write_text(yaml.safe_dump({"namespaces": after}))
    live = NamespaceMatcher(config(namespaces=before).scope(), source=_Namespaces())
    watchers = _Watchers(leader=True)
    watcher = ConfigFileWatcher(
        path,
        current=config(namespaces=before),
        matcher=live,
        watchers=watchers,  # type: ignore[arg-type]
        restart=lambda: pytest.fail("a new list needs no restart"),
        environ={},
    )
    await watcher.check()
    # A namespace that does not exist ("unknown") is watched, but nothing flips for it.
    assert [(flip[0], flip[2]) for flip in watchers.flips] == flipped
    assert live.watched_namespaces == tuple(sorted({*after, "elastic-system"}))
    assert watchers.informers.changes == (0 if before == after else 1)


#: Contents the loader refuses, each with the key its refusal names.
REFUSED_CONTENTS: list[tuple[str | bytes, str]] = [
    ("namespace-selector: &a {matchLabels: {team: b}}\nnamespaces: *a\n", "namespace-selector"),
    ("namespace-selector: " + "[" * 2000 + "]" * 2000, "namespace-selector: nested more than"),
    (
        "namespace-selector: {matchLabels: {team: b}}\nnamespace-selector: {}\n",
        "namespace-selector: duplicate key",
    ),
    ("namespace-selector: {matchLabels: {team: b}}\nwebhook-port: true\n", "webhook-port"),
    ("# " + "x" * (1024 * 1024 + 1), "larger than 1 MiB"),
    (b"namespace-selector: \xff\xfe", "cannot be read"),
]


@pytest.mark.parametrize(("content", "names"), REFUSED_CONTENTS)
async def test_a_refused_file_keeps_the_last_good_configuration(
    tmp_path: Path, content: str | bytes, names: str
) -> None:
    path = tmp_path / "operator.yaml"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    live = matcher({"team": "a"})
    watcher = ConfigFileWatcher(
        path,
        current=dynamic({"team": "a"}),
        matcher=live,
        watchers=_Watchers(leader=True),  # type: ignore[arg-type]
        restart=lambda: pytest.fail("a refused file restarts nothing"),
        environ={},
    )
    decision = await watcher.check()
    assert decision.action is ReloadAction.REJECT
    assert names in decision.reason
    assert len(decision.reason) < 1200
    assert live.scope.namespace_selector is not None
    assert live.scope.namespace_selector.to_string() == "team=a"


class _RecordingWatcher(ConfigFileWatcher):
    """The watcher, keeping each decision its polls made."""

    decisions: list[ReloadDecision]

    async def check(self) -> ReloadDecision:
        decision = await super().check()
        self.decisions.append(decision)
        return decision


class _FailingOnceInformers(_Informers):
    async def change_namespaces(self) -> None:
        self.changes += 1
        if self.changes == 1:
            raise RuntimeError("the informers could not restart")


async def test_the_watcher_outlives_every_refused_file_and_applies_the_next_good_one(
    tmp_path: Path,
) -> None:
    path = tmp_path / "operator.yaml"
    path.write_text(yaml.safe_dump({"namespaces": ["a"]}))
    live = NamespaceMatcher(config(namespaces=["a"]).scope(), source=_Namespaces())
    watchers = _Watchers(leader=True)
    watchers.informers = _FailingOnceInformers()
    watcher = _RecordingWatcher(
        path,
        current=config(namespaces=["a"]),
        matcher=live,
        watchers=watchers,  # type: ignore[arg-type]
        restart=lambda: pytest.fail("nothing here needs a restart"),
        environ={},
        interval=0.01,
    )
    watcher.decisions = []
    stop = asyncio.Event()
    watching = asyncio.create_task(watcher.run(stop))
    try:
        await eventually(lambda: len(watcher.decisions) == 1, within=30, what="the first poll")
        # An apply that fails (the informers' restart) is logged, no decision returned; the
        # watch goes on.
        path.write_text(yaml.safe_dump({"namespaces": ["a", "b"]}))
        await eventually(lambda: watchers.informers.changes == 1, within=30, what="failed apply")
        for index, (content, _) in enumerate(REFUSED_CONTENTS):
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content)
            seen = index + 2
            await eventually(
                lambda: len(watcher.decisions) == seen,  # noqa: B023 - awaited in this turn
                within=30,
                what=f"refused content {index}",
            )
            assert watcher.decisions[-1].action is ReloadAction.REJECT
        path.write_text(yaml.safe_dump({"namespaces": ["a", "c"]}))
        await eventually(
            lambda: "c" in (live.watched_namespaces or ()), within=30, what="the good edit applied"
        )
        assert not watching.done()
    finally:
        stop.set()
        await watching
    assert watchers.informers.changes == 2
