{{/* Name of the release's objects. */}}
{{- define "realistic.fullname" -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Name of the ServiceAccount the pods run as. */}}
{{- define "realistic.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "realistic.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Labels on every object. */}}
{{- define "realistic.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "realistic.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Labels the Service and the Deployment select pods by. */}}
{{- define "realistic.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/*
Pod spec fields of a hook Job that succeeds or fails by a value, on a real
cluster and on kwok alike (README.md says why this shape). Called with
(dict "root" $ "fail" <bool> "what" <string>).
*/}}
{{- define "realistic.hookPodSpec" -}}
restartPolicy: Never
serviceAccountName: {{ include "realistic.serviceAccountName" .root }}
{{- if .fail }}
# Matches no node: the pod stays Pending and the Job's deadline fails it.
nodeSelector:
  kraan.io/never-scheduled: "true"
{{- end }}
containers:
  - name: {{ .what }}
    image: {{ .root.Values.hooks.image | quote }}
    command: ["sh", "-c", {{ ternary "echo failing on purpose; exit 1" "echo ok" .fail | quote }}]
{{- end -}}
