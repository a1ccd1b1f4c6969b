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
