"""The worker's memory settings: the sticky cache sized from a memory budget, and the sandbox's
pass-through modules.

``max_cached_workflows`` is pure: a memory budget, what the rest of the operator needs and what
one cached workflow costs give how many workflows the Temporal worker keeps in its sticky cache,
within bounds. ``sticky_cache_size`` feeds it the process's cgroup memory limit
(``memory_limit``, cgroup v2 or v1) or, without one, ``DEFAULT_MEMORY_BUDGET``; the
``temporal-max-cached-workflows`` setting, when given, wins.

The per-workflow costs are measured (``bench/memory_bench.py`` and the notes below): the RSS a
``ResourceWorkflow`` adds while it sits in the cache, about two thirds of it in the Temporal
core's per-run state machines and one third in the Python workflow instance.

* unsandboxed (the default runner): about 85 KB after one reconcile, growing by about 3 KB per
  reconcile held in the run (130 KB after four, 170 KB after thirty, 405 KB after a hundred) until
  the run continues as new: the figure below holds for runs of a few dozen reconciles;
* sandboxed: about 215 KB after one reconcile with Temporal's default restrictions, 155 KB when
  the pure modules the workflows import are passed through (``SANDBOX_PASSTHROUGH_MODULES``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import structlog
from temporalio.worker.workflow_sandbox import SandboxRestrictions

__all__ = [
    "DEFAULT_MEMORY_BUDGET",
    "MAX_CACHED_WORKFLOWS",
    "MIN_CACHED_WORKFLOWS",
    "OPERATOR_RESERVE",
    "SANDBOXED_WORKFLOW_BYTES",
    "SANDBOX_PASSTHROUGH_MODULES",
    "SANDBOX_RESTRICTIONS",
    "UNSANDBOXED_WORKFLOW_BYTES",
    "CacheSizing",
    "max_cached_workflows",
    "memory_limit",
    "parse_memory_limit",
    "sticky_cache_size",
]

MiB = 1024 * 1024
KiB = 1024

#: Planned RSS of one cached ResourceWorkflow (measured 85 KB fresh, 130 KB after a few
#: reconciles): the figure the cache is sized with, unsandboxed.
UNSANDBOXED_WORKFLOW_BYTES = 128 * KiB
#: The same in the sandbox with ``SANDBOX_RESTRICTIONS`` (measured 155 KB fresh, 195 KB after a
#: few reconciles; 215 KB fresh with Temporal's default restrictions).
SANDBOXED_WORKFLOW_BYTES = 224 * KiB
#: What the operator needs besides the sticky cache: the interpreter and its imports (about
#: 135 MB), the worker, and the informer caches of a large cluster (about 25 MB for 10,000
#: namespaces each with an Elasticsearch), plus room for activity work.
OPERATOR_RESERVE = 192 * MiB
#: The memory the operator plans with when its cgroup sets no limit: 256 cached workflows, so that
#: its RSS stays flat as clusters come into scope instead of growing with up to 576 workflows
#: (``bench/sizing_bench.py``, 250 Elasticsearch in scope, 751 workflows: 222-249 MiB in the four
#: minutes after the reconciles instead of 260-276 MiB with 580 cached;
#: ``bench/memory_bench.py --count 500``: 212-214 MB instead of 232-236 MB). A workflow out of the
#: cache replays its history at its next signal, a short one (its run continues as new).
DEFAULT_MEMORY_BUDGET = 224 * MiB
#: The share of a cgroup limit the operator plans to use (the rest is headroom: page cache,
#: allocator slack, bursts).
LIMIT_SHARE = 0.9
#: Bounds: below the minimum most signals replay a history; above the maximum, a larger cache
#: buys little (the replica's workflows rarely all need to stay warm).
MIN_CACHED_WORKFLOWS = 100
MAX_CACHED_WORKFLOWS = 10_000
#: Limits at or above this read as "no limit" (cgroup v1 reports a huge number for none).
_UNLIMITED = 1 << 60

_log = structlog.get_logger("stackflow.cli.sizing")

#: Pure modules the workflows import that the sandbox may share instead of re-importing for
#: every run: the loop's decisions (the workflow module imports it inside
#: ``imports_passed_through``, but ``from workflows import decisions`` re-executes it anyway) and
#: the activity options. The workflow modules themselves stay sandboxed.
SANDBOX_PASSTHROUGH_MODULES = ("workflows.decisions", "workflows.activity_options")
SANDBOX_RESTRICTIONS = SandboxRestrictions.default.with_passthrough_modules(
    *SANDBOX_PASSTHROUGH_MODULES
)


@dataclass(frozen=True)
class CacheSizing:
    """The inputs of ``max_cached_workflows`` besides the budget."""

    per_workflow_bytes: int = UNSANDBOXED_WORKFLOW_BYTES
    reserve_bytes: int = OPERATOR_RESERVE
    minimum: int = MIN_CACHED_WORKFLOWS
    maximum: int = MAX_CACHED_WORKFLOWS

    @classmethod
    def for_runner(cls, *, sandboxed: bool) -> CacheSizing:
        """The sizing for the sandboxed or the unsandboxed runner."""
        return cls(
            per_workflow_bytes=SANDBOXED_WORKFLOW_BYTES if sandboxed else UNSANDBOXED_WORKFLOW_BYTES
        )


def max_cached_workflows(*, memory_limit: int | None, sizing: CacheSizing = CacheSizing()) -> int:
    """How many workflows the sticky cache holds (pure).

    The budget is ``LIMIT_SHARE`` of the memory limit, or ``DEFAULT_MEMORY_BUDGET`` without one;
    what is left of it after ``sizing.reserve_bytes``, divided by the per-workflow cost, bounded
    by ``sizing.minimum`` and ``sizing.maximum``.
    """
    if sizing.per_workflow_bytes <= 0:
        raise ValueError(f"per-workflow cost must be positive, got {sizing.per_workflow_bytes}")
    if memory_limit is None or memory_limit >= _UNLIMITED:
        budget = DEFAULT_MEMORY_BUDGET
    else:
        budget = int(memory_limit * LIMIT_SHARE)
    workflows = max(0, budget - sizing.reserve_bytes) // sizing.per_workflow_bytes
    return max(sizing.minimum, min(sizing.maximum, workflows))


def parse_memory_limit(text: str) -> int | None:
    """A cgroup memory limit file's content in bytes; None for "max", unlimited or unreadable
    (pure)."""
    value = text.strip()
    if not value or value == "max":
        return None
    try:
        limit = int(value)
    except ValueError:
        return None
    return limit if 0 < limit < _UNLIMITED else None


def memory_limit(root: Path = Path("/sys/fs/cgroup")) -> int | None:
    """This process's cgroup memory limit in bytes (cgroup v2 ``memory.max``, else v1
    ``memory/memory.limit_in_bytes``), or None when none is set or none can be read."""
    for path in (root / "memory.max", root / "memory" / "memory.limit_in_bytes"):
        try:
            text = path.read_text(encoding="ascii")
        except (OSError, UnicodeDecodeError):
            continue
        return parse_memory_limit(text)
    return None


def sticky_cache_size(configured: int | None, *, sandboxed: bool, limit: int | None = None) -> int:
    """``temporal-max-cached-workflows`` when set, else the size ``max_cached_workflows`` gives
    for this process's memory limit (``limit``, read from the cgroup when not given)."""
    if configured is not None:
        return configured
    if limit is None:
        limit = memory_limit()
    sizing = CacheSizing.for_runner(sandboxed=sandboxed)
    size = max_cached_workflows(memory_limit=limit, sizing=sizing)
    _log.info(
        "worker.sticky_cache_sized",
        max_cached_workflows=size,
        memory_limit=limit,
        per_workflow_bytes=sizing.per_workflow_bytes,
    )
    return size
