"""The kube-scheduler extender's ``filter`` verb over HTTP: the :class:`NodeFilter` the server hands
the fake scheduler when kubesim is started with ``--scheduler-extender URL``.

It speaks what kube-scheduler v1.37 sends a ``nodeCacheCapable`` extender
(``k8s.io/kube-scheduler/extender/v1/types.go``, marshalled by Go's ``encoding/json``, whose structs
carry no JSON tags): ``POST <URL>/filter`` with ``{"Pod": <v1.Pod>, "Nodes": null, "NodeNames":
[<candidate node names>]}``, answered ``{"NodeNames": [...], "FailedNodes": {name: reason},
"FailedAndUnresolvableNodes": {name: reason}, "Error": ""}`` (``Nodes`` with a ``v1.NodeList`` is read
when ``NodeNames`` is null). Answer field names match case-insensitively, exact spelling first, as Go
decodes them. A failure is worded as the scheduler's ``HTTPExtender`` words it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import aiohttp

from kubesim.controllers.scheduling import ExtenderVerdict

__all__ = ["DEFAULT_TIMEOUT_SECONDS", "HttpExtender", "filter_args", "read_filter_result"]

#: kube-scheduler's ``DefaultExtenderTimeout``.
DEFAULT_TIMEOUT_SECONDS = 5.0


def filter_args(pod: Mapping[str, Any], node_names: Sequence[str]) -> dict[str, Any]:
    """The ``ExtenderArgs`` body of a nodeCacheCapable filter call."""
    return {"Pod": dict(pod), "Nodes": None, "NodeNames": list(node_names)}


def _field(answer: Mapping[str, Any], name: str) -> Any:
    """``answer[name]``, else the first key equal to ``name`` ignoring case (Go's decoder)."""
    if name in answer:
        return answer[name]
    folded = name.casefold()
    return next((value for key, value in answer.items() if key.casefold() == folded), None)


def _reasons(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping):
        return {}
    return {str(node): str(reason) for node, reason in value.items()}


def read_filter_result(answer: Any, *, asked: Sequence[str], url: str) -> ExtenderVerdict:
    """The verdict of an ``ExtenderFilterResult`` answer to a call that offered ``asked``."""
    if not isinstance(answer, Mapping):
        return ExtenderVerdict(error=f"extender {url!r} answered no ExtenderFilterResult object")
    error = _field(answer, "Error")
    if error:
        return ExtenderVerdict(error=str(error))
    names = _field(answer, "NodeNames")
    if not isinstance(names, list):
        nodes = _field(answer, "Nodes")
        items = _field(nodes, "Items") if isinstance(nodes, Mapping) else None
        names = [
            str(_field(_field(item, "metadata") or {}, "name") or "")
            for item in items or []
            if isinstance(item, Mapping)
        ]
    offered = set(asked)
    for name in names:
        if name not in offered:
            return ExtenderVerdict(
                error=f'extender "{url}" claims a filtered node "{name}" which is not found '
                "in the input node list"
            )
    return ExtenderVerdict(
        node_names=tuple(str(name) for name in names),
        failed=_reasons(_field(answer, "FailedNodes")),
        unresolvable=_reasons(_field(answer, "FailedAndUnresolvableNodes")),
    )


class HttpExtender:
    """One scheduler extender at ``url`` (its ``filter`` verb; no prioritize, bind or preempt)."""

    def __init__(self, url: str, *, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        """Nothing connects until the first call."""
        self.url = url
        self._timeout = aiohttp.ClientTimeout(total=timeout_seconds)
        self._session: aiohttp.ClientSession | None = None

    @property
    def filter_url(self) -> str:
        """``<url>/filter``."""
        return self.url.rstrip("/") + "/filter"

    async def filter(self, pod: Mapping[str, Any], node_names: Sequence[str]) -> ExtenderVerdict:
        """POST the pod and its candidate nodes; every failure becomes a verdict with an error."""
        endpoint = self.filter_url
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        try:
            async with self._session.post(endpoint, json=filter_args(pod, node_names)) as response:
                if response.status != 200:
                    return ExtenderVerdict(
                        error=f"failed filter with extender at URL {endpoint}, "
                        f"code {response.status}"
                    )
                answer = await response.json(content_type=None)
        except (TimeoutError, aiohttp.ClientError, ValueError) as exc:
            detail = str(exc) or type(exc).__name__
            return ExtenderVerdict(error=f'Post "{endpoint}": {detail}')
        return read_filter_result(answer, asked=node_names, url=self.url)

    async def close(self) -> None:
        """Close the connections (a later call opens new ones)."""
        if self._session is not None:
            await self._session.close()
            self._session = None
