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

{{/* The opt-in cluster-wide wakeup token's Secret, or "" (each namespace's own only). */}}
{{- define "heartbeat-operator.wakeupSecret" -}}
{{- if .Values.wakeup.enabled }}{{ .Values.wakeup.clusterTokenSecret }}{{- end }}
{{- end }}

{{/*
The heartbeat Pods' egress to the API server, as a YAML list of
{cidr, except, ports}: networkPolicy.heartbeatEgress.apiServer when set; else
the endpoints of Service default/kubernetes as the cluster has them at install
(lookup); else (helm template, no cluster) any address but 169.254.0.0/16 on
443 and 6443.
*/}}
{{- define "heartbeat-operator.apiServerEgress" -}}
{{- $given := .Values.networkPolicy.heartbeatEgress.apiServer }}
{{- if $given }}
{{- toYaml $given }}
{{- else }}
{{- $rules := list }}
{{- $endpoints := lookup "v1" "Endpoints" "default" "kubernetes" }}
{{- range ($endpoints.subsets | default list) }}
{{- $ports := list }}
{{- range .ports }}{{ $ports = append $ports .port }}{{ end }}
{{- range .addresses }}
{{- $rules = append $rules (dict "cidr" (printf "%s/32" .ip) "ports" $ports) }}
{{- end }}
{{- end }}
{{- if not $rules }}
{{- $rules = list (dict "cidr" "0.0.0.0/0" "ports" (list 443 6443)) }}
{{- end }}
{{- toYaml $rules }}
{{- end }}
{{- end }}

{{/*
The rules the operator needs where it manages Agents (one namespace or all).
Verbs are exactly what the operator calls; see controllers/shell and operator/.
*/}}
{{- define "heartbeat-operator.rules" -}}
# Each verb is one the operator calls (docs/security.md, "The operator's
# rights", has the table); tests/integration/helm/check_render.py asserts
# exactly these.
- apiGroups: ["heartbeat.dev"]
  resources: ["agents"]
  # The Agent informer; the operator never writes an Agent's spec or metadata.
  verbs: ["list", "watch"]
- apiGroups: ["heartbeat.dev"]
  resources: ["agents/status"]
  # The status is replaced whole (PUT), conditional on its resourceVersion.
  verbs: ["update"]
- apiGroups: ["heartbeat.dev"]
  resources: ["heartbeatruns"]
  # get: a run read again; create: scheduled/callback runs; patch: labels,
  # owner; delete: history limits.
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["heartbeat.dev"]
  resources: ["heartbeatruns/status"]
  verbs: ["patch"]
- apiGroups: ["heartbeat.dev"]
  resources: ["heartbeatpolicies"]
  # The policy informer (the operator runs without them too).
  verbs: ["list", "watch"]
- apiGroups: ["heartbeat.dev"]
  resources: ["heartbeatpolicies/status"]
  verbs: ["patch"]
- apiGroups: ["batch"]
  resources: ["jobs"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list", "watch"]
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  # The agents' Leases: watched, created, read when one is there already,
  # patched once (the agent-objects mark). patch is also what the per-agent
  # Role grants the runner (Kubernetes refuses a Role granting more than its
  # creator holds).
  verbs: ["get", "list", "watch", "create", "patch"]
- apiGroups: [""]
  resources: ["configmaps"]
  # Prompt (get), context and memory ConfigMaps (create; get when one is
  # there already); update only because the per-agent Role grants it to the
  # runner on its memory ConfigMap. The operator never updates one.
  verbs: ["get", "create", "update"]
# Secrets: only the namespace's wakeup token, by name (get: RBAC cannot limit
# list/watch to a name usefully, so the operator reads it by name and caches
# it briefly). Never key data: a missing apiKeySecretRef shows up as the
# heartbeat Pod's CreateContainerConfigError.
{{- if .Values.wakeup.enabled }}
- apiGroups: [""]
  resources: ["secrets"]
  resourceNames: ["heartbeat-wakeup"]
  verbs: ["get"]
{{- end }}
# The per-agent ServiceAccount, Role and RoleBinding: created; get because an
# existing one is adopted only when the Agent controls it; delete (Role and
# RoleBinding only, conditional on the uid read) removes a grant an older
# operator made for an object the Agent does not own.
- apiGroups: [""]
  resources: ["serviceaccounts"]
  verbs: ["get", "create"]
- apiGroups: ["rbac.authorization.k8s.io"]
  resources: ["roles", "rolebindings"]
  verbs: ["get", "create", "delete"]
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

{{/*
The metrics Service's port name and scheme: https with metrics.secure.
*/}}
{{- define "heartbeat-operator.metricsScheme" -}}
{{- if .Values.metrics.secure }}https{{ else }}http{{ end }}
{{- end }}

{{/*
The metrics Service's DNS name in the cluster (the self-signed certificate's
CN, and the ServiceMonitor's serverName with metrics.certSecret).
*/}}
{{- define "heartbeat-operator.metricsHost" -}}
{{ include "heartbeat-operator.fullname" . }}-metrics.{{ .Release.Namespace }}.svc
{{- end }}
