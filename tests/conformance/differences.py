"""The documented differences between kubesim and the real API server, and what was fixed.

``DIFFERENCES``: one row per difference that is left on purpose: the check, the field paths
(over the flattened transcript, see :mod:`tests.conformance.compare`; ``*`` stands for any text)
and why
it is left. A row makes the comparison tolerate exactly those fields of exactly that check (a row
for :data:`ANY_CHECK` is a difference of kubesim's object model that shows in every object); any
other difference fails the check. A row for a check that no longer differs there fails too, so the
table cannot outlive the difference.

``FIXED``: check → what was changed in kubesim during this work so that the check agrees.
"""

from __future__ import annotations

from dataclasses import dataclass

ANY_CHECK = "*"


@dataclass(frozen=True)
class Difference:
    """A documented difference: where it shows, and why it is left."""

    check: str
    paths: tuple[str, ...]
    reason: str


#: Subresources of Pods and Services that kubesim neither serves nor lists in discovery.
UNSERVED_POD_SUBRESOURCES = (
    "attach",
    "binding",
    "ephemeralcontainers",
    "eviction",
    "exec",
    "log",
    "portforward",
    "proxy",
    "resize",
)
_UNSERVED = (
    "kubesim serves only the status, scale and finalize subresources: Pods' connect and "
    "eviction subresources (attach, exec, log, portforward, proxy, eviction, binding, resize, "
    "ephemeralcontainers) and services/proxy are neither served nor listed in discovery; the "
    "operator uses none of them."
)
_CREATE_NAMESPACE = (
    "On a create, kubesim's admission takes the namespace from the body only: a body that "
    "leaves it to the URL gives an AdmissionReview without `namespace` and matches no "
    "namespaceSelector. kubesim/writes.py (create) has to hand admit() the URL's namespace "
    '(`namespace=path.namespace or ""`); outside this change.'
)

