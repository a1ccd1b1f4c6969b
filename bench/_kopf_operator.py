"""A kopf operator with a no-op handler for Elasticsearch, for the side-by-side benchmark.

Run: ``python bench/_kopf_operator.py --kubeconfig K --events FILE [--namespace NS]``
(``bench/_kopf_side.py`` starts it as a subprocess, so its CPU and memory are its own).

What it is, and why (the "same no-op handler" as Stackflow's bench reconcile):

* handlers: ``@kopf.on.create`` + ``@kopf.on.update(field="spec")`` + ``@kopf.on.resume``, all
  ``async`` and doing nothing but append one line to the events file. Stackflow calls its no-op
  reconcile on create, on every spec change (generation bump) and for every existing object at
  start; that is those three kopf causes. A handler returns ``None``, so kopf writes no handler
  result into ``status``.
* kept at kopf's defaults: progress and diff-base persistence in annotations (kopf PATCHes
  ``kopf.zalando.org/last-handled-configuration`` after every handled cause and then receives
  that PATCH back as a watch event — kopf's normal cost), the watching and queueing settings,
  cluster scanning (the CRD watch a cluster-wide kopf opens).
* changed, to match what Stackflow's bench does not do: posting of Kubernetes Events is off
  (``settings.posting.enabled = False``); peering is off (``standalone``, no
  ``ClusterKopfPeering`` lookups). No finalizer is added: kopf adds one only for deletion
  handlers, and there are none. Logging is at WARNING (as ``kopf run --quiet``), as the
  Stackflow bench drops its operator's logs below ERROR.
* scope: cluster-wide (``clusterwide=True``, as ``kopf run -A``) unless ``--namespace`` is given.
* login: kopf's own kubeconfig login on ``--kubeconfig`` (whatever client libraries happen to be
  installed), tolerating kubesim's context without a ``user`` (see ``login_with_kubeconfig``).

Each events line is ``<time.time()> <reason> <namespace> <name> <generation>``, written at the
start of the handler and flushed at once; the driver tails the file.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any, TextIO

import kopf
import yaml

GROUP = "elasticsearch.k8s.elastic.co"
VERSION = "v1"
PLURAL = "elasticsearches"


class EventsFile:
    """Appends one flushed line per handler call."""

    def __init__(self, stream: TextIO) -> None:
        """Write to ``stream`` (opened for appending, line-buffered or not: every line is flushed)."""
        self.stream = stream

    def record(self, reason: str, meta: kopf.Meta) -> None:
        """``<time> <reason> <namespace> <name> <generation>``; the time is taken first."""
        now = time.time()
        generation = meta.get("generation", 0)
        self.stream.write(f"{now:.6f} {reason} {meta.namespace} {meta.name} {generation}\n")
        self.stream.flush()


def login_with_kubeconfig(**kwargs: Any) -> kopf.ConnectionInfo | None:
    """``kopf.login_with_kubeconfig``, also for a context without a ``user``.

    kubesim's kubeconfig names no user in its context (kubectl and kubernetes_asyncio accept
    that); kopf's minimal kubeconfig login raises ``KeyError: 'user'`` on it. Without a user
    there are no credentials, so the cluster's fields are all there is to connect with.
    """
    path = os.environ["KUBECONFIG"]
    config = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    contexts = {item["name"]: item.get("context") or {} for item in config.get("contexts", [])}
    context = contexts.get(config.get("current-context"), {})
    if "user" in context:
        return kopf.login_with_kubeconfig(**kwargs)
    clusters = {item["name"]: item.get("cluster") or {} for item in config.get("clusters", [])}
    cluster = clusters[context["cluster"]]
    return kopf.ConnectionInfo(
        server=cluster["server"],
        ca_path=cluster.get("certificate-authority"),
        ca_data=cluster.get("certificate-authority-data"),
        insecure=cluster.get("insecure-skip-tls-verify"),
        default_namespace=context.get("namespace"),
    )


def build_registry(events: EventsFile) -> kopf.OperatorRegistry:
    """The login handler and the three no-op Elasticsearch handlers, in a fresh registry."""
    registry = kopf.OperatorRegistry()

    @kopf.on.login(registry=registry)
    def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
        return login_with_kubeconfig(**kwargs)

    @kopf.on.create(GROUP, VERSION, PLURAL, registry=registry)
    async def created(meta: kopf.Meta, **_: Any) -> None:
        events.record("create", meta)

    @kopf.on.update(GROUP, VERSION, PLURAL, field="spec", registry=registry)
    async def updated(meta: kopf.Meta, **_: Any) -> None:
        events.record("update", meta)

    @kopf.on.resume(GROUP, VERSION, PLURAL, registry=registry)
    async def resumed(meta: kopf.Meta, **_: Any) -> None:
        events.record("resume", meta)

    return registry


def build_settings() -> kopf.OperatorSettings:
    """kopf's defaults, minus Kubernetes Events posting and peering."""
    settings = kopf.OperatorSettings()
    settings.posting.enabled = False
    settings.peering.standalone = True
    return settings


def main() -> None:
    """Parse flags and run the operator until SIGTERM/SIGINT."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", type=Path, required=True, help="kubeconfig to log in with")
    parser.add_argument(
        "--events", type=Path, required=True, help="file to append handler lines to"
    )
    parser.add_argument(
        "--namespace", default=None, help="watch only this namespace (default: cluster-wide)"
    )
    args = parser.parse_args()
    # kopf.login_with_kubeconfig reads $KUBECONFIG.
    os.environ["KUBECONFIG"] = str(args.kubeconfig.resolve())
    kopf.configure(quiet=True)
    with args.events.open("a", encoding="utf-8") as stream:
        kopf.run(
            registry=build_registry(EventsFile(stream)),
            settings=build_settings(),
            standalone=True,
            clusterwide=args.namespace is None,
            namespaces=() if args.namespace is None else (args.namespace,),
        )


if __name__ == "__main__":
    main()
