{{- define "migpro.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- define "migpro.admissionImage" -}}
{{ .Values.admission.image.repository }}:{{ .Values.admission.image.tag | default .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- define "migpro.labels" -}}
app.kubernetes.io/name: migpro-agent
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
{{- define "migpro.agentUser" -}}
system:serviceaccount:{{ .Values.namespace }}:migpro-agent
{{- end -}}
