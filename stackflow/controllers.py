"""The controller table: one entry per controller (see docs/engine.md)."""
