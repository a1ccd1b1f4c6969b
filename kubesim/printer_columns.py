"""The columns of the real API server's printers for the built-in kinds (kubernetes
``pkg/printers/internalversion``, v1.37), as data: ``(group, plural)`` → the Table's columns,
each ``(name, type, priority, description)`` with the server's own descriptions.

Kinds that print the same columns share one definition (core and ``events.k8s.io`` Events, the
two webhook configurations, the two role bindings); a kind absent here prints the server's
default ``Name`` + ``Created At`` (:data:`DEFAULT_COLUMNS`).
"""

from __future__ import annotations

__all__ = ["BUILTIN_COLUMNS", "CUSTOM_RESOURCE_AGE", "DEFAULT_COLUMNS", "NAME", "Column"]

#: One column: ``(name, type, priority, description)``; priority 1 is a ``wide`` column.
Column = tuple[str, str, int, str]

_NAME_DESCRIPTION = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
_CREATED_DESCRIPTION = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
_SECRET_TYPE = "Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types"
_SECRET_DATA = "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4"
_CONFIG_MAP_DATA = "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process."
_SERVICE_TYPE = 'type determines how the Service is exposed. Defaults to ClusterIP. Valid options are ExternalName, ClusterIP, NodePort, and LoadBalancer. "ClusterIP" allocates a cluster-internal IP address for load-balancing to endpoints. Endpoints are determined by the selector or if that is not specified, by manual construction of an Endpoints object or EndpointSlice objects. If clusterIP is "None", no virtual IP is allocated and the endpoints are published as a set of endpoints rather than a virtual IP. "NodePort" builds on ClusterIP and allocates a port on every node which routes to the same endpoints as the clusterIP. "LoadBalancer" builds on NodePort and creates an external load-balancer (if supported in the current cloud) which routes to the same endpoints as the clusterIP. "ExternalName" aliases this service to the specified externalName. Several other fields do not apply to ExternalName services. More info: https://kubernetes.io/docs/concepts/services-networking/service/#publishing-services-service-types'
_SERVICE_CLUSTER_IP = 'clusterIP is the IP address of the service and is usually assigned randomly. If an address is specified manually, is in-range (as per system configuration), and is not in use, it will be allocated to the service; otherwise creation of the service will fail. This field may not be changed through updates unless the type field is also being changed to ExternalName (which requires this field to be blank) or the type field is being changed from ExternalName (in which case this field may optionally be specified, as describe above).  Valid values are "None", empty string (""), or a valid IP address. Setting this to "None" makes a "headless service" (no virtual IP), which is useful when direct endpoint connections are preferred and proxying is not required.  Only applies to types ClusterIP, NodePort, and LoadBalancer. If this field is specified when creating a Service of type ExternalName, creation will fail. This field will be wiped when updating a Service to type ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies'
_SERVICE_EXTERNAL_IP = "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.  These IPs are not managed by Kubernetes.  The user is responsible for ensuring that traffic arrives at a node with this IP.  A common example is external load-balancers that are not part of the Kubernetes system."
_SERVICE_PORTS = "The list of ports that are exposed by this service. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies"
_SERVICE_SELECTOR = "Route service traffic to pods with label keys and values matching this selector. If empty or not present, the service is assumed to have an external process managing its endpoints, which Kubernetes will not modify. Only applies to types ClusterIP, NodePort, and LoadBalancer. Ignored if type is ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/"
_ENDPOINT_ENDPOINTS = "The set of all endpoints is the union of all subsets. Addresses are placed into subsets according to the IPs they share. A single address with multiple ports, some of which are ready and some of which are not (because they come from different containers) will result in the address being displayed in different subsets for the different ports. No address will appear in both Addresses and NotReadyAddresses in the same subset. Sets of addresses and ports that comprise a service."
_ENDPOINT_SLICE_ADDRESS_TYPE = 'addressType specifies the type of address carried by this EndpointSlice. All addresses in this slice must be the same type. This field is immutable after creation. The following address types are currently supported: * IPv4: Represents an IPv4 Address. * IPv6: Represents an IPv6 Address. * FQDN: Represents a Fully Qualified Domain Name. (Deprecated) The EndpointSlice controller only generates, and kube-proxy only processes, slices of addressType "IPv4" and "IPv6". No semantics are defined for the "FQDN" type.'
_ENDPOINT_SLICE_PORTS = "ports specifies the list of network ports exposed by each endpoint in this slice. Each port must have a unique name. Each slice may include a maximum of 100 ports. Services always have at least 1 port, so EndpointSlices generated by the EndpointSlice controller will likewise always have at least 1 port. EndpointSlices used for other purposes may have an empty ports list."
_ENDPOINT_SLICE_ENDPOINTS = "endpoints is a list of unique endpoints in this slice. Each slice may include a maximum of 1000 endpoints."
_POD_RESTARTS = "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."
_POD_IP = "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated."
_POD_NODE = "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName. Once this field is set, the kubelet for this node becomes responsible for the lifecycle of this pod. This field should not be used to express a desire for the pod to be scheduled on a specific node. https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename"
_POD_NOMINATED_NODE = "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled."
_POD_READINESS_GATES = 'If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to "True" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates'
_CLAIM_VOLUME = "volumeName is the binding reference to the PersistentVolume backing this claim."
_CLAIM_CAPACITY = "capacity represents the actual resources of the underlying volume."
_CLAIM_ACCESS_MODES = "accessModes contains the actual access modes the volume backing the PVC has. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes-1"
_CLAIM_VOLUME_MODE = "volumeMode defines what type of volume is required by the claim. Value of Filesystem is implied when not included in claim spec."
_NODE_INTERNAL_IP = "List of addresses reachable to the node. Queried from cloud provider, if available. More info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is declared as mergeable, but the merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers should instead use a full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change during the lifetime of a Node. However, there are some exceptions where this may not be possible, such as Pods that inherit a Node's address in its own status or consumers of the downward API (status.hostIP)."
_NODE_OS_IMAGE = (
    "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy))."
)
_NODE_KERNEL_VERSION = (
    "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64)."
)
_NODE_CONTAINER_RUNTIME = "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2)."
_DEPLOYMENT_UP_TO_DATE = "Total number of non-terminating pods targeted by this deployment that have the desired template spec."
_DEPLOYMENT_AVAILABLE = "Total number of available non-terminating pods (ready for at least minReadySeconds) targeted by this deployment."
_DEPLOYMENT_SELECTOR = "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment. It must match the pod template's labels."
_DAEMONSET_DESIRED = "The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod). More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/"
_DAEMONSET_CURRENT = "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod. More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/"
_DAEMONSET_READY = "numberReady is the number of nodes that should be running the daemon pod and have one or more of the daemon pod running with a Ready Condition."
_DAEMONSET_UP_TO_DATE = "The total number of nodes that are running updated daemon pod"
_DAEMONSET_AVAILABLE = "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)"
_DAEMONSET_NODE_SELECTOR = "NodeSelector is a selector which must be true for the pod to fit on a node. Selector which must match a node's labels for the pod to be scheduled on that node. More info: https://kubernetes.io/docs/concepts/configuration/assign-pod-node/"
_DAEMONSET_SELECTOR = "A label query over pods that are managed by the daemon set. Must match in order to be controlled. It must match the pod template's labels. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"
_REPLICASET_DESIRED = "Replicas is the number of desired pods. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset"
_REPLICASET_CURRENT = "Replicas is the most recently observed number of non-terminating pods. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset"
_REPLICASET_READY = (
    "The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition."
)
_REPLICASET_SELECTOR = "Selector is a label query over pods that should match the replica count. Label keys and values that must match in order to be controlled by this replica set. It must match the pod template's labels. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"
_DISRUPTION_BUDGET_ALLOWED_DISRUPTIONS = (
    "Calculated number of pods that may be disrupted at this time."
)
_ROLEBINDING_ROLE = "roleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error."
_CLUSTERROLEBINDING_ROLE = "roleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error."
_LEASE_HOLDER = "holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election is used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field."
_EVENT_LAST_SEEN = "The time at which the most recent occurrence of this event was recorded."
_EVENT_TYPE = "Type of this event (Normal, Warning), new types could be added in the future"
_EVENT_REASON = "This should be a short, machine understandable string that gives the reason for the transition into the object's current status."
_EVENT_SUBOBJECT = 'If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a container within a pod, this would take on a value like: "spec.containers{name}" (where "name" refers to the name of the container that triggered the event) or if no container name is specified "spec.containers[2]" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object.'
_EVENT_SOURCE = (
    "The component reporting this event. Should be a short machine understandable string."
)
_EVENT_FIRST_SEEN = (
    "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)"
)
_WEBHOOK_CONFIGURATION_WEBHOOKS = (
    "Webhooks indicates the number of webhooks registered in this configuration"
)

