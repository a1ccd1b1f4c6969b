"""Watchers: Kubernetes events → Temporal signals and flip workflows (leader only).

Modules: ``triggers`` (pure: which event asks which workflow to look again), ``references`` (the
reference index), ``signals`` (the deduplicating, leader-only Signaller), ``wiring`` (``Watchers``:
the informers wired to the Signaller, flips, license changes, the leader's resync).
"""

from __future__ import annotations
