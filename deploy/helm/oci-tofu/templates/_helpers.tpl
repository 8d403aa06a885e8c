{{/* The release's name for its objects, at most 63 characters. */}}
{{- define "oci-tofu.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "oci-tofu.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "oci-tofu.selectorLabels" -}}
app.kubernetes.io/name: {{ include "oci-tofu.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "oci-tofu.labels" -}}
{{ include "oci-tofu.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "oci-tofu.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion -}}
{{- if .Values.image.digest -}}
{{- printf "%s:%s@%s" .Values.image.repository $tag .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/* --cache-bytes: memory.cachePercent of the memory limit, whole MiB, in bytes. */}}
{{- define "oci-tofu.cacheBytes" -}}
{{- mul (div (mul .Values.memory.limitMiB .Values.memory.cachePercent) 100) 1048576 -}}
{{- end -}}

{{/* GOMEMLIMIT: memory.goMemLimitPercent of the memory limit, in MiB. */}}
{{- define "oci-tofu.goMemLimit" -}}
{{- printf "%dMiB" (div (mul .Values.memory.limitMiB .Values.memory.goMemLimitPercent) 100 | int64) -}}
{{- end -}}

{{- define "oci-tofu.checkMemory" -}}
{{- $m := .Values.memory -}}
{{- if or (lt (int $m.limitMiB) 128) (lt (int $m.cachePercent) 1) (gt (int $m.cachePercent) 70) (gt (int $m.goMemLimitPercent) 95) (le (int $m.goMemLimitPercent) (int $m.cachePercent)) -}}
{{- fail "memory: limitMiB must be at least 128, cachePercent between 1 and 70, goMemLimitPercent above cachePercent and at most 95 (docs/guide-kubernetes.md, \"Memory\")" -}}
{{- end -}}
{{- end -}}

{{/*
The files of `files`: one entry per file, with its option, volume name,
source and mounted path. Returns YAML: {items: [{flag, volume, path, key,
secret, configMap, inline, inlineKey}]}.
*/}}
{{- define "oci-tofu.fileList" -}}
{{- $items := list -}}
{{- range $flag, $src := .Values.files -}}
{{- $sources := $src -}}
{{- if not (kindIs "slice" $src) -}}{{- $sources = list $src -}}{{- end -}}
{{- range $i, $s := $sources -}}
{{- $n := add (ternary 1 0 (hasKey $s "secret")) (ternary 1 0 (hasKey $s "configMap")) (ternary 1 0 (hasKey $s "inline")) -}}
{{- if ne (int $n) 1 -}}
{{- fail (printf "files.%s: give exactly one of secret, configMap and inline" $flag) -}}
{{- end -}}
{{- if and (not (hasKey $s "inline")) (not $s.key) -}}
{{- fail (printf "files.%s: key (the Secret's or ConfigMap's key holding the file) is required" $flag) -}}
{{- end -}}
{{- $volume := printf "file-%s-%d" $flag $i -}}
{{- $key := $s.key | default $flag -}}
{{- $dir := printf "/etc/oci-tofu/files/%s-%d" $flag $i -}}
{{- $items = append $items (dict "flag" $flag "volume" $volume "key" $key "dir" $dir "path" (printf "%s/%s" $dir $key) "secret" ($s.secret | default "") "configMap" ($s.configMap | default "") "inline" (hasKey $s "inline") "content" ($s.inline | default "") "inlineKey" (printf "%s-%d" $flag $i)) -}}
{{- end -}}
{{- end -}}
{{- dict "items" $items | toYaml -}}
{{- end -}}

{{/* The container's arguments: serve and every option. */}}
{{- define "oci-tofu.args" -}}
- serve
- --listen={{ .Values.listenHost }}:{{ .Values.service.targetPort }}
{{- if .Values.tls.enabled }}
- --tls-cert=/etc/oci-tofu/tls/tls.crt
- --tls-key=/etc/oci-tofu/tls/tls.key
{{- else }}
- --insecure-no-tls
{{- end }}
- --cache-bytes={{ include "oci-tofu.cacheBytes" . }}
- --shutdown-delay={{ int .Values.shutdown.delaySeconds }}s
- --shutdown-timeout={{ int .Values.shutdown.timeoutSeconds }}s
{{- range $flag, $value := .Values.serve }}
{{- if kindIs "slice" $value }}
{{- range $value }}
- {{ printf "--%s=%v" $flag . | quote }}
{{- end }}
{{- else if kindIs "bool" $value }}
{{- if $value }}
- {{ printf "--%s" $flag | quote }}
{{- end }}
{{- else if or (kindIs "float64" $value) (kindIs "int64" $value) (kindIs "int" $value) }}
- {{ printf "--%s=%d" $flag (int64 $value) | quote }}
{{- else if and (not (kindIs "invalid" $value)) (ne (toString $value) "") }}
- {{ printf "--%s=%s" $flag (toString $value) | quote }}
{{- end }}
{{- end }}
{{- range (include "oci-tofu.fileList" . | fromYaml).items }}
- {{ printf "--%s=%s" .flag .path | quote }}
{{- end }}
{{- end -}}

{{- define "oci-tofu.scheme" -}}
{{- ternary "HTTPS" "HTTP" .Values.tls.enabled -}}
{{- end -}}

{{/* serve needs something to serve, as `oci-tofu serve` does. */}}
{{- define "oci-tofu.checkServed" -}}
{{- $s := .Values.serve -}}
{{- if not (or (index $s "provider-template") (index $s "module-template") (index $s "tofu-repository") (hasKey .Values.files "config")) -}}
{{- fail "give at least one of serve.provider-template, serve.module-template, serve.tofu-repository and files.config: there is nothing to serve" -}}
{{- end -}}
{{- end -}}
