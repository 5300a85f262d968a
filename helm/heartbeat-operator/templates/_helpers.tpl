{{/* Chart name, at most 63 characters. */}}
{{- define "heartbeat-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: release-chart unless the release name already holds the chart name. */}}
{{- define "heartbeat-operator.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "heartbeat-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "heartbeat-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "heartbeat-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "heartbeat-operator.labels" -}}
helm.sh/chart: {{ include "heartbeat-operator.chart" . }}
{{ include "heartbeat-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: operator
{{- end }}

{{- define "heartbeat-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "heartbeat-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "heartbeat-operator.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "heartbeat-operator.runnerImage" -}}
{{- printf "%s:%s" .Values.runner.image.repository (default .Chart.AppVersion .Values.runner.image.tag) }}
{{- end }}

{{/*
The watched namespaces, de-duplicated, in the order given, comma-joined (the
operator's --namespace takes that list), or "" for all namespaces.
*/}}
{{- define "heartbeat-operator.watchNamespaces" -}}
{{- .Values.watchNamespaces | default list | compact | uniq | join "," }}
{{- end }}

{{/* "true" when leader election is on: forced by leaderElection.enabled, else replicaCount > 1. */}}
{{- define "heartbeat-operator.leaderElect" -}}
{{- $v := .Values.leaderElection.enabled }}
{{- if kindIs "bool" $v }}{{ $v }}{{ else }}{{ gt (int .Values.replicaCount) 1 }}{{ end }}
{{- end }}

{{- define "heartbeat-operator.wakeupSecret" -}}
{{- if .Values.wakeup.enabled }}
{{- required "wakeup.existingSecret: name the Secret (key `token`, in the release namespace) that holds the wakeup token; the chart never takes the token itself" .Values.wakeup.existingSecret }}
{{- end }}
{{- end }}

{{/*
The rules the operator needs where it manages Agents (one namespace or all).
Verbs are exactly what the operator calls; see controllers/shell and operator/.
*/}}
{{- define "heartbeat-operator.rules" -}}
- apiGroups: ["heartbeat.dev"]
  resources: ["agents"]
  # list/watch: informer; patch: removes the heartbeat.dev/invoke annotation.
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["heartbeat.dev"]
  resources: ["agents/status"]
  verbs: ["get", "update", "patch"]
- apiGroups: ["heartbeat.dev"]
  resources: ["heartbeatruns"]
  # create: scheduled/callback runs; patch: labels, owner; delete: history limits.
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["heartbeat.dev"]
  resources: ["heartbeatruns/status"]
  verbs: ["get", "update", "patch"]
- apiGroups: ["heartbeat.dev"]
  resources: ["heartbeatpolicies"]
  # list/watch: the policy informer (the operator runs without them too).
  verbs: ["get", "list", "watch"]
- apiGroups: ["heartbeat.dev"]
  resources: ["heartbeatpolicies/status"]
  verbs: ["get", "update", "patch"]
- apiGroups: ["batch"]
  resources: ["jobs"]
  verbs: ["get", "list", "watch", "create", "delete"]
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list", "watch"]
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  # The agents' Leases: watched, created; get/update/patch because the
  # per-agent Role grants them (RBAC escalation prevention).
  verbs: ["get", "list", "watch", "create", "update", "patch"]
- apiGroups: [""]
  resources: ["configmaps"]
  # Prompt (get), context and memory ConfigMaps (create); update/patch because
  # the per-agent Role grants them on the memory ConfigMap.
  verbs: ["get", "create", "update", "patch"]
# No Secrets: the operator never reads key data. A missing apiKeySecretRef
# shows up as the heartbeat Pod's CreateContainerConfigError.
# The per-agent ServiceAccount, Role and RoleBinding: created; get because an
# existing one is adopted only when it carries the Agent's ownerReference.
- apiGroups: [""]
  resources: ["serviceaccounts"]
  verbs: ["get", "create"]
- apiGroups: ["rbac.authorization.k8s.io"]
  resources: ["roles", "rolebindings"]
  verbs: ["get", "create"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create"]
{{- if .Values.rbac.ownerReferencesPermissionEnforcement }}
- apiGroups: [""]
  resources: ["configmaps", "serviceaccounts"]
  verbs: ["delete"]
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["delete"]
- apiGroups: ["rbac.authorization.k8s.io"]
  resources: ["roles", "rolebindings"]
  verbs: ["delete"]
- apiGroups: ["heartbeat.dev"]
  resources: ["agents/finalizers", "heartbeatruns/finalizers"]
  verbs: ["update"]
{{- end }}
{{- end }}
