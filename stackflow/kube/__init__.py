"""Stackflow's Kubernetes layer: the only package that talks to kubernetes_asyncio.

Modules: ``client`` (ApiClient set-up), ``errors`` (the error taxonomy), ``resources`` (generic
access by group/version/plural), ``cache`` and ``informer`` (list/watch caches), ``scoped``
(the scoped client and scoped informer — the choke point for namespaced reads),
``operator_licenses`` (the operator's license Secrets, read and verified).
"""

from __future__ import annotations

from stackflow.kube.deferred_init import light_kubernetes_asyncio

# Before any module of this package imports kubernetes_asyncio (see deferred_init).
light_kubernetes_asyncio()

from stackflow.kube.backoff import Backoff  # noqa: E402
from stackflow.kube.client import api_client_session, close_api_client, make_api_client  # noqa: E402
from stackflow.kube.errors import (  # noqa: E402
    AlreadyExists,
    BadRequest,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    KubeError,
    NotFound,
    TooManyRequests,
    Unauthorized,
    Unavailable,
    translate_errors,
)
from stackflow.kube.informer import Informer, NamespaceInformer  # noqa: E402
from stackflow.kube.resources import ResourceClient  # noqa: E402
from stackflow.kube.scoped import ScopedClient, ScopedInformer, UnscopedClient  # noqa: E402

__all__ = [
    "AlreadyExists",
    "Backoff",
    "BadRequest",
    "Conflict",
    "Forbidden",
    "Gone",
    "Informer",
    "Invalid",
    "KubeError",
    "NamespaceInformer",
    "NotFound",
    "ResourceClient",
    "ScopedClient",
    "ScopedInformer",
    "TooManyRequests",
    "Unauthorized",
    "Unavailable",
    "UnscopedClient",
    "api_client_session",
    "close_api_client",
    "make_api_client",
    "translate_errors",
]
