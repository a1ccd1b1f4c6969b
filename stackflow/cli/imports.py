"""Importing a command's modules cheaply: the cyclic garbage collector paused, no plugin search.

Imports allocate hundreds of thousands of objects that live as long as the process (modules,
classes, functions, pydantic schemas). Each allocation burst starts a collection, and the oldest
generation's collections walk every one of them again: about 0.1 s of the operator's 0.8 s of
imports. ``collector_paused`` switches the collector off while a command's modules load, then
freezes what they made (``gc.freeze``: later collections skip it; it is not garbage and never
will be) and switches the collector back on, as it was.

Pydantic looks for plugins at the first model it builds by reading the entry points of every
installed distribution (``importlib.metadata``): 20 to 45 ms of the operator's start-up in the
development environment. Stackflow uses no pydantic plugin, so ``without_pydantic_plugins``
says so (``PYDANTIC_DISABLE_PLUGINS``) unless the environment already says something.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager

__all__ = ["PYDANTIC_PLUGINS_VARIABLE", "collector_paused", "without_pydantic_plugins"]

#: Pydantic's switch for its plugin search (``__all__``: no plugin is looked for).
PYDANTIC_PLUGINS_VARIABLE = "PYDANTIC_DISABLE_PLUGINS"


def without_pydantic_plugins(environ: MutableMapping[str, str]) -> None:
    """Tell pydantic, through ``environ``, to look for no plugin; a value already set wins."""
    environ.setdefault(PYDANTIC_PLUGINS_VARIABLE, "__all__")


@contextmanager
def collector_paused() -> Iterator[None]:
    """Collector off inside, everything allocated until the exit frozen, collector as before."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()
