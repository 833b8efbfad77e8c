{{- define "migpro.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- define "migpro.labels" -}}
app.kubernetes.io/name: migpro-agent
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
