"""Live changes of the mounted configuration file (``stackflow run --config FILE``).

ECK restarts on any change of its config file; Stackflow applies the changes of scope — a new
``namespace-selector`` in dynamic mode, a new ``namespaces`` list in static-list mode — without a
restart: the matcher takes the new selector or list (in static-list mode the informers start
watching the added namespaces and forget the removed ones) and every namespace whose verdict
turned starts a ``NamespaceFlipWorkflow``, as a label change would. Anything else (a switch between
modes, another key) decides a clean exit (status 0 after the graceful shutdown, so the Deployment
starts the operator again with the new file), and a file that no longer validates is refused, the
last good configuration staying in force.

The file is polled: a ConfigMap volume replaces a symlink (no inotify event on the path itself),
so its content is compared, not its mtime. What to do is decided by ``decide_reload`` (pure).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import structlog

from stackflow.config import (
    ConfigError,
    OperatorConfig,
    config_keys,
    load_config,
    read_bounded,
)
from stackflow.scope import NamespaceMatcher, ScopeMode, selector_change_flips
from watchers.wiring import Watchers

__all__ = [
    "CONFIG_POLL_SECONDS",
    "ConfigFileWatcher",
    "ReloadAction",
    "ReloadDecision",
    "changed_keys",
    "decide_reload",
]

#: How often the file is read (ECK polls every 15 s; the kubelet's ConfigMap sync is slower).
CONFIG_POLL_SECONDS = 5.0

_SCOPE_KEYS = frozenset({"namespaces", "namespace-selector"})

_log = structlog.get_logger("stackflow.config")


class ReloadAction(StrEnum):
    """What a new content of the configuration file makes the operator do."""

    KEEP = "keep"  # nothing that matters changed
    APPLY_SELECTOR = "apply-selector"  # dynamic mode, new selector: flip what turned
    APPLY_NAMESPACES = "apply-namespaces"  # static-list mode, new list: watch it, flip what turned
    RESTART = "restart"  # exit 0 after a graceful shutdown; the Deployment restarts it
    REJECT = "reject"  # invalid: log it, keep the last good configuration


@dataclass(frozen=True)
class ReloadDecision:
    """The action and the one-line reason the log gives for it."""

    action: ReloadAction
    reason: str


def changed_keys(current: OperatorConfig, loaded: OperatorConfig) -> list[str]:
    """The configuration keys whose effective value differs, in declaration order (pure).

    The selector is compared as the scope uses it: ``{}`` and no selector are the same.
    """
    changed = []
    for key, name in zip(config_keys(), OperatorConfig.model_fields, strict=True):
        if key == "namespace-selector":
            if current.scope().namespace_selector != loaded.scope().namespace_selector:
                changed.append(key)
        elif getattr(current, name) != getattr(loaded, name):
            changed.append(key)
    return changed


def decide_reload(current: OperatorConfig, loaded: OperatorConfig | ConfigError) -> ReloadDecision:
    """What to do with the configuration read from the file now (pure).

    ``current`` is the configuration in force; ``loaded`` the new one, or the error that refused
    it (which names the key).
    """
    if isinstance(loaded, ConfigError):
        return ReloadDecision(
            ReloadAction.REJECT, f"invalid configuration ignored, keeping the last good: {loaded}"
        )
    changed = changed_keys(current, loaded)
    if not changed:
        return ReloadDecision(ReloadAction.KEEP, "no effective change")
    before, after = current.scope().mode, loaded.scope().mode
    if before is not after:
        return ReloadDecision(
            ReloadAction.RESTART,
            f"namespace scope changes from {before.value} to {after.value}: restarting",
        )
    others = [key for key in changed if key not in _SCOPE_KEYS]
    if others:
        return ReloadDecision(
            ReloadAction.RESTART, f"{', '.join(others)} changed, which needs a restart: restarting"
        )
    if after is ScopeMode.DYNAMIC:
        return ReloadDecision(ReloadAction.APPLY_SELECTOR, "namespace-selector changed")
    return ReloadDecision(ReloadAction.APPLY_NAMESPACES, "namespaces changed")


class ConfigFileWatcher:
    """Polls the configuration file and applies, restarts for, or refuses each new content."""

    def __init__(
        self,
        path: Path,
        *,
        current: OperatorConfig,
        matcher: NamespaceMatcher,
        watchers: Watchers,
        restart: Callable[[], None],
        environ: Mapping[str, str],
        interval: float = CONFIG_POLL_SECONDS,
    ) -> None:
        """Watch ``path``; ``restart`` asks for the clean exit (it sets the operator's stop)."""
        self.path = path
        self.current = current
        self.matcher = matcher
        self.watchers = watchers
        self.restart = restart
        self.environ = environ
        self.interval = interval
        # Nothing seen yet: the first poll loads the file once and compares it with ``current``,
        # so an edit made while the operator was starting is not missed.
        self._seen: bytes | None = None

    def _read(self) -> bytes | None:
        try:
            return read_bounded(self.path)  # enough to see a change; the load refuses a big file
        except OSError:
            return None  # mid-swap or gone: the load below says so if it stays that way

    async def run(self, stop: asyncio.Event) -> None:
        """Poll until ``stop`` (or until a restart was asked for)."""
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=self.interval)
            if stop.is_set():
                return
            content = self._read()
            if content == self._seen:
                continue
            self._seen = content
            try:
                await self.check()
            except Exception as error:  # one bad apply must not end the watch
                # A failure applying a good file (e.g. the informers' restart): logged, and the
                # next edit is still read. The exit of this task would silently end the watch.
                _log.error("config.apply_failed", error=" ".join(str(error).splitlines())[:1000])

    async def check(self) -> ReloadDecision:
        """Load the file once and act on it; returns the decision."""
        try:
            loaded: OperatorConfig | ConfigError = load_config(self.path, self.environ)
        except ConfigError as error:
            loaded = error
        except Exception as error:  # no file content may end the watch
            # load_config bounds what it reads and names every problem; this is the backstop
            # for what it did not foresee (a RecursionError, a MemoryError...).
            loaded = ConfigError(
                f"config file {self.path}: cannot be loaded: {type(error).__name__}: {error}"
            )
        decision = decide_reload(self.current, loaded)
        if decision.action is ReloadAction.REJECT:
            _log.error("config.rejected", reason=decision.reason)
        elif decision.action is ReloadAction.RESTART:
            _log.warning("config.restart", reason=decision.reason)
            self.restart()
        elif decision.action in (ReloadAction.APPLY_SELECTOR, ReloadAction.APPLY_NAMESPACES):
            assert isinstance(loaded, OperatorConfig)
            await self._apply_scope(loaded)
        return decision

    async def _apply_scope(self, loaded: OperatorConfig) -> None:
        scope = loaded.scope()
        after = NamespaceMatcher(scope, source=self.watchers.namespaces)
        flips = selector_change_flips(
            self.watchers.namespaces.cache.list(), before=self.matcher, after=after
        )
        # The matcher first: the added namespaces' objects pass the scoped views as they arrive.
        self.matcher.reconfigure(scope)
        if scope.mode is ScopeMode.STATIC_LIST:
            await self.watchers.informers.change_namespaces()
        self.current = loaded
        selector = scope.namespace_selector
        _log.info(
            "config.scope_applied",
            selector=selector.to_string() if selector is not None else "",
            namespaces=list(scope.namespaces or ()),
            flips={flip.namespace: flip.direction.value for flip in flips},
        )
        if not self.watchers.is_leader:
            return  # the leader's own watcher starts the flips
        # A flip id of its own: the Namespace's resourceVersion did not change, and its last
        # label flip may have used ``flip/{namespace}/{resourceVersion}`` already.
        revision = (
            f"{'selector' if selector is not None else 'namespaces'}-{time.time_ns() // 1_000_000}"
        )
        await asyncio.gather(
            *(
                self.watchers.start_flip(
                    flip.namespace, f"{flip.resource_version}-{revision}", flip.direction
                )
                for flip in flips
            )
        )
