"""JSON requests to a running kubesim, shared by the HTTP test modules."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
from multidict import CIMultiDictProxy

from kubesim.testing import KubeSim


async def call(
    sim: KubeSim,
    request_line: str,
    *,
    body: Any = None,
    raw: bytes | None = None,
    content_type: str = "application/json",
    accept: str | None = None,
) -> tuple[int, Any, CIMultiDictProxy[str]]:
    """One request given as ``"METHOD /path"``; answers (status, decoded JSON or text, headers)."""
    method, _, path = request_line.partition(" ")
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    headers = {"Content-Type": content_type}
    if accept:
        headers["Accept"] = accept
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, sim.url + path, data=data, headers=headers) as response,
    ):
        text = await response.text()
        try:
            decoded: Any = json.loads(text)
        except ValueError:
            decoded = text
        return response.status, decoded, response.headers
