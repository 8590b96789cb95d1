{{/*
Helpers for connecting to health systems (SMART client registrations, the development-only escape hatch).
*/}}

{{/* Where the API pods find the SMART client registrations (smart.clientsSecret), mounted read-only. */}}
{{- define "portico.smart.clientsDir" -}}/etc/portico/smart{{- end }}

{{/* Which extra env lists (api.env, operator.env) set PORTICO_SMART_ALLOW_INSECURE or PORTICO_SANDBOX (which would
admit the same and register a client for loopback brands), comma-separated; "" when none. */}}
{{- define "portico.insecureEnv" -}}
{{- $found := list }}
{{- range $component := list "api" "operator" }}
{{- range (index $.Values $component).env }}
{{- if has (.name | default "") (list "PORTICO_SMART_ALLOW_INSECURE" "PORTICO_SANDBOX") }}{{ $found = append $found (printf "%s.env: %s" $component .name) }}{{ end }}
{{- end }}
{{- end }}
{{- join ", " $found }}
{{- end }}
