"""Fakes of external servers used by tests."""
