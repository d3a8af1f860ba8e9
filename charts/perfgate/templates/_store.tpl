{{/* store.mode as a word: sqlite, postgres or off (an unquoted `off` in YAML reads as false). */}}
{{- define "perfgate.storeMode" -}}
{{- $mode := .Values.store.mode -}}
{{- if eq (toString $mode) "false" -}}
off
{{- else if has (toString $mode) (list "sqlite" "postgres" "off") -}}
{{- $mode -}}
{{- else -}}
{{- fail (printf "store.mode must be sqlite, postgres or off, not %q" (toString $mode)) -}}
{{- end -}}
{{- end -}}

{{/* The operator's results-store flags for store.mode. */}}
{{- define "perfgate.storeArgs" -}}
{{- $mode := include "perfgate.storeMode" . -}}
{{- if eq $mode "sqlite" -}}
- --store=sqlite:///var/lib/perfgate/results.db
{{- else if eq $mode "postgres" -}}
- --store=postgres
- --store-spool-dir=/var/lib/perfgate/spool
{{- else -}}
- --store=off
{{- end }}
- --cluster-name={{ .Values.store.clusterName }}
{{- end -}}

{{/* The volume at /var/lib/perfgate: the SQLite claim, or a memory-backed spool for PostgreSQL. */}}
{{- define "perfgate.storeVolume" -}}
{{- $mode := include "perfgate.storeMode" . -}}
{{- if eq $mode "sqlite" -}}
- name: store
  persistentVolumeClaim:
    claimName: {{ default (printf "%s-store" (include "perfgate.operatorName" .)) .Values.store.sqlite.existingClaim }}
{{- else if eq $mode "postgres" -}}
- name: store
  emptyDir:
    medium: Memory
    sizeLimit: {{ .Values.store.postgres.spoolSizeLimit }}
{{- end -}}
{{- end -}}