NAME: Column = ("Name", "string", 0, _NAME_DESCRIPTION)
AGE: Column = ("Age", "string", 0, _CREATED_DESCRIPTION)
CREATED_AT: Column = ("Created At", "date", 0, _CREATED_DESCRIPTION)
CONTAINERS: Column = ("Containers", "string", 1, "Names of each container in the template.")
IMAGES: Column = ("Images", "string", 1, "Images referenced by each container in the template.")
_EVENT_COLUMNS: tuple[Column, ...] = (
    ("Last Seen", "string", 0, _EVENT_LAST_SEEN),
    ("Type", "string", 0, _EVENT_TYPE),
    ("Reason", "string", 0, _EVENT_REASON),
    ("Object", "string", 0, "The object that this event is about."),
    ("Subobject", "string", 1, _EVENT_SUBOBJECT),
    ("Source", "string", 1, _EVENT_SOURCE),
    ("Message", "string", 0, "A human-readable description of the status of this operation."),
    ("First Seen", "string", 1, _EVENT_FIRST_SEEN),
    ("Count", "string", 1, "The number of times this event has occurred."),
    ("Name", "string", 1, _NAME_DESCRIPTION),
)
#: A custom resource without printer columns prints its age as a date.
CUSTOM_RESOURCE_AGE: Column = ("Age", "date", 0, _CREATED_DESCRIPTION)
#: The server's default table, for kinds without a printer (Roles, ClusterRoles).
DEFAULT_COLUMNS: tuple[Column, ...] = (NAME, CREATED_AT)
_WEBHOOK_CONFIGURATION_COLUMNS: tuple[Column, ...] = (
    NAME,
    ("Webhooks", "integer", 0, _WEBHOOK_CONFIGURATION_WEBHOOKS),
    AGE,
)


