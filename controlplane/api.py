"""A small synchronous HTTPS client for the launcher's own calls (readiness, Nodes, volumes,
tokens), authenticated with the admin client certificate."""

from __future__ import annotations

import http.client
import json
import ssl
from pathlib import Path
from typing import Any

from controlplane.pki import Pki


class ApiError(Exception):
    """A call answered with a status other than 2xx."""

    def __init__(self, method: str, path: str, status: int, body: str) -> None:
        """Keep what was asked and what came back."""
        super().__init__(f"{method} {path}: {status} {body[:300]}")
        self.status = status


class AdminApi:
    """JSON calls to the API server as ``system:masters``."""

    def __init__(self, port: int, pki: Pki, *, timeout: float = 10.0) -> None:
        """Trust the control plane's CA and present the admin certificate."""
        self.port = port
        self.timeout = timeout
        self.context = ssl.create_default_context(cafile=str(pki.ca.cert))
        self.context.load_cert_chain(str(pki.admin.cert), str(pki.admin.key))

    def request(
        self, method: str, path: str, body: Any = None, *, content_type: str = "application/json"
    ) -> Any:
        """Send one request; the decoded JSON answer (text for non-JSON), or ApiError."""
        connection = http.client.HTTPSConnection(
            "127.0.0.1", self.port, context=self.context, timeout=self.timeout
        )
        try:
            payload = None if body is None else json.dumps(body).encode()
            headers = {"Accept": "application/json"}
            if payload is not None:
                headers["Content-Type"] = content_type
            connection.request(method, path, body=payload, headers=headers)
            response = connection.getresponse()
            text = response.read().decode(errors="replace")
        finally:
            connection.close()
        if not 200 <= response.status < 300:
            raise ApiError(method, path, response.status, text)
        try:
            return json.loads(text)
        except ValueError:
            return text

    def get(self, path: str) -> Any:
        """GET ``path``."""
        return self.request("GET", path)

    def create(self, path: str, body: dict[str, Any]) -> Any:
        """POST ``body`` to the collection at ``path``; an existing object is left as it is."""
        try:
            return self.request("POST", path, body)
        except ApiError as error:
            if error.status != 409:
                raise
            return None


def insecure_probe(port: int, path: str = "/healthz", *, timeout: float = 2.0) -> bool:
    """Whether a component's own HTTPS endpoint (a self-signed certificate) answers 200."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=timeout)
    try:
        connection.request("GET", path)
        return connection.getresponse().status == 200
    except OSError:
        return False
    finally:
        connection.close()


def kubeconfig_document(
    server: str, ca: Path, *, user: dict[str, str], name: str = "stackflow-apiserver"
) -> dict[str, Any]:
    """A kubeconfig for ``server`` with one user (client certificate or token)."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": name, "cluster": {"server": server, "certificate-authority": str(ca)}}
        ],
        "users": [{"name": name, "user": user}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
        "preferences": {},
    }
