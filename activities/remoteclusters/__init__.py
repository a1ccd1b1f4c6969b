"""The remote-cluster controller's activities (``RemoteClusterActivities``), one idea a module.

A reconcile of one cluster handles every relationship it is party to, so that either side's
reconcile converges a pair (ECK's ``remotecluster`` controller and the remote-cluster part of its
Elasticsearch controller, in one place):

* as a client: ``cluster.remote.<alias>.seeds`` written through ``PUT _cluster/settings``
  (persistent), aliases removed from the spec set to null, the managed-remote-clusters
  annotation kept in step;
* with each related peer (a cluster it declares, or one declaring it) that is visible: the
  transport CA exchanged both ways (``<local>-<peerNs>-<peer>-es-remote-ca`` in each namespace,
  owned by the cluster holding it). The Elasticsearch controller concatenates a cluster's copies
  into ``<es>-es-remote-ca``, mounted as extra transport trust;
* cross-cluster API keys (8.10+, ``apiKey`` set) in the server, named
  ``eck-<clientNs>-<client>-<alias>``, the encoded key stored in the client's
  ``<client>-es-remote-api-keys`` Secret; keys nobody expects are invalidated.

Scope (DESIGN principle 4, ECK's ``FilterClient``): every read goes through the scoped client, so
a peer whose namespace left scope is not found and the relationship counts as gone. What the
operator made for it is revoked, by the saga: each related, visible peer is recorded as a
compensation (``remotecluster.release_peer``, keyed ``peer/<namespace>/<name>``), and a reconcile
reports every other cluster it still holds an exchange or a key with as ``release_now``, which the
workflow runs as a step of its history (and every recorded one when the cluster itself leaves scope
or is deleted). The release deletes the remote CA copies in both namespaces, the one in the
out-of-scope namespace by its name, without reading it (ECK's deletes pass through its filter
too; trust must not outlive the operator's oversight), and the client's stored key for that
server is dropped. Nothing is created or updated in an out-of-scope namespace, and an
out-of-scope cluster's Elasticsearch is never dialled (its credentials are not read): a key held
by an out-of-scope server is invalidated when it comes back (its encoded value is gone from the
client's Secret, so a new key replaces it).

With ``enforce-rbac-on-refs`` a pair is kept only while each cluster's ServiceAccount may get the
other cluster (ECK checks both ways); a refused pair counts as gone, as a peer out of scope does.

Enterprise only: with a relationship and no license, a cluster declaring remotes gets ECK's
Warning (``AssociationError``, action ``LicenseCheck``), nothing is applied, and the workflow waits
in phase ``WaitingForLicense``, which a license arrival wakes at once. A cluster without any
relationship is never checked.

Modules: ``family`` (the class), ``seeds`` (client side settings), ``trust`` (the CA exchange),
``keys`` (cross-cluster API keys), ``access`` (enforce-rbac-on-refs), ``release`` (the
compensation), ``clusters``, ``secrets`` and ``outcome`` (what they share).
"""

from __future__ import annotations

from activities.remoteclusters.family import FAMILIES, RETRY_SECONDS, RemoteClusterActivities
from activities.remoteclusters.release import peer_compensation

__all__ = ["FAMILIES", "RETRY_SECONDS", "RemoteClusterActivities", "peer_compensation"]
