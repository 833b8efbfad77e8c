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
{{- /*
migpro.nodeView is "true" when the agents read through migpro-admission's
node view (values admission.nodeView): admission on, the view on, and the
serving certificate's CA known to the agents (not cert-manager's, unless
caConfigMap names it). Empty otherwise: the agents read from the API server.
*/ -}}
{{- define "migpro.nodeView" -}}
{{- $certManager := and (.Capabilities.APIVersions.Has "cert-manager.io/v1") (ne .Values.admission.certManager false) -}}
{{- if and .Values.admission.enabled .Values.admission.nodeView.enabled (or (not $certManager) .Values.admission.nodeView.caConfigMap) -}}
true
{{- end -}}
{{- end -}}
{{- define "migpro.nodeViewCA" -}}
{{- .Values.admission.nodeView.caConfigMap | default (printf "%s-admission-ca" (include "migpro.fullname" .)) -}}
{{- end -}}
