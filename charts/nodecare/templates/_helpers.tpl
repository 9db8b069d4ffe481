{{/* The image both workloads run: repository:tag, the tag defaulting to the chart's appVersion. */}}
{{- define "nodecare.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{- /*
The labels Helm's conventions give every object the chart renders, besides the kustomize base's own
(app.kubernetes.io/part-of, and app.kubernetes.io/name and component where the base has them). Never in a
selector: selectors are immutable, and these change with every chart version. The CRDs (crds/) are not
templated by Helm and carry only the base's labels.
*/}}
{{- define "nodecare.standardLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service | quote }}
{{- end }}

{{- /*
The labels of an object the chart renders: the standard ones, app.kubernetes.io/part-of: nodecare, and
app.kubernetes.io/name: nodecare where the object has no name label of its own. `labels` is the object's own
(the base's), which win.
*/}}
{{- define "nodecare.labels" -}}
{{- $labels := merge (deepCopy (.labels | default dict)) (dict "app.kubernetes.io/name" .root.Chart.Name "app.kubernetes.io/part-of" "nodecare") (fromYaml (include "nodecare.standardLabels" .root)) }}
{{- toYaml $labels }}
{{- end }}

{{- /*
A workload's pod template labels: its selector label (app.kubernetes.io/name: nodecare-<component>, never
changed), its component and part-of labels, the standard labels, and the value podLabels, which cannot
replace any of those.
*/}}
{{- define "nodecare.podLabels" -}}
{{- $own := dict "app.kubernetes.io/name" (printf "nodecare-%s" .component) "app.kubernetes.io/component" .component "app.kubernetes.io/part-of" "nodecare" }}
{{- $labels := merge $own (fromYaml (include "nodecare.standardLabels" .root)) (deepCopy (.podLabels | default dict)) }}
{{- toYaml $labels }}
{{- end }}

{{- /*
The objects of a file of the kustomize base or of a component (base/ and components/ link to manifests/),
each with the chart's labels added (nodecare.labels) and the annotations in `annotations` (by object name)
merged into its own. Rendered from their parsed form, so comments are dropped and keys are sorted; the
objects are the file's. `text`, when given, is the file's content as a template changed it.
*/}}
{{- define "nodecare.fromFile" -}}
{{- $root := .root }}
{{- $text := .text | default ($root.Files.Get .path) }}
{{- if not $text }}
{{- fail (printf "%s is missing from the chart (base/ and components/ must link to manifests/)" .path) }}
{{- end }}
{{- $annotations := .annotations | default dict }}
{{- range $doc := regexSplit "(?m)^---[ \t]*$" $text -1 }}
{{- $object := fromYaml $doc }}
{{- if hasKey $object "Error" }}
{{- fail (printf "%s: %s" $.path (get $object "Error")) }}
{{- end }}
{{- if $object }}
{{- $metadata := $object.metadata }}
{{- $_ := set $metadata "labels" (fromYaml (include "nodecare.labels" (dict "root" $root "labels" $metadata.labels))) }}
{{- with get $annotations $metadata.name }}
{{- $_ := set $metadata "annotations" (merge (deepCopy ($metadata.annotations | default dict)) .) }}
{{- end }}
---
{{ toYaml $object }}
{{- end }}
{{- end }}
{{- end }}
