"""The Temporal worker's build id: a digest of Stackflow's own code, not of every loaded module.

Without an explicit ``build_id`` the Temporal SDK computes one by reading back and hashing the code
of every module in ``sys.modules`` (about 2,000 here, a few hundred of them compiled again from
source because their bytecode is not cached): more than half a second of the operator's start on
the 2-core machine, spent before the worker polls. The build id only labels the worker in its
task completions and pollers (the worker does not use worker versioning), so a digest of what can
change between two builds of the operator serves the same purpose: the source of Stackflow's own
packages that are loaded, and the versions of Stackflow and of the Temporal SDK.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from types import ModuleType

import temporalio

import stackflow

__all__ = ["OWN_PACKAGES", "build_id", "own_sources", "worker_build_id"]

#: The top-level packages whose code the build id stands for (the workflows and what they run).
OWN_PACKAGES = ("activities", "stackflow", "watchers", "workflows")


def build_id(versions: Mapping[str, str], sources: Iterable[tuple[str, bytes]]) -> str:
    """``stackflow-<version>-<digest>``: the digest of ``versions`` and of the ``(module,
    source)`` pairs, whatever their order (pure)."""
    digest = hashlib.blake2b(digest_size=10)
    for name, version in sorted(versions.items()):
        digest.update(f"{name}={version}\n".encode())
    for module, source in sorted(sources):
        digest.update(module.encode() + b"\n")
        digest.update(hashlib.blake2b(source, digest_size=16).digest())
    return f"stackflow-{versions.get('stackflow', 'unknown')}-{digest.hexdigest()}"


def own_sources(
    modules: Mapping[str, ModuleType], packages: Iterable[str] = OWN_PACKAGES
) -> Iterator[tuple[str, bytes]]:
    """``(module name, source bytes)`` of the loaded modules of ``packages`` that come from a
    file (a module whose file cannot be read is left out: it is not Stackflow's code)."""
    prefixes = tuple(packages)
    for name, module in list(modules.items()):
        if name.partition(".")[0] not in prefixes:
            continue
        path = getattr(module, "__file__", None)
        if not path:
            continue
        try:
            yield name, Path(path).read_bytes()
        except OSError:
            continue


def worker_build_id() -> str:
    """The build id of this process's worker (see the module docstring)."""
    # The packages' own version constants: the distributions' metadata says the same, but
    # reading it imports ``importlib.metadata`` and scans every installed distribution.
    versions = {"stackflow": stackflow.__version__, "temporalio": temporalio.__version__}
    return build_id(versions, own_sources(sys.modules))
