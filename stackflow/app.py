"""Wiring of the operator's parts (informers, watchers, Temporal worker); grows with the engine."""

from __future__ import annotations
