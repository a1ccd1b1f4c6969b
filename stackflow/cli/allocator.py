"""glibc's malloc arenas capped for the operator process.

glibc gives each thread that allocates concurrently an arena of its own, up to eight per core, and
an arena keeps the memory freed in it for its next allocations. The operator runs the Temporal
core's Tokio threads (70 and more at 1,000 namespaces), the workflow-task threads and the
builders' worker threads; at 1,000 namespaces its 16 arenas held 300 MB for 217 MB in use.
Two arenas, the usual advice for threaded servers (``MALLOC_ARENA_MAX=2``), set from the process
itself so that every way of running it (the image, ``make dev``, a test) gets it. An explicit
``MALLOC_ARENA_MAX`` in the environment wins; elsewhere than glibc nothing changes.
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping

__all__ = ["ARENAS", "cap_malloc_arenas"]

#: ``mallopt``'s parameter number for the arena cap (glibc's ``M_ARENA_MAX``).
_M_ARENA_MAX = -8
#: The cap.
ARENAS = 2


def cap_malloc_arenas(environ: Mapping[str, str], *, arenas: int = ARENAS) -> int | None:
    """Cap glibc's arenas at ``arenas`` unless ``MALLOC_ARENA_MAX`` is set; the cap set, or None
    when nothing was set (the variable given, or no glibc). Call it before threads start."""
    if environ.get("MALLOC_ARENA_MAX"):
        return None
    try:
        # The symbols the interpreter is linked with (libc among them): no library search.
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return None
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return arenas if mallopt(_M_ARENA_MAX, arenas) == 1 else None
