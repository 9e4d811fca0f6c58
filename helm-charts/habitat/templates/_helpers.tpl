{{/*
habitat.labels are the labels of every object of the release. The Go controller
selects the release's pods by habitat.kraan.io/habitat and groups them into
peer lists by habitat.kraan.io/ring.
*/}}
{{- define "habitat.selectorLabels" -}}
app.kubernetes.io/name: habitat
app.kubernetes.io/instance: {{ .Release.Name | quote }}
habitat.kraan.io/habitat: {{ .Release.Name | quote }}
{{- end }}

{{- define "habitat.labels" -}}
{{ include "habitat.selectorLabels" . }}
app.kubernetes.io/managed-by: kraan-operator
app.kubernetes.io/component: {{ .Values.service.name | quote }}
habitat.kraan.io/ring: {{ include "habitat.ringLabel" . | quote }}
habitat.kraan.io/topology: {{ .Values.service.topology | default "none" | quote }}
{{- end }}

{{/*
habitat.ringLabel names the peer group: the ring, or the Habitat itself when
it names no ring, so that Habitats without a ring never see each other.
Keep in sync with internal/controller/habitat_peers.go.
*/}}
{{- define "habitat.ringLabel" -}}
{{- if .Values.service.ring -}}
ring.{{ .Values.service.ring }}
{{- else -}}
habitat.{{ .Release.Name }}
{{- end -}}
{{- end }}

{{/*
habitat.peerConfigMap is the ConfigMap the Go controller keeps with the IPs of
the peer group's Running pods. Keep in sync with internal/controller/habitat_peers.go.
*/}}
{{- define "habitat.peerConfigMap" -}}
hab-peers.{{ include "habitat.ringLabel" . }}
{{- end }}

{{/*
habitat.ringKeySecret is the Secret the Go controller generates for a ring
when generateRingKey is set: one per ring and namespace, so every member of
the ring shares the key. Keep in sync with internal/controller/habitat_ringkey.go.
*/}}
{{- define "habitat.generatedRingKeySecret" -}}
hab-ring-key.{{ .Values.service.ring }}
{{- end }}

{{/* habitat.ringName is the ring of a user-provided key: its secret name minus the revision. */}}
{{- define "habitat.ringName" -}}
{{- if .Values.service.ring -}}
{{ .Values.service.ring }}
{{- else -}}
{{ regexReplaceAll "-[0-9]{14}$" .Values.service.ringSecretName "" }}
{{- end -}}
{{- end }}