def _binding_columns(kind: str, role_description: str) -> tuple[Column, ...]:
    """A role binding's columns: its role, then its subjects by kind (wide)."""
    return (
        NAME,
        ("Role", "string", 0, role_description),
        AGE,
        ("Users", "string", 1, f"Users in the {kind}"),
        ("Groups", "string", 1, f"Groups in the {kind}"),
        ("ServiceAccounts", "string", 1, f"ServiceAccounts in the {kind}"),
    )


BUILTIN_COLUMNS: dict[tuple[str, str], tuple[Column, ...]] = {
    ("", "namespaces"): (
        NAME,
        ("Status", "string", 0, "The status of the namespace"),
        AGE,
    ),
    ("", "secrets"): (
        NAME,
        ("Type", "string", 0, _SECRET_TYPE),
        ("Data", "string", 0, _SECRET_DATA),
        AGE,
    ),
    ("", "configmaps"): (
        NAME,
        ("Data", "string", 0, _CONFIG_MAP_DATA),
        AGE,
    ),
    ("", "services"): (
        NAME,
        ("Type", "string", 0, _SERVICE_TYPE),
        ("Cluster-IP", "string", 0, _SERVICE_CLUSTER_IP),
        ("External-IP", "string", 0, _SERVICE_EXTERNAL_IP),
        ("Port(s)", "string", 0, _SERVICE_PORTS),
        AGE,
        ("Selector", "string", 1, _SERVICE_SELECTOR),
    ),
    ("", "endpoints"): (
        NAME,
        ("Endpoints", "string", 0, _ENDPOINT_ENDPOINTS),
        AGE,
    ),
    ("discovery.k8s.io", "endpointslices"): (
        NAME,
        ("AddressType", "string", 0, _ENDPOINT_SLICE_ADDRESS_TYPE),
        ("Ports", "string", 0, _ENDPOINT_SLICE_PORTS),
        ("Endpoints", "string", 0, _ENDPOINT_SLICE_ENDPOINTS),
        AGE,
    ),
    ("", "pods"): (
        NAME,
        ("Ready", "string", 0, "The aggregate readiness state of this pod for accepting traffic."),
        ("Status", "string", 0, "The aggregate status of the containers in this pod."),
        ("Restarts", "string", 0, _POD_RESTARTS),
        AGE,
        ("IP", "string", 1, _POD_IP),
        ("Node", "string", 1, _POD_NODE),
        ("Nominated Node", "string", 1, _POD_NOMINATED_NODE),
        ("Readiness Gates", "string", 1, _POD_READINESS_GATES),
    ),
    ("", "serviceaccounts"): (
        NAME,
        AGE,
    ),
    ("", "persistentvolumeclaims"): (
        NAME,
        ("Status", "string", 0, "phase represents the current phase of PersistentVolumeClaim."),
        ("Volume", "string", 0, _CLAIM_VOLUME),
        ("Capacity", "string", 0, _CLAIM_CAPACITY),
        ("Access Modes", "string", 0, _CLAIM_ACCESS_MODES),
        ("StorageClass", "string", 0, "StorageClass of the pvc"),
        ("VolumeAttributesClass", "string", 0, "VolumeAttributesClass of the pvc"),
        AGE,
        ("VolumeMode", "string", 1, _CLAIM_VOLUME_MODE),
    ),
    ("", "events"): _EVENT_COLUMNS,
    ("", "nodes"): (
        NAME,
        ("Status", "string", 0, "The status of the node"),
        ("Roles", "string", 0, "The roles of the node"),
        AGE,
        ("Version", "string", 0, "Kubelet Version reported by the node."),
        ("Internal-IP", "string", 1, _NODE_INTERNAL_IP),
        ("External-IP", "string", 1, _NODE_INTERNAL_IP),
        ("OS-Image", "string", 1, _NODE_OS_IMAGE),
        ("Kernel-Version", "string", 1, _NODE_KERNEL_VERSION),
        ("Container-Runtime", "string", 1, _NODE_CONTAINER_RUNTIME),
    ),
    ("apps", "statefulsets"): (
        NAME,
        ("Ready", "string", 0, "Number of the pod with ready state"),
        AGE,
        CONTAINERS,
        IMAGES,
    ),
    ("apps", "deployments"): (
        NAME,
        ("Ready", "string", 0, "Number of the pod with ready state"),
        ("Up-to-date", "string", 0, _DEPLOYMENT_UP_TO_DATE),
        ("Available", "string", 0, _DEPLOYMENT_AVAILABLE),
        AGE,
        CONTAINERS,
        IMAGES,
        ("Selector", "string", 1, _DEPLOYMENT_SELECTOR),
    ),
    ("apps", "daemonsets"): (
        NAME,
        ("Desired", "integer", 0, _DAEMONSET_DESIRED),
        ("Current", "integer", 0, _DAEMONSET_CURRENT),
        ("Ready", "integer", 0, _DAEMONSET_READY),
        ("Up-to-date", "integer", 0, _DAEMONSET_UP_TO_DATE),
        ("Available", "integer", 0, _DAEMONSET_AVAILABLE),
        ("Node Selector", "string", 0, _DAEMONSET_NODE_SELECTOR),
        AGE,
        CONTAINERS,
        IMAGES,
        ("Selector", "string", 1, _DAEMONSET_SELECTOR),
    ),
    ("apps", "replicasets"): (
        NAME,
        ("Desired", "integer", 0, _REPLICASET_DESIRED),
        ("Current", "integer", 0, _REPLICASET_CURRENT),
        ("Ready", "integer", 0, _REPLICASET_READY),
        AGE,
        CONTAINERS,
        IMAGES,
        ("Selector", "string", 1, _REPLICASET_SELECTOR),
    ),
    ("events.k8s.io", "events"): _EVENT_COLUMNS,
    ("policy", "poddisruptionbudgets"): (
        NAME,
        ("Min Available", "string", 0, "The minimum number of pods that must be available."),
        ("Max Unavailable", "string", 0, "The maximum number of pods that may be unavailable."),
        ("Allowed Disruptions", "integer", 0, _DISRUPTION_BUDGET_ALLOWED_DISRUPTIONS),
        AGE,
    ),
    ("rbac.authorization.k8s.io", "roles"): DEFAULT_COLUMNS,
    ("rbac.authorization.k8s.io", "rolebindings"): _binding_columns(
        "roleBinding", _ROLEBINDING_ROLE
    ),
    ("rbac.authorization.k8s.io", "clusterroles"): DEFAULT_COLUMNS,
    ("rbac.authorization.k8s.io", "clusterrolebindings"): _binding_columns(
        "clusterRoleBinding", _CLUSTERROLEBINDING_ROLE
    ),
    (
        "admissionregistration.k8s.io",
        "validatingwebhookconfigurations",
    ): _WEBHOOK_CONFIGURATION_COLUMNS,
    (
        "admissionregistration.k8s.io",
        "mutatingwebhookconfigurations",
    ): _WEBHOOK_CONFIGURATION_COLUMNS,
    ("apiextensions.k8s.io", "customresourcedefinitions"): (
        NAME,
        ("Scope", "string", 0, "Cluster/Namespaced"),
        ("Versions", "string", 0, "Served versions"),
        CREATED_AT,
        ("Group", "string", 1, "API group"),
        ("Kind", "string", 1, "CustomResource kind"),
        ("ShortNames", "string", 1, "Short names"),
        ("Established", "boolean", 1, "Established status"),
    ),
    ("coordination.k8s.io", "leases"): (
        NAME,
        ("Holder", "string", 0, _LEASE_HOLDER),
        AGE,
    ),
}
