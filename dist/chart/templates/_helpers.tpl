{{/* Name prefix of every object: the release name. */}}
{{- define "kraan.fullname" -}}
{{- printf "%s" .Release.Name | trunc 53 | trimSuffix "-" -}}
{{- end -}}

{{- define "kraan.serviceAccountName" -}}
{{- default (printf "%s-controller-manager" (include "kraan.fullname" .)) .Values.serviceAccount.name -}}
{{- end -}}

{{- /* A digest (make image prints it) pins the image and wins over the tag. */ -}}
{{- define "kraan.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default (printf "v%s" .Chart.AppVersion) .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{- define "kraan.labels" -}}
app.kubernetes.io/name: kraan-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "kraan.selectorLabels" -}}
app.kubernetes.io/name: kraan-operator
app.kubernetes.io/instance: {{ .Release.Name }}
control-plane: controller-manager
{{- end -}}

{{- /* The metrics Service's name and the DNS name its certificate is for. */ -}}
{{- define "kraan.metricsService" -}}
{{- printf "%s-metrics" (include "kraan.fullname" .) -}}
{{- end -}}

{{- define "kraan.metricsServerName" -}}
{{- printf "%s.%s.svc" (include "kraan.metricsService" .) .Release.Namespace -}}
{{- end -}}

{{- /* The Secret holding the metrics serving certificate; empty when there is none. */ -}}
{{- define "kraan.metricsTLSSecret" -}}
{{- if .Values.metrics.tls.secretName -}}
{{- .Values.metrics.tls.secretName -}}
{{- else if .Values.metrics.tls.certManager.enabled -}}
{{- printf "%s-metrics-tls" (include "kraan.fullname" .) -}}
{{- end -}}
{{- end -}}