DIFFERENCES: tuple[Difference, ...] = (
    Difference(
        ANY_CHECK,
        ("*.metadata.managedFields*",),
        "kubesim keeps no managedFields: the field manager of a write never reaches its store "
        "(kubesim/writes.py would have to hand it to Store.create/update); the operator does "
        "not read them.",
    ),
    Difference(
        "spec-01-kubectl-get-namespaces",
        (
            *tuple(
                f"GET /api (aggregated).body./v1/pods.subresources.{name}.*"
                for name in UNSERVED_POD_SUBRESOURCES
            ),
            "GET /api (aggregated).body./v1/services.subresources.proxy.*",
        ),
        _UNSERVED,
    ),
    Difference(
        "discovery-legacy",
        (
            *tuple(
                f"GET /api/v1.body.resources.pods/{name}.*" for name in UNSERVED_POD_SUBRESOURCES
            ),
            "GET /api/v1.body.resources.services/proxy.*",
        ),
        _UNSERVED,
    ),
    Difference(
        "errors-404",
        ("unknown group.*", "unknown group discovery.*", "unknown path.*"),
        "The real server answers paths outside every API group with its mux's plain-text "
        "`404 page not found`; kubesim answers a JSON NotFound Status (kubesim/server.py routes "
        "them; clients handle both).",
    ),
    Difference(
        "crd-deletion",
        ("list after.*",),
        "After its CRD is gone the group's paths are unknown: plain-text `404 page not found` on "
        "the real server, a JSON NotFound Status from kubesim (kubesim/server.py).",
    ),
    Difference(
        "crd-subresources",
        ("unknown subresource.body.*",),
        'An unknown subresource of a custom object is `widgets.<group> "w1" not found` on the '
        "real server, the generic `the server could not find the requested resource` from "
        "kubesim/handlers.py (check_scope), outside this change.",
    ),
    Difference(
        "errors-400",
        (
            "malformed JSON.body.message",
            "JSON array body.body.message",
            "kind mismatch.body.message",
            "apiVersion mismatch.body.message",
            "custom object without kind.body.message",
        ),
        "Decoding errors are worded by the Go decoders on the real server (`the object provided "
        "is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse "
        'error: …`, `Secret in version "v1" cannot be handled as a ConfigMap: …`); kubesim\'s '
        "messages come from kubesim/request.py, outside this change. Code and reason agree.",
    ),
    Difference(
        "errors-400",
        ("bad boolean query parameter.*", "bad limit.body.message"),
        "The real server reads an unparsable `watch` as true (it opens a watch) and words a bad "
        "`limit` as the bare strconv error; kubesim/request.py answers 400 for both, with the "
        "parameter named. Outside this change.",
    ),
    Difference(
        "errors-415",
        ("patch as text/plain.body.message", "patch as text/plain.body.details"),
        "An unknown patch type is `415: Unsupported Media Type` with empty details on the real "
        "server; kubesim/write_request.py lists the accepted patch types. Outside this change.",
    ),
    Difference(
        "errors-415",
        ("create as text/plain.body.message", "create as xml.body.message"),
        "The real server lists application/vnd.kubernetes.protobuf among the accepted body "
        "types; kubesim/request.py lists JSON and YAML (that module is being reworked for "
        "protobuf bodies by another change, outside this one).",
    ),
    Difference(
        "errors-422",
        (
            "invalid dryRun.body.message",
            "invalid dryRun.body.details.causes[0].message",
            "invalid fieldValidation.*",
        ),
        "Request option validation is worded by kubesim/request.py: the real server quotes the "
        'dryRun list (`["Some"]`) and answers an unknown fieldValidation with 422 Invalid on '
        "CreateOptions, kubesim with 400. Outside this change.",
    ),
    Difference(
        "errors-504-and-list-rv",
        ("list with a malformed RV.body.message", "list with resourceVersion=0, Exact.*"),
        "kubesim/request.py words a malformed resourceVersion differently and does not reject "
        "`resourceVersion=0&resourceVersionMatch=Exact` (the real server: 422 Forbidden). "
        "Outside this change.",
    ),
    Difference(
        "spec-12-field-selectors",
        ("unsupported field.body.message",),
        'The real server (v1.37) says `"spec.foo" is not a known field selector: only '
        '"metadata.name", "metadata.namespace"` for built-in kinds; kubesim/handlers.py '
        "(parse_selectors) says `field label not supported: spec.foo`, as the real server still "
        "does for custom resources. Outside this change.",
    ),
    Difference(
        "spec-13-pagination",
        ("garbage continue token.body.message",),
        "A garbage continue token: same 400 BadRequest, message worded by kubesim/request.py "
        "(decode_continue). Outside this change.",
    ),
    Difference(
        "spec-18-kubectl-apply-validation",
        ("apply with an unknown field.stderr[0]",),
        'Strict field validation: the real server prefixes `ConfigMap in version "v1" cannot '
        "be handled as a ConfigMap: ` to `strict decoding error: …`; kubesim/write_request.py "
        "does not. Outside this change.",
    ),
    Difference(
        "crd-defaulting-pruning",
        ("create with Strict.body.message",),
        "Strict field validation of a custom object: the real server prefixes `Widget in version "
        '"v1" cannot be handled as a Widget: `; kubesim/write_request.py does not. Outside '
        "this change.",
    ),
    Difference(
        "list-body",
        ("list widgets.body.metadata.continue",),
        'A custom resource LIST carries `continue: ""` on the real server; kubesim/handlers.py '
        "(page) writes no empty continue. Outside this change.",
    ),
    Difference(
        "list-pagination-selected",
        ("page 1.body.metadata.remainingItemCount",),
        "The real server gives no remainingItemCount when a selector filters the list (etcd "
        "cannot count what matches); kubesim/handlers.py (page) always does. Outside this "
        "change.",
    ),
    Difference(
        "namespace-contents",
        ("serviceaccounts.body*", "configmaps.body*"),
        "kubesim runs no ServiceAccount controller nor root-CA publisher: a new namespace holds "
        "no `default` ServiceAccount and no `kube-root-ca.crt` ConfigMap (the reference lets "
        "this be switchable; turning it on would change every namespace kubesim's users list).",
    ),
    Difference(
        "patch-apply-conflicts",
        ("bob applies the same field.*",),
        "kubesim's server-side apply has no field ownership (no managedFields, see `*`): a "
        "second manager applying a field another manager set never conflicts (force is "
        "implied).",
    ),
    Difference(
        "patch-custom-objects",
        ("apply.*",),
        "Server-side apply after Update-operation writes: the real server reports a conflict "
        "with the manager of the create; kubesim has no field ownership (force is implied).",
    ),
    Difference(
        "patch-server-side-apply",
        ("apply with a kind mismatch.body.message",),
        "An applied configuration of another kind: `invalid object type: /v1, Kind=Secret` on "
        "the real server, kubesim/request.py's kind-mismatch wording. Outside this change.",
    ),
    Difference(
        "watch-errors",
        ("watch with a bad resourceVersion.*",),
        "A watch with a malformed resourceVersion fails in the real server's watch cache with a "
        "500 and no reason; kubesim answers the 400 BadRequest of kubesim/request.py, which its "
        "fuzz tests hold to never answering 500.",
    ),
    Difference(
        "watch-errors",
        (
            "sendInitialEvents without resourceVersionMatch.body.message",
            "sendInitialEvents without resourceVersionMatch.body.details.causes[0].*",
        ),
        "Same 422 Invalid on ListOptions; the real server words the cause on resourceVersionMatch "
        "(`sendInitialEvents requires setting resourceVersionMatch to NotOlderThan`), "
        "kubesim/request.py on sendInitialEvents. Outside this change.",
    ),
    Difference(
        "table-deployments",
        (
            "replicasets.body.rows[0].cells[0]",
            "replicasets.body.rows[0].cells[7]",
            "replicasets.body.rows[0].object.metadata.name",
            "replicasets.body.rows[0].object.metadata.labels.pod-template-hash",
        ),
        "The pod-template-hash (and the ReplicaSet name made from it) is the FNV hash of the Go "
        "dump of the pod template on the real server; kubesim hashes the JSON template. Both "
        "are stable per template; the operator never computes one.",
    ),
    Difference(
        "webhook-namespace-selector",
        ("create (no namespace in the body).*",),
        _CREATE_NAMESPACE,
    ),
    Difference(
        "spec-25-validating-webhook",
        (
            "the review of the create[0].namespace",
            "the review of the create[0].request keys.namespace",
            "the reviews of create, patch, delete[0].namespace",
            "the reviews of create, patch, delete[0].request keys.namespace",
        ),
        _CREATE_NAMESPACE,
    ),
    Difference(
        "webhook-mutating",
        ("review[0].namespace", "review[0].request keys.namespace"),
        _CREATE_NAMESPACE,
    ),
    Difference(
        "table-other-builtins",
        ("endpoints.headers.warning",),
        "The real server warns on every v1 Endpoints request (`v1 Endpoints is deprecated in "
        "v1.33+; use discovery.k8s.io/v1 EndpointSlice`); kubesim's Warning headers come from "
        "kubesim/responses.py and the handlers, outside this change.",
    ),
)

