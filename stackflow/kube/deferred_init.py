"""kubernetes_asyncio without the generated classes the operator never uses.

``kubernetes_asyncio``'s ``__init__`` imports its ``client`` package, whose ``__init__`` imports
every generated API class and model (about 0.15 s of CPU and 36 MiB of RSS, a fifth of the
operator's start-up and of its RSS at rest), and its ``api_client`` imports the ``models`` package
the same way. Stackflow uses three names of it (``ApiClient``, ``Configuration``, ``ApiException``)
and the kubeconfig loaders, and never decodes into a model (every call passes
``_preload_content=False``).

``defer_package_init`` registers a package as a module whose ``__path__`` is set, so that its
submodules import as usual, and whose ``__init__`` runs only when a name is looked up that is
neither one of the names it was told where to find nor a submodule (PEP 562 ``__getattr__``).
Any other user of the library in the same process (kubesim, the tests) still finds every name:
the first such lookup runs the ``__init__`` then. ``light_kubernetes_asyncio`` does this for the
three packages, before anything imports them.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from collections.abc import Mapping
from importlib.abc import Loader
from types import ModuleType
from typing import Any

__all__ = ["defer_package_init", "light_kubernetes_asyncio"]

_LOCK = threading.RLock()

#: Where the names Stackflow and the kubeconfig loaders take from ``kubernetes_asyncio.client``
#: are defined.
_CLIENT_NAMES = {
    "ApiClient": "kubernetes_asyncio.client.api_client",
    "Configuration": "kubernetes_asyncio.client.configuration",
    "ApiException": "kubernetes_asyncio.client.exceptions",
}


def light_kubernetes_asyncio() -> None:
    """Defer the ``__init__`` of ``kubernetes_asyncio``, its ``client`` and its ``models``.

    A no-op for whichever of them is imported already.
    """
    defer_package_init("kubernetes_asyncio")
    defer_package_init("kubernetes_asyncio.client", names=_CLIENT_NAMES)
    defer_package_init("kubernetes_asyncio.client.models")


def defer_package_init(name: str, *, names: Mapping[str, str] | None = None) -> ModuleType:
    """``sys.modules[name]``, registered with its ``__init__`` deferred when not imported yet.

    ``names`` maps names the package's ``__init__`` would define to the module that defines
    them: looking one up imports that module alone. A package already imported, or a module that
    is not a package, is imported as usual and returned.
    """
    with _LOCK:
        present = sys.modules.get(name)
        if present is not None:
            return present
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or spec.submodule_search_locations is None:
            return importlib.import_module(name)
        module = importlib.util.module_from_spec(spec)
        loader = spec.loader
        known = dict(names or {})

        def look_up(attribute: str) -> Any:
            if attribute in known:
                value = getattr(importlib.import_module(known[attribute]), attribute)
                setattr(module, attribute, value)
                return value
            if not attribute.startswith("__") and _has_submodule(name, attribute):
                return importlib.import_module(f"{name}.{attribute}")
            _run_init(module, loader)
            try:
                return module.__dict__[attribute]
            except KeyError:
                raise AttributeError(f"module {name!r} has no attribute {attribute!r}") from None

        module.__dict__["__getattr__"] = look_up
        sys.modules[name] = module
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(sys.modules.get(parent) or importlib.import_module(parent), child, module)
        return module


def _has_submodule(package: str, child: str) -> bool:
    try:
        return importlib.util.find_spec(f"{package}.{child}") is not None
    except (ImportError, ValueError):
        return False


def _run_init(module: ModuleType, loader: Loader) -> None:
    # Once, into the same module object (the submodules and names set before stay): from here on
    # it is the package as its authors wrote it.
    with _LOCK:
        if "__getattr__" not in module.__dict__:
            return
        del module.__dict__["__getattr__"]
        loader.exec_module(module)
