"""A kubesim store driven by direct Python calls, shared by the store test modules: the widgets CRD,
a store over the built-in registry with shortcuts, and an expected-error helper."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.errors import StatusError
from kubesim.resources import Registry, ResourceType
from kubesim.store import Event, Store


def crd_body(*, status_subresource: bool = True) -> dict[str, Any]:
    """A valid namespaced CRD serving example.com/v1 widgets."""
    version: dict[str, Any] = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": {
            "openAPIV3Schema": {
                "type": "object",
                "properties": {
                    "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                },
            }
        },
    }
    if status_subresource:
        version["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [version],
        },
    }


class Sim:
    """A store over the built-in registry plus shortcuts for the kinds the tests use."""

    def __init__(self, *, history_window: int = 1000) -> None:
        """An empty store keeping ``history_window`` events for watches, recording every event."""
        self.registry = Registry.builtin()
        self.store = Store(self.registry, history_window=history_window)
        self.events: list[Event] = []
        self.store.subscribe(self.events.append)

    def rt(self, group: str, plural: str, version: str = "v1") -> ResourceType:
        """The served type of ``group/version`` ``plural``."""
        found = self.registry.lookup(group, version, plural)
        assert found is not None, (group, version, plural)
        return found

    @property
    def cm(self) -> ResourceType:
        """ConfigMaps."""
        return self.rt("", "configmaps")

    @property
    def ns(self) -> ResourceType:
        """Namespaces."""
        return self.rt("", "namespaces")

    @property
    def crd(self) -> ResourceType:
        """CustomResourceDefinitions."""
        return self.rt("apiextensions.k8s.io", "customresourcedefinitions")

    def widgets(self) -> ResourceType:
        """Install the widgets CRD (once) and return its served type."""
        if self.registry.lookup("example.com", "v1", "widgets") is None:
            self.store.create(self.crd, crd_body(), namespace=None)
        return self.rt("example.com", "widgets")

    def make_cm(self, name: str = "c", **metadata: Any) -> dict[str, Any]:
        """Create a ConfigMap ``name`` in ``default`` with ``metadata``."""
        body = {"metadata": {"name": name, **metadata}, "data": {"a": "1"}}
        return self.store.create(self.cm, body, namespace="default")


def raises(code: int, call: Any, *args: Any, **kwargs: Any) -> StatusError:
    """Run ``call`` expecting a StatusError with HTTP ``code``; return it."""
    with pytest.raises(StatusError) as caught:
        call(*args, **kwargs)
    assert caught.value.code == code, caught.value.to_status()
    return caught.value
