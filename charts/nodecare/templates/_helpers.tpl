{{/* The image both workloads run: repository:tag, the tag defaulting to the chart's appVersion. */}}
{{- define "nodecare.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}
