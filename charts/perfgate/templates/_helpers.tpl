{{/* Base name of every object: the release name, or "perfgate" when the release is named so. */}}
{{- define "perfgate.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "perfgate.operatorName" -}}
{{- printf "%s-operator" (include "perfgate.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The worker's service account: the operator names it in every worker pod it creates. */}}
{{- define "perfgate.workerName" -}}
{{- printf "%s-worker" (include "perfgate.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "perfgate.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "perfgate.operatorSelector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{/* image: repository@digest when a digest is given, else repository:tag (tag defaults to appVersion). */}}
{{- define "perfgate.image" -}}
{{- $img := index . 0 -}}
{{- $root := index . 1 -}}
{{- if $img.digest -}}
{{- printf "%s@%s" $img.repository $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $img.repository (default $root.Chart.AppVersion $img.tag) -}}
{{- end -}}
{{- end -}}
