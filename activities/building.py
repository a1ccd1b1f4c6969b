"""Run a pure builder off the event loop, and turn its failure on user input into ``InvalidSpec``.

Builders generate RSA keys, sign certificates and hash passwords: CPU work of tens of
milliseconds each, hundreds of them for a large cluster. Run on the event loop they would keep
every other reconcile, the watchers and the ``/healthz`` probe waiting, so they run in a worker
thread. Validation checks the shapes a builder reads; should a spec still reach a builder in a
shape it cannot read, the error names the resource and becomes ``InvalidSpec`` (phase
``Invalid``, a ``Validation`` warning) instead of a traceback retried for ever.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TypeVar

from activities.errors import InvalidSpecError

__all__ = ["build_off_loop"]

logger = logging.getLogger("activities.building")

_T = TypeVar("_T")

#: What a builder raises when user input has a shape it does not expect (validation missed it).
_SHAPE_ERRORS = (AttributeError, TypeError, KeyError, IndexError, RecursionError)


async def build_off_loop(subject: str, build: Callable[[], _T]) -> _T:
    """Run ``build`` in a worker thread and return what it built.

    ``subject`` names the resource (``Elasticsearch ns/name``). A ``ValueError`` is the builders'
    own refusal, already a message for the user; any other error from the shape of the spec
    becomes an ``InvalidSpecError`` naming ``subject`` and the error.
    """
    try:
        return await asyncio.to_thread(build)
    except _SHAPE_ERRORS as error:
        # One line, no traceback: the message goes to the resource's status and event.
        logger.warning(
            "cannot build %s from its spec: %s: %s", subject, type(error).__name__, error
        )
        raise InvalidSpecError(
            f"{subject}: the spec cannot be built ({type(error).__name__}: {error}); "
            "check the shapes of podTemplate, config and volumeClaimTemplates"
        ) from error
    except ValueError as error:
        raise InvalidSpecError(str(error)) from error