FIXED: dict[str, str] = {
    "kubectl-apply-list": "kubectl apply -f of a `kind: List` (what `kubectl get -o yaml` "
    "writes) validates its items against /openapi/v2, which kubesim answered 404: it now serves "
    "the document, in the protobuf kubectl asks for (kubesim/discovery.py, kubesim/server.py).",
    "kubectl-get-pods": "Tables of the built-in kinds print the real server's columns and cells "
    "(kubesim/tables.py, from the v1.37 printers: Pods READY STATUS RESTARTS AGE IP NODE …, "
    "Deployments, ReplicaSets, StatefulSets, DaemonSets, Services, Secrets, ConfigMaps, "
    "Namespaces, Nodes, Events, Leases, PDBs, Endpoints, RBAC bindings, webhook configurations, "
    "CRDs; default Name/Created At for Roles).",
    "kubectl-get-others": "kubectl get of ConfigMaps, Secrets and Namespaces prints DATA, TYPE, "
    "STATUS and AGE as against the real server (same table work).",
    "table-pods": "Pod cells follow printPod (readiness, init and sidecar containers, "
    "restarts, Terminating, wide columns); the fake scheduler binds through a binding write, "
    "so a Pod's generation stays 1 as on the real server.",
    "table-custom-resources": "Printer columns without a description get the server's "
    "`Custom resource definition column (in JSONPath format): …`; the CRD table marks the "
    "storage version `(storage)`.",
    "table-include-object": "includeObject=None writes `object: null`; Table watch events "
    "after the first carry `columnDefinitions: null`.",
    "table-daemonsets": "The DaemonSet controller schedules only onto nodes its nodeSelector "
    "matches; a DaemonSet row's metadata lacks the versioned-only template-generation "
    "annotation, as the real server's.",
    "table-pod-states": "The fake scheduler respects nodeSelector and schedulingGates "
    "(PodScheduled=False, Unschedulable / SchedulingGated) and runs no Pod on a node that "
    "does not exist.",
    "table-deployments": "The Deployment controller records deployment.kubernetes.io/revision "
    "on the Deployment (through its status write, so the generation stays) and max-replicas on "
    "the ReplicaSet.",
    "spec-01-kubectl-get-namespaces": "Aggregated discovery: a built-in resource's responseKind "
    "leaves out group and version; subresources sorted by name (kubesim/discovery.py).",
    "discovery-legacy": "Legacy discovery lists subresources sorted for built-ins, status "
    "before scale for custom resources, and custom resources' verbs in the apiextensions "
    "order.",
    "spec-02-list-namespaces": "/version answers the emulation and minimum-compatibility "
    "versions too.",
    "objects-defaults-workloads": "Built-in defaults: Deployments, StatefulSets, DaemonSets "
    "and ReplicaSets get the real server's spec defaults (strategy, revisionHistoryLimit, "
    "podManagementPolicy, claim templates, pod template defaults) and initial status "
    "(kubesim/schema.py default_builtin); DaemonSets the template-generation annotation.",
    "objects-defaults-core": "Pods get SetDefaults_PodSpec plus the ServiceAccount, "
    "DefaultTolerationSeconds and Priority admission additions and a Pending status with "
    "qosClass; Services their addresses (clusterIP, clusterIPs, ipFamilies, nodePorts) on "
    "create and type/sessionAffinity/targetPort/protocol defaults; Secrets fold stringData "
    "into data and default type Opaque; PVCs volumeMode and the pvc-protection finalizer; "
    "Events their always-written fields; webhook configurations their defaults.",
    "objects-metadata": "Kinds without a generation keep the client's metadata.generation; "
    "an error without reason writes no `reason`.",
    "objects-builtin-subresources": "A zero-replica Scale has an empty spec (omitempty); status "
    "conditions of built-in kinds write their unset time fields as null.",
    "objects-generation": "Webhook configurations track a generation, as on the real server.",
    "errors-409": "DELETE preconditions fail with the storage layer's wording on the Kind; a "
    "changed uid on update is the 409 StorageError of the real server, not a 422.",
    "errors-422": "Labels, annotation keys and ConfigMap/Secret data keys are validated "
    "(apimachinery messages); ownerReferences causes are per index and Required; a "
    "namespace name with dots says `must not contain dots`; an unnamed Invalid has no "
    "details.name; identical causes appear once in the message.",
    "errors-504-and-list-rv": "Timeout Status: `Timeout: …` message, cause message `Too large "
    "resource version`, retryAfterSeconds 1.",
    "errors-415": "An UnsupportedMediaType Status has no details.",
    "spec-05-stale-update": "A custom object PUT without resourceVersion names the resource "
    "(`widgets.<group>`), as the custom resource handler does.",
    "spec-08-custom-object-strategic-patch": "415 without details.",
    "spec-11-label-selectors": "Selector parse errors list the operators as apimachinery "
    "does (`gt, lt`).",
    "spec-15-watch-too-old": "The watch history starts after kubesim's bootstrap (as a watch "
    "cache started after the default namespaces), so a watch from RV 1 is 410 Expired; an "
    "Events watch expires in etcd's words, as the real server keeps no watch cache for Events.",
    "spec-22-custom-object-finalizer": "Adding a finalizer to a deleting custom object lists "
    "the cause twice, as the real server (the message once).",
    "crd-status": "A created CRD is answered with the status before its controllers ran "
    "(no conditions, empty accepted names), then established in a second write; "
    "spec.conversion defaults to None.",
    "crd-invalid": "CRD validation: a schema shared by all versions is reported under "
    "spec.validation, a missing one as a bare `Required value`, no storage version with the "
    "versions rendered and the storedVersions cause.",
    "crd-validation": "Schema validation reports the first failing string/number constraint "
    "only, and the scale subresource's specReplicasPath accessor errors.",
    "crd-defaulting-pruning": "Unknown fields are reported metadata first, then the pruned "
    "paths sorted.",
    "list-field-selectors": "Pods support the real server's field selectors (restartPolicy, "
    "schedulerName, hostNetwork, podIPs, nominatedNodeName); a Pod bound to a missing node "
    "stays Pending.",
    "list-label-selector-syntax": "Selector error wording (`gt, lt`).",
    "list-delete-answers": "A deleted Pod is answered with deletionTimestamp and "
    "deletionGracePeriodSeconds 0 (kubesim deletes at once).",
    "namespace-terminating": "A repeated DELETE of a namespace being emptied answers the "
    "namespace (no 409); a deleting namespace has no deletionGracePeriodSeconds.",
    "namespace-finalize": "The first DELETE only marks a namespace, even one without "
    "finalizers; the namespace controller leaves namespaces without the `kubernetes` "
    "finalizer alone (a second DELETE removes them); finalize writes no empty list.",
    "watch-errors": "A watch from a resourceVersion ahead of the store waits for it instead "
    "of answering 504.",
    "watch-bookmarks": "With allowWatchBookmarks a watch gets a bookmark 2 s before its "
    "timeoutSeconds, as from the real watch cache.",
    "webhook-failures": "A cause without reason writes no `reason` (webhook call failures).",
    "webhook-mutating": "AdmissionReview requests leave out empty subResource, "
    "requestSubResource, name and namespace.",
    "rbac-subject-access-reviews": "SubjectAccessReviews are decided by an RBAC authorizer over "
    "the stored Roles, ClusterRoles and bindings (kubesim/rbac.py), with the real server's "
    "reasons; before, a review went through the ordinary create of an object.",
    "rbac-review-requests": "A malformed review is the real server's 422 (`.authorization.k8s.io "
    '"" is invalid`), a review is answered and never stored, and the review kinds have no object '
    "URLs (404) and no reads (405) (kubesim/access_reviews.py, kubesim/handlers.py).",
    "rbac-aggregated-clusterrole": "An aggregated ClusterRole gets the rules of the ClusterRoles "
    "its selectors match, as the controller manager's aggregation controller writes them "
    "(kubesim/controllers/rbac.py).",
    "pod-graceful-deletion": "A Pod on a Node with an external kubelet is deleted gracefully: "
    "marked for its grace period (a MODIFIED event), shortened but never lengthened by a later "
    "DELETE, removed by a DELETE with grace 0 (MODIFIED, then DELETED); before, every Pod went "
    "at once (kubesim/store.py, kubesim/store_kinds.py).",
    "pvc-protection": "A deleted claim keeps kubernetes.io/pvc-protection while a scheduled Pod "
    "names it and loses it, and goes, once none does; before, no controller removed the "
    "finalizer and a deleted claim stayed forever (kubesim/controllers/pvc_protection.py).",
    "pvc-namespace-statefulset": "A namespace holding claims goes once its Pods are gone (the "
    "claims held it Terminating for ever before).",
}


