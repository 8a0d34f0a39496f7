{{/* The image every component runs: the repository at image.tag, by default the chart's appVersion. */}}
{{- define "mxjob.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/*
An object's labels: the project's own, as manifests/ sets them, then Helm's standard four.
Called with (list $ NAME COMPONENT).
*/}}
{{- define "mxjob.labels" -}}
{{- $root := index . 0 -}}
{{ include "mxjob.podLabels" (rest .) }}
helm.sh/chart: {{ printf "%s-%s" $root.Chart.Name $root.Chart.Version }}
app.kubernetes.io/managed-by: {{ $root.Release.Service }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/version: {{ $root.Chart.AppVersion | quote }}
{{- end }}

{{/*
A pod template's labels: the project's own only, so that a new chart version (helm.sh/chart)
does not replace every pod. Called with (list NAME COMPONENT).
*/}}
{{- define "mxjob.podLabels" -}}
app.kubernetes.io/name: {{ index . 0 }}
app.kubernetes.io/component: {{ index . 1 }}
app.kubernetes.io/part-of: mxjob
{{- end }}

{{/* Every pod runs as the image's non-root user (numeric, so the kubelet can check runAsNonRoot). */}}
{{- define "mxjob.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/* The PodGroup apiVersion of the gang scheduler named by `gang` (volcano or scheduler-plugins). */}}
{{- define "mxjob.podGroupAPI" -}}
{{- get (dict "volcano" "scheduling.volcano.sh/v1beta1" "scheduler-plugins" "scheduling.x-k8s.io/v1alpha1") .Values.gang }}
{{- end }}
