{{/* The operator's results-store flags for store.mode (sqlite, postgres, off). */}}
{{- define "perfgate.storeArgs" -}}
{{- $mode := .Values.store.mode -}}
{{- if not (has $mode (list "sqlite" "postgres" "off")) -}}
{{- fail (printf "store.mode must be sqlite, postgres or off, not %q" $mode) -}}
{{- end -}}
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
{{- if eq .Values.store.mode "sqlite" -}}
- name: store
  persistentVolumeClaim:
    claimName: {{ default (printf "%s-store" (include "perfgate.operatorName" .)) .Values.store.sqlite.existingClaim }}
{{- else if eq .Values.store.mode "postgres" -}}
- name: store
  emptyDir:
    medium: Memory
    sizeLimit: {{ .Values.store.postgres.spoolSizeLimit }}
{{- end -}}
{{- end -}}
