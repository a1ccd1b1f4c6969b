"""Whether a command line that reads the cluster has a kubeconfig to read it with.

``kubernetes_asyncio`` reports a missing kubeconfig with a traceback deep in its loader; the
commands ask `kubeconfig_problem` first and print its one line (exit status 2) instead.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["IN_CLUSTER_ENV", "kubeconfig_problem"]

#: Set by Kubernetes in every Pod: the in-cluster service account is used instead of a file.
IN_CLUSTER_ENV = "KUBERNETES_SERVICE_HOST"


def kubeconfig_problem(kubeconfig: Path | None, environ: Mapping[str, str]) -> str | None:
    """Why no kubeconfig can be used, in one line starting ``no kubeconfig:``; None when one can.

    ``kubeconfig`` is ``--kubeconfig``; without it, a Pod uses its service account, and anywhere
    else ``$KUBECONFIG`` (files separated by the path separator) or ``~/.kube/config``, as the
    client library does.
    """
    if kubeconfig is not None:
        if not kubeconfig.is_file():
            return f"no kubeconfig: --kubeconfig {kubeconfig} does not exist or is not a file"
        return None
    if environ.get(IN_CLUSTER_ENV):
        return None
    listed = environ.get("KUBECONFIG", "")
    if listed:
        paths = [Path(part).expanduser() for part in listed.split(os.pathsep) if part]
        if any(path.is_file() for path in paths):
            return None
        shown = ", ".join(str(path) for path in paths)
        return f"no kubeconfig: none of $KUBECONFIG's files exists ({shown}); pass --kubeconfig"
    home = environ.get("HOME")
    default = Path(home, ".kube", "config") if home else None
    if default is not None and default.is_file():
        return None
    return (
        f"no kubeconfig: not in a Pod, $KUBECONFIG is not set and "
        f"{default if default is not None else '~/.kube/config'} does not exist; pass --kubeconfig"
    )
