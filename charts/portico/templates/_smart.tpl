{{/*
Helpers for connecting to health systems (SMART client registrations, the development-only escape hatch).
*/}}

{{/* Where the API pods find the SMART client registrations (smart.clientsSecret), mounted read-only. */}}
{{- define "portico.smart.clientsDir" -}}/etc/portico/smart{{- end }}

{{/* Which extra env lists (api.env, operator.env) set PORTICO_SMART_ALLOW_INSECURE, comma-separated; "" when none. */}}
{{- define "portico.insecureEnv" -}}
{{- $found := list }}
{{- range $component := list "api" "operator" }}
{{- range (index $.Values $component).env }}
{{- if eq (.name | default "") "PORTICO_SMART_ALLOW_INSECURE" }}{{ $found = append $found (printf "%s.env" $component) }}{{ end }}
{{- end }}
{{- end }}
{{- join ", " $found }}
{{- end }}
