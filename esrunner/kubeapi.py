"""A small asynchronous Kubernetes REST client for the runner: the verbs a kubelet uses, read from a
kubeconfig (server, CA, client certificate or token)."""

from __future__ import annotations

import base64
import json
import ssl
import tempfile
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
import yaml


class KubeError(Exception):
    """The API server answered with an error status."""

    def __init__(self, method: str, path: str, status: int, body: str) -> None:
        """Keep the status so callers can tell a conflict or a missing object from a failure."""
        super().__init__(f"{method} {path}: {status} {body[:300]}")
        self.status = status


def _material(entry: Mapping[str, Any], key: str, base: Path, scratch: Path) -> str | None:
    """A kubeconfig credential as a file path (``key`` or ``key-data``)."""
    if entry.get(f"{key}-data"):
        path = scratch / key
        path.write_bytes(base64.b64decode(str(entry[f"{key}-data"])))
        return str(path)
    if entry.get(key):
        path = Path(str(entry[key]))
        return str(path if path.is_absolute() else base / path)
    return None


class KubeApi:
    """JSON over HTTP(S) to one API server, as the kubeconfig's current context says."""

    def __init__(self, kubeconfig: Path) -> None:
        """Read the kubeconfig; the session opens on first use."""
        document = yaml.safe_load(kubeconfig.read_text())
        contexts = {c["name"]: c["context"] for c in document.get("contexts") or []}
        context = contexts[document["current-context"]]
        cluster = {c["name"]: c["cluster"] for c in document["clusters"]}[context["cluster"]]
        users = {u["name"]: u.get("user") or {} for u in document.get("users") or []}
        user = users.get(context.get("user", ""), {})
        self.server = str(cluster["server"]).rstrip("/")
        self._headers = {"Accept": "application/json"}
        if user.get("token"):
            self._headers["Authorization"] = f"Bearer {user['token']}"
        self._ssl: ssl.SSLContext | bool = False
        if self.server.startswith("https"):
            scratch = Path(tempfile.mkdtemp(prefix="esrunner-kubeconfig-"))
            base = kubeconfig.parent
            if cluster.get("insecure-skip-tls-verify"):
                context_ = ssl.create_default_context()
                context_.check_hostname = False
                context_.verify_mode = ssl.CERT_NONE
            else:
                ca = _material(cluster, "certificate-authority", base, scratch)
                context_ = ssl.create_default_context(cafile=ca)
            certificate = _material(user, "client-certificate", base, scratch)
            key = _material(user, "client-key", base, scratch)
            if certificate and key:
                context_.load_cert_chain(certificate, key)
            self._ssl = context_
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(headers=self._headers)
        return self._session

    async def close(self) -> None:
        """Close the HTTP session."""
        if self._session is not None:
            await self._session.close()

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        query: Mapping[str, str] | None = None,
        content_type: str = "application/json",
        limit_seconds: float = 30.0,
    ) -> Any:
        """One call; the decoded answer, or KubeError."""
        url = f"{self.server}{path}" + (f"?{urlencode(query)}" if query else "")
        data = None if body is None else json.dumps(body)
        headers = {"Content-Type": content_type} if data is not None else {}
        async with self._client().request(
            method,
            url,
            data=data,
            headers=headers,
            ssl=self._ssl,
            timeout=aiohttp.ClientTimeout(total=limit_seconds),
        ) as response:
            text = await response.text()
            if response.status >= 400:
                raise KubeError(method, path, response.status, text)
            return json.loads(text) if text else None

    async def get_or_none(self, path: str) -> Any:
        """GET, or None when the object does not exist."""
        try:
            return await self.request("GET", path)
        except KubeError as error:
            if error.status == 404:
                return None
            raise

    async def watch(
        self, path: str, *, query: Mapping[str, str], resource_version: str
    ) -> AsyncIterator[dict[str, Any]]:
        """The events of one watch request, until the server ends it."""
        params = {**query, "watch": "1", "resourceVersion": resource_version}
        params.setdefault("timeoutSeconds", "300")
        url = f"{self.server}{path}?{urlencode(params)}"
        async with self._client().get(
            url, ssl=self._ssl, timeout=aiohttp.ClientTimeout(total=None, sock_read=400)
        ) as response:
            if response.status >= 400:
                raise KubeError("WATCH", path, response.status, await response.text())
            async for line in response.content:
                if line.strip():
                    yield json.loads(line)
