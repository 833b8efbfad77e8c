{{- /*
migpro.fullname prefixes every object the chart creates: <fullname>-agent,
<fullname>-admission, ... It is fullnameOverride, else nameOverride, else
"migpro". Two releases need different fullnames (and namespaces), since the
ClusterRoles, policies and webhook configurations are cluster-scoped.
*/ -}}
{{- define "migpro.fullname" -}}
{{- .Values.fullnameOverride | default .Values.nameOverride | default "migpro" | trunc 40 | trimSuffix "-" -}}
{{- end -}}
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
system:serviceaccount:{{ .Values.namespace }}:{{ include "migpro.fullname" . }}-agent
{{- end -}}