MARKDOWN_INTRO = """# kubesim and the real API server: the differences

`tests/conformance` runs each scenario of its table of checks against a fresh kubesim and against
a real control plane (kube-apiserver v1.37 with kube-controller-manager, kube-scheduler and
kwok), and compares the two transcripts field by field: status codes, `metav1.Status` bodies,
object shapes (uids, resourceVersions, timestamps, IPs and generated names masked) and
resourceVersion behaviour. `pytest -m apiserver tests/conformance` runs it (skipped, with the
reason, where `make tools` has not built the control plane); `python -m tests.conformance.report`
runs it outside pytest and prints the same counts and every difference below.

Each difference kubesim still has is one row here (`tests/conformance/differences.py`, which this
page must match: a test compares them). A row tolerates exactly those fields of exactly that
check; `*` marks a difference of kubesim's object model that shows in every check.
"""


def _code(text: str) -> str:
    return f"`{text}`"


def markdown_row(row: Difference) -> str:
    """The table row of a documented difference."""
    paths = "<br>".join(_code(path) for path in row.paths)
    return f"| {_code(row.check)} | {paths} | {row.reason} |"


def markdown_fixed(check: str, what: str) -> str:
    """The list item of a fix."""
    return f"- {_code(check)}: {what}"


def markdown() -> str:
    """DIFFERENCES.md as generated from the two tables."""
    lines = [MARKDOWN_INTRO, "## Documented differences", ""]
    lines += ["| check | what differs | why it is left |", "|---|---|---|"]
    lines += [markdown_row(row) for row in DIFFERENCES]
    lines += ["", "## Fixed in kubesim while measuring", ""]
    lines += [markdown_fixed(check, what) for check, what in FIXED.items()]
    return "\n".join(lines) + "\n"
