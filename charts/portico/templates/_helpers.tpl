{{/*
Names, labels and the small computations every template shares.
*/}}

{{- define "portico.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* <release>-<chart>, or the release name when it already contains the chart name; 52 characters leave room for suffixes. */}}
{{- define "portico.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "portico.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Selector labels: name, instance and component only, so that they never change after an install. Call with (list $ "component"). */}}
{{- define "portico.selectorLabels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ include "portico.name" $root }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{/* Labels a pod template carries: the selector's, plus the user's; no chart or version label, so a chart bump alone restarts nothing. */}}
{{- define "portico.podLabels" -}}
{{- $root := index . 0 -}}
{{ include "portico.selectorLabels" . }}
app.kubernetes.io/part-of: portico
{{- with index . 2 }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Labels on every object's metadata without the selector ones (the CRD keeps its own name and component). */}}
{{- define "portico.releaseLabels" -}}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: portico
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ include "portico.chart" . }}
{{- with merge (dict) .Values.commonLabels ((.Values.global).commonLabels | default dict) }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Labels on an object's metadata. Call with (list $ "component"). */}}
{{- define "portico.labels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ include "portico.name" $root }}
app.kubernetes.io/component: {{ index . 1 }}
{{ include "portico.releaseLabels" $root }}
{{- end }}

{{- define "portico.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag }}
{{- if .Values.image.digest }}
{{- printf "%s:%s@%s" .Values.image.repository $tag .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{- define "portico.imagePullSecrets" -}}
{{- $secrets := concat ((.Values.global).imagePullSecrets | default list) .Values.imagePullSecrets }}
{{- with $secrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{- define "portico.api.name" -}}{{ include "portico.fullname" . }}-api{{- end }}
{{- define "portico.operator.name" -}}{{ include "portico.fullname" . }}-operator{{- end }}

{{- define "portico.api.serviceAccountName" -}}
{{- if .Values.api.serviceAccount.create }}{{ default (include "portico.api.name" .) .Values.api.serviceAccount.name }}
{{- else }}{{ default "default" .Values.api.serviceAccount.name }}{{ end }}
{{- end }}

{{- define "portico.operator.serviceAccountName" -}}
{{- if .Values.operator.serviceAccount.create }}{{ default (include "portico.operator.name" .) .Values.operator.serviceAccount.name }}
{{- else }}{{ default "default" .Values.operator.serviceAccount.name }}{{ end }}
{{- end }}

{{- define "portico.operator.leaseName" -}}
{{- default (include "portico.operator.name" .) .Values.operator.leaseName }}
{{- end }}

{{- define "portico.catalog.namespace" -}}
{{- default .Release.Namespace .Values.catalog.namespace }}
{{- end }}

{{- define "portico.secretName" -}}
{{- default (include "portico.fullname" .) .Values.secrets.existingSecret }}
{{- end }}

{{/* The environment variable each secret setting feeds. */}}
{{- define "portico.secretVariables" -}}
mongodbUri: MONGODB_URI
redisUrl: REDIS_URL
adminToken: PORTICO_ADMIN_TOKEN
cursorSecret: PORTICO_CURSOR_SECRET
s3AccessKeyId: AWS_ACCESS_KEY_ID
s3SecretAccessKey: AWS_SECRET_ACCESS_KEY
tokenKeys: PORTICO_TOKEN_KEYS
{{- end }}

{{/*
The key of the Secret that holds a setting, or "" when no Secret holds it: with existingSecret the mapping in
secrets.existingSecretKeys, else the variable's own name when the value is given. Call with (list $ "setting").
*/}}
{{- define "portico.secretKey" -}}
{{- $root := index . 0 }}{{- $setting := index . 1 }}
{{- if $root.Values.secrets.existingSecret }}
{{- index $root.Values.secrets.existingSecretKeys $setting | default "" }}
{{- else if index $root.Values.secrets $setting }}
{{- index (include "portico.secretVariables" $root | fromYaml) $setting }}
{{- end }}
{{- end }}

{{/* env entries for the given secret settings that some Secret holds. Call with (list $ "setting" …). */}}
{{- define "portico.secretEnv" -}}
{{- $root := index . 0 }}
{{- $variables := include "portico.secretVariables" $root | fromYaml }}
{{- range $setting := rest . }}
{{- $key := include "portico.secretKey" (list $root $setting) }}
{{- if $key }}
- name: {{ index $variables $setting }}
  valueFrom:
    secretKeyRef:
      name: {{ include "portico.secretName" $root }}
      key: {{ $key }}
      {{- if eq $setting "adminToken" }}
      # Without it the admin surface is off (404), which is a working install.
      optional: true
      {{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/* The most API replicas that can exist at once, as far as the chart decides it. */}}
{{- define "portico.api.maxReplicas" -}}
{{- if .Values.api.autoscaling.enabled }}{{ .Values.api.autoscaling.maxReplicas }}{{ else }}{{ .Values.api.replicas }}{{ end }}
{{- end }}

{{/* The local path of file:// object storage, or "" for s3://. */}}
{{- define "portico.objectStorage.path" -}}
{{- if hasPrefix "file://" .Values.objectStorage.url }}{{ trimPrefix "file://" .Values.objectStorage.url }}{{ end }}
{{- end }}

{{/* Seconds SIGTERM may take: the preStop sleep, in-flight requests, then webhook attempts, then closing connections. */}}
{{- define "portico.api.terminationGracePeriodSeconds" -}}
{{- if kindIs "invalid" .Values.api.terminationGracePeriodSeconds }}
{{- $shutdown := div (add .Values.api.shutdownTimeoutMs 999) 1000 }}
{{- add .Values.api.preStopSleepSeconds (mul 2 $shutdown) 5 }}
{{- else }}
{{- .Values.api.terminationGracePeriodSeconds }}
{{- end }}
{{- end }}

{{/* topologySpreadConstraints with the component's selector filled in where the user left it out. Call with (list $ "component" constraints). */}}
{{- define "portico.topologySpreadConstraints" -}}
{{- $root := index . 0 }}{{- $component := index . 1 }}
{{- $constraints := list }}
{{- range index . 2 }}
{{- $constraint := deepCopy . }}
{{- if not (hasKey $constraint "labelSelector") }}
{{- $_ := set $constraint "labelSelector" (dict "matchLabels" (include "portico.selectorLabels" (list $root $component) | fromYaml)) }}
{{- if not (hasKey $constraint "matchLabelKeys") }}
{{- $_ := set $constraint "matchLabelKeys" (list "pod-template-hash") }}
{{- end }}
{{- end }}
{{- $constraints = append $constraints $constraint }}
{{- end }}
{{- with $constraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* Probe timing from values; the handler is the template's. */}}
{{- define "portico.probe" -}}
{{- $handler := index . 0 }}{{- $timing := index . 1 }}
httpGet:
  path: {{ $handler.path }}
  port: {{ $handler.port }}
{{- toYaml $timing | nindent 0 }}
{{- end }}

{{/* The shared settings both programs read (core/src/config.ts), as env entries. */}}
{{- define "portico.coreEnv" -}}
- name: PORTICO_DATA_DIR
  value: /data
- name: PORTICO_OBJECT_STORAGE
  value: {{ .Values.objectStorage.url | quote }}
- name: PORTICO_CATALOG
  value: {{ printf "%s/%s" (include "portico.catalog.namespace" .) .Values.catalog.name | quote }}
- name: LOG_LEVEL
  value: {{ .Values.config.logLevel | quote }}
{{- end }}

{{/* The writable places of a read-only root: /tmp, /data and, for file:// storage, the shared claim. */}}
{{- define "portico.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
- name: data
  mountPath: /data
{{- with include "portico.objectStorage.path" . }}
- name: objects
  mountPath: {{ . }}
{{- end }}
{{- end }}

{{/* Call with (list $ tmpSizeLimit dataSizeLimit). */}}
{{- define "portico.volumes" -}}
{{- $root := index . 0 -}}
- name: tmp
  emptyDir:
    sizeLimit: {{ index . 1 }}
- name: data
  emptyDir:
    sizeLimit: {{ index . 2 }}
{{- if include "portico.objectStorage.path" $root }}
- name: objects
  persistentVolumeClaim:
    claimName: {{ $root.Values.objectStorage.sharedVolumeClaim }}
{{- end }}
{{- end }}

{{/* Pod annotations: the user's, plus a checksum of the chart-created Secret so that changing it rolls the pods. Call with (list $ podAnnotations). */}}
{{- define "portico.podAnnotations" -}}
{{- $root := index . 0 }}
{{- $annotations := deepCopy (index . 1) }}
{{- if not $root.Values.secrets.existingSecret }}
{{- $_ := set $annotations "checksum/secret" (include "portico.secretData" $root | sha256sum) }}
{{- end }}
{{- with $annotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* One NetworkPolicy rule over TCP ports; no peers: any. Call with (dict "direction" "from"|"to" "peers" list "ports" list). */}}
{{- define "portico.networkPolicy.rule" -}}
- {{- with .peers }}
  {{ $.direction }}:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  ports:
    {{- range .ports }}
    - protocol: TCP
      port: {{ . }}
    {{- end }}
{{- end }}

{{- define "portico.networkPolicy.dns" -}}
- {{- with .Values.networkPolicy.egress.dns }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  ports:
    - protocol: UDP
      port: 53
    - protocol: TCP
      port: 53
{{- end }}

{{/* The chart-created Secret's stringData: the values given, under their variables' names. */}}
{{- define "portico.secretData" -}}
{{- $variables := include "portico.secretVariables" . | fromYaml }}
{{- range $setting := list "mongodbUri" "redisUrl" "adminToken" "cursorSecret" "s3AccessKeyId" "s3SecretAccessKey" "tokenKeys" }}
{{- with index $.Values.secrets $setting }}
{{ index $variables $setting }}: {{ . | quote }}
{{- end }}
{{- end }}
{{- end }}
