{{/*
Names and labels shared by every template. Object names are fixed by the shared
contract (the controller and the CLI look them up): namespaced objects are
`skein-controller`; cluster-scoped ones carry the mesh name so that two meshes
(in two namespaces) never collide.
*/}}

{{/* The controller's Deployment, Service and ServiceAccount. */}}
{{- define "skein.controllerName" -}}
skein-controller
{{- end -}}

{{/* ClusterRole / ClusterRoleBinding: cluster-scoped, so per mesh. */}}
{{- define "skein.clusterRoleName" -}}
skein-controller-{{ .Values.meshName }}
{{- end -}}

{{/* The MutatingWebhookConfiguration whose caBundle the controller keeps current. */}}
{{- define "skein.webhookConfigName" -}}
skein-sidecar-injector-{{ .Values.meshName }}
{{- end -}}

{{/* The CA Secret the controller keeps in the release namespace. */}}
{{- define "skein.caSecretName" -}}
skein-ca
{{- end -}}

{{- define "skein.image" -}}
{{- $tag := .image.tag | default .root.Chart.AppVersion -}}
{{ .image.repository }}:{{ $tag }}
{{- end -}}

{{/* The injected init container's image: images.init, or the controller image (it carries iptables). */}}
{{- define "skein.initImage" -}}
{{- if .Values.images.init.repository -}}
{{ include "skein.image" (dict "image" .Values.images.init "root" .) }}
{{- else -}}
{{ include "skein.image" (dict "image" .Values.images.controller "root" .) }}
{{- end -}}
{{- end -}}

{{/* Labels on every object. */}}
{{- define "skein.labels" -}}
app.kubernetes.io/name: skein
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: skein
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
skein.dev/mesh-name: {{ .Values.meshName }}
{{- end -}}

{{/* The controller pods' selector (immutable on the Deployment: keep it small and stable). */}}
{{- define "skein.selectorLabels" -}}
app.kubernetes.io/name: skein
app.kubernetes.io/component: controller
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "skein.controllerLabels" -}}
{{ include "skein.labels" . }}
app.kubernetes.io/component: controller
{{- end -}}

{{/* Fails the render early on values the API server or the controller would refuse later. */}}
{{- define "skein.validate" -}}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" .Values.meshName) -}}
{{- fail (printf "meshName %q: must be a DNS label (lowercase letters, digits, '-')" .Values.meshName) -}}
{{- end -}}
{{- if gt (len .Values.meshName) 40 -}}
{{- fail (printf "meshName %q: at most 40 characters (it is part of object names)" .Values.meshName) -}}
{{- end -}}
{{- if not (has .Values.webhook.failurePolicy (list "Fail" "Ignore")) -}}
{{- fail (printf "webhook.failurePolicy %q: must be Fail or Ignore" .Values.webhook.failurePolicy) -}}
{{- end -}}
{{- if not (has .Values.webhook.nativeSidecars (list "auto" "always" "never")) -}}
{{- fail (printf "webhook.nativeSidecars %q: must be auto, always or never" (toString .Values.webhook.nativeSidecars)) -}}
{{- end -}}
{{- $t := int .Values.webhook.timeoutSeconds -}}
{{- if or (lt $t 1) (gt $t 30) -}}
{{- fail (printf "webhook.timeoutSeconds %v: must be between 1 and 30" .Values.webhook.timeoutSeconds) -}}
{{- end -}}
{{- if not (has .Values.logLevel (list "trace" "debug" "info" "warn" "error")) -}}
{{- fail (printf "logLevel %q: must be trace, debug, info, warn or error" .Values.logLevel) -}}
{{- end -}}
{{- if not (has .Values.sidecar.logLevel (list "trace" "debug" "info" "warning" "warn" "error" "critical" "off")) -}}
{{- fail (printf "sidecar.logLevel %q: must be trace, debug, info, warning, warn, error, critical or off" .Values.sidecar.logLevel) -}}
{{- end -}}
{{- if and .Values.tracing.enable (not .Values.tracing.address) -}}
{{- fail "tracing.address: required when tracing.enable is true (the collector's DNS name or IPv4 address)" -}}
{{- end -}}
{{- if not (has .Values.tracing.provider (list "zipkin" "opentelemetry")) -}}
{{- fail (printf "tracing.provider %q: must be zipkin or opentelemetry" (toString .Values.tracing.provider)) -}}
{{- end -}}
{{- if lt (int .Values.replicas) 1 -}}
{{- fail "replicas: at least 1 (the sidecar injector and ADS run in the controller)" -}}
{{- end -}}
{{- /* The interception lists: IPv4 addresses/CIDRs (octets and prefix checked) and ports. */ -}}
{{- $traffic := .Values.traffic | default dict -}}
{{- $octet := "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])" -}}
{{- $ipv4 := printf "^%s(\\.%s){3}(/([0-9]|[12][0-9]|3[0-2]))?$" $octet $octet -}}
{{- range $field := list "outboundIPRangeExclusionList" "outboundIPRangeInclusionList" -}}
{{- range (index $traffic $field | default list) -}}
{{- if not (regexMatch $ipv4 (toString .)) -}}
{{- fail (printf "traffic.%s: %q is not an IPv4 address or CIDR" $field (toString .)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- range $field := list "outboundPortExclusionList" "inboundPortExclusionList" -}}
{{- range (index $traffic $field | default list) -}}
{{- if or (not (regexMatch "^[0-9]+$" (toString .))) (lt (int .) 1) (gt (int .) 65535) -}}
{{- fail (printf "traffic.%s: %v is not a port in 1-65535" $field .) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
