{{/* The release's full name, used for every object the chart makes. */}}
{{- define "stackflow.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The namespace the operator runs in. */}}
{{- define "stackflow.operatorNamespace" -}}
{{- default .Release.Namespace .Values.operatorNamespace -}}
{{- end -}}

{{/* The operator's ServiceAccount. */}}
{{- define "stackflow.serviceAccountName" -}}
{{- default (include "stackflow.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{/* Labels on every object. */}}
{{- define "stackflow.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Selector labels of the operator's Pods (a subset of the labels, stable across upgrades). */}}
{{- define "stackflow.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The image, its tag defaulting to the chart's appVersion. */}}
{{- define "stackflow.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The port of /healthz, /readyz and /metrics (`stackflow run --health-port`, default 8081). */}}
{{- define "stackflow.healthPort" -}}8081{{- end -}}

{{/* Where the operator's files are mounted in its container (side by side: a mount inside the
   ConfigMap's read-only volume could not be made). */}}
{{- define "stackflow.configDir" -}}/etc/stackflow{{- end -}}
{{- define "stackflow.temporalTLSDir" -}}/etc/temporal-tls{{- end -}}
{{- define "stackflow.licenseKeyDir" -}}/etc/stackflow-license{{- end -}}
{{- define "stackflow.payloadKeyDir" -}}/etc/stackflow-payload-key{{- end -}}

{{/* The Lease the replicas elect their leader on: the operator's DEFAULT_LEASE_NAME
   (stackflow/kube/leader.py); tests/helm/test_render.py checks that the two agree. */}}
{{- define "stackflow.leaseName" -}}stackflow-leader{{- end -}}

{{/*
Every grant the operator needs, as YAML (`rules:`); each rule says whether its resources are
namespaced. The roles are cut from this one table:
- the ClusterRole of the all-namespaces and selector modes takes every rule whole;
- in the static-list mode the informers list and watch each managed namespace on its own (ECK's
  multi-namespace cache), so the ClusterRole keeps only the rules of cluster-scoped resources (the
  namespaces rule: the Namespace informer still watches them all) and a Role in each managed
  namespace (and the operator's) takes the namespaced rules whole.
*/}}
{{- define "stackflow.rules" -}}
rules:
  # Scope: the namespace selector is evaluated live over Namespace labels (an informer).
  - {apiGroups: [""], resources: ["namespaces"], verbs: ["list", "watch"], namespaced: false}
  # enforce-rbac-on-refs: whether a referring object's ServiceAccount may get what it references
  # in another namespace is asked of the API server (a cluster-scoped create, as ECK's role).
  - apiGroups: ["authorization.k8s.io"]
    resources: ["subjectaccessreviews"]
    verbs: ["create"]
    namespaced: false
  # Secrets: children, soft-owned and association Secrets (deleted when orphaned), the license
  # and trial Secrets (patched).
  - apiGroups: [""]
    resources: ["secrets"]
    verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
    namespaced: true
  # Children made and kept as desired.
  - apiGroups: [""]
    resources: ["configmaps", "services"]
    verbs: ["get", "list", "watch", "create", "update"]
    namespaced: true
  # An AutoOps agent's ConfigMap goes when its cluster is no longer served (its Deployment too,
  # under the workloads' delete); a removed node set's headless Service goes with its StatefulSet.
  - {apiGroups: [""], resources: ["configmaps", "services"], verbs: ["delete"], namespaced: true}
  - apiGroups: ["policy"]
    resources: ["poddisruptionbudgets"]
    verbs: ["get", "list", "watch", "create", "update"]
    namespaced: true
  # Workloads; one of another kind is deleted when an application switches (daemonSet → deployment).
  - apiGroups: ["apps"]
    resources: ["statefulsets", "deployments", "daemonsets"]
    verbs: ["get", "list", "watch", "create", "update", "delete"]
    namespaced: true
  # Pods are read (readiness, unicast hosts; with elasticsearch-dial endpoints, the ready
  # addresses of each cluster's internal HTTP Service, computed from it and its Pods), deleted
  # one at a time by a rolling restart (StatefulSets update OnDelete) and by a suspend, and
  # patched (owned by their Elasticsearch while their StatefulSet is recreated for its volumes).
  - apiGroups: [""]
    resources: ["pods"]
    verbs: ["get", "list", "watch", "patch", "delete"]
    namespaced: true
  # Volume claims: grown with their claim templates, owned by their Elasticsearch as
  # volumeClaimDeletePolicy says, deleted once no StatefulSet mounts them; a larger request needs
  # the StorageClass to allow expansion.
  - apiGroups: [""]
    resources: ["persistentvolumeclaims"]
    verbs: ["list", "patch", "delete"]
    namespaced: true
  - {apiGroups: ["storage.k8s.io"], resources: ["storageclasses"], verbs: ["list"], namespaced: false}
  - {apiGroups: [""], resources: ["events"], verbs: ["create", "patch"], namespaced: true}
  # The stack resources: read, given a status, and owners of their children (whose blocking
  # ownerReferences clusters running the OwnerReferencesPermissionEnforcement admission plugin,
  # such as OpenShift and our test cluster, allow only to whoever may update the owner's
  # finalizers). The kinds with associations are annotated with their association's
  # configuration; Elasticsearch with the trial it started.
  {{- range list
      (list "elasticsearch.k8s.elastic.co" "elasticsearches" true)
      (list "kibana.k8s.elastic.co" "kibanas" true)
      (list "apm.k8s.elastic.co" "apmservers" true)
      (list "enterprisesearch.k8s.elastic.co" "enterprisesearches" true)
      (list "beat.k8s.elastic.co" "beats" true)
      (list "agent.k8s.elastic.co" "agents" true)
      (list "maps.k8s.elastic.co" "elasticmapsservers" true)
      (list "logstash.k8s.elastic.co" "logstashes" true)
      (list "packageregistry.k8s.elastic.co" "packageregistries" false)
      (list "autoscaling.k8s.elastic.co" "elasticsearchautoscalers" false)
      (list "stackconfigpolicy.k8s.elastic.co" "stackconfigpolicies" false)
      (list "autoops.k8s.elastic.co" "autoopsagentpolicies" false) }}
  - apiGroups: [{{ index . 0 | quote }}]
    resources: [{{ index . 1 | quote }}]
    verbs: ["get", "list", "watch"{{ if index . 2 }}, "patch"{{ end }}]
    namespaced: true
  - apiGroups: [{{ index . 0 | quote }}]
    resources: [{{ printf "%s/status" (index . 1) | quote }}]
    verbs: ["patch"]
    namespaced: true
  - apiGroups: [{{ index . 0 | quote }}]
    resources: [{{ printf "%s/finalizers" (index . 1) | quote }}]
    verbs: ["update"]
    namespaced: true
  {{- end }}
{{- end -}}

{{/*
The rules of one role, cut from "stackflow.rules". Call with (dict "root" $ "cut" CUT), CUT one of
  whole      every rule (the ClusterRole of the all-namespaces and selector modes);
  cluster    the rules of cluster-scoped resources (the ClusterRole of the static-list mode);
  namespace  the rules of namespaced resources (the Roles of the static-list mode).
*/}}
{{- define "stackflow.cutRules" -}}
{{- $cut := .cut -}}
{{- range (include "stackflow.rules" .root | fromYaml).rules }}
{{- if or (eq $cut "whole") (and (eq $cut "cluster") (not .namespaced)) (and (eq $cut "namespace") .namespaced) }}
- apiGroups: {{ toJson .apiGroups }}
  resources: {{ toJson .resources }}
  verbs: {{ toJson .verbs }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The operator's namespaces of the static-list mode: the listed ones and its own, once each. */}}
{{- define "stackflow.roleNamespaces" -}}
{{- $names := list (include "stackflow.operatorNamespace" .) -}}
{{- range .Values.managedNamespaces -}}
{{- $names = append $names . -}}
{{- end -}}
{{- toJson ($names | uniq) -}}
{{- end -}}

{{/* The operator's configuration file (`stackflow run --config`), as a YAML mapping. */}}
{{- define "stackflow.operatorConfig" -}}
{{- $config := dict
    "operator-namespace" (include "stackflow.operatorNamespace" .)
    "enable-webhook" .Values.webhook.enabled
    "webhook-port" .Values.webhook.port
    "manage-webhook-certs" .Values.webhook.manageCerts
    "enforce-rbac-on-refs" .Values.refs.enforceRBAC
    "metrics-port" .Values.config.metricsPort
    "enable-leader-election" .Values.config.enableLeaderElection
    "disable-telemetry" .Values.config.disableTelemetry
    "telemetry-interval" (toString .Values.config.telemetryInterval)
    "log-verbosity" .Values.config.logVerbosity
    "max-concurrent-reconciles" .Values.config.maxConcurrentReconciles
    "temporal-address" (toString .Values.temporal.address)
    "temporal-namespace" (toString .Values.temporal.namespace)
    "temporal-task-queue" (toString .Values.temporal.taskQueue)
    "temporal-workflow-sandbox" .Values.config.temporalWorkflowSandbox
    "temporal-payload-encryption-allow-plaintext" .Values.config.temporalPayloadEncryptionAllowPlaintext -}}
{{- if .Values.webhook.enabled }}
{{- /* ECK's chart names: the Service `<name>-webhook` is the Secret's name without `-cert`. */}}
{{- $_ := set $config "webhook-secret" (printf "%s-webhook-cert" (include "stackflow.fullname" .)) }}
{{- $_ := set $config "webhook-name" (printf "%s.%s.k8s.elastic.co" (include "stackflow.fullname" .) (include "stackflow.operatorNamespace" .)) }}
{{- end }}
{{- with .Values.managedNamespaces }}
{{- $_ := set $config "namespaces" (toStrings .) }}
{{- end }}
{{- /* Label values are strings: `--set ...matchLabels.eck-visible=true` gives a boolean. */}}
{{- with .Values.managedNamespaceSelector }}
{{- $selector := deepCopy . }}
{{- with .matchLabels }}
{{- $labels := dict }}
{{- range $key, $value := . }}
{{- $_ := set $labels $key (toString $value) }}
{{- end }}
{{- $_ := set $selector "matchLabels" $labels }}
{{- end }}
{{- with .matchExpressions }}
{{- $expressions := list }}
{{- range . }}
{{- $expression := deepCopy . }}
{{- with .values }}
{{- $_ := set $expression "values" (toStrings .) }}
{{- end }}
{{- $expressions = append $expressions $expression }}
{{- end }}
{{- $_ := set $selector "matchExpressions" $expressions }}
{{- end }}
{{- $_ := set $config "namespace-selector" $selector }}
{{- end }}
{{- if not (kindIs "invalid" .Values.config.temporalMaxCachedWorkflows) }}
{{- $_ := set $config "temporal-max-cached-workflows" .Values.config.temporalMaxCachedWorkflows }}
{{- end }}
{{- if not (kindIs "invalid" .Values.config.inClusterNetworking) }}
{{- $_ := set $config "in-cluster-networking" .Values.config.inClusterNetworking }}
{{- end }}
{{- with .Values.config.elasticsearchUrl }}
{{- $_ := set $config "elasticsearch-url" . }}
{{- end }}
{{- /* service: the chart's operator runs in a Pod, where the Services' names resolve. endpoints
is for an operator run outside the cluster with the chart's RBAC (the tests of real nodes); it
reads only Services and Pods, which the role grants anyway. */}}
{{- $_ := set $config "elasticsearch-dial" (default "service" .Values.config.elasticsearchDial) }}
{{- with .Values.temporal.tls }}
{{- if .enabled }}
{{- $dir := include "stackflow.temporalTLSDir" $ }}
{{- range $key, $file := dict "temporal-tls-ca" .caKey "temporal-tls-cert" .certKey "temporal-tls-key" .keyKey }}
{{- if $file }}
{{- $_ := set $config $key (printf "%s/%s" $dir $file) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- /* Rendered empty (unset) without a Secret, so the file names every key of the operator. */}}
{{- $_ := set $config "temporal-payload-encryption-key" "" }}
{{- with .Values.config.temporalPayloadEncryptionKey }}
{{- if .existingSecret }}
{{- $_ := set $config "temporal-payload-encryption-key" (printf "%s/%s" (include "stackflow.payloadKeyDir" $) .key) }}
{{- end }}
{{- end }}
{{- with .Values.config.licensePublicKey }}
{{- if .existingSecret }}
{{- $_ := set $config "license-public-key" (printf "%s/%s" (include "stackflow.licenseKeyDir" $) .key) }}
{{- end }}
{{- end }}
{{- toYaml $config }}
{{- end -}}
