{{- /*
The chart's name (nameOverride): app.kubernetes.io/name of the objects that have no component name label.
*/}}
{{- define "nodecare.name" -}}
{{ .Values.nameOverride | default .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- /*
The prefix of the names of the objects in the release namespace (fullnameOverride, else nameOverride, else
nodecare): <fullname>-agent, <fullname>-controller, <fullname>-agent-metrics, ... Not the release name
joined to it, as Helm's starter chart does: nodecare is one per cluster, and a release of another name
upgraded from the previous chart version keeps its objects' names. The cluster-scoped objects (CRDs,
ClusterRoles, FlowSchemas, admission policies) and the objects in the lease namespace keep their names
(docs/install.md, "Names and namespaces").
*/}}
{{- define "nodecare.fullname" -}}
{{ .Values.fullnameOverride | default (include "nodecare.name" .) | trunc 40 | trimSuffix "-" }}
{{- end }}

{{- /* A name of the kustomize base in nodecare-system (nodecare, nodecare-<rest>) as the chart names it: <fullname>, <fullname>-<rest>. */}}
{{- define "nodecare.rename" -}}
{{- if eq .name "nodecare" }}{{ include "nodecare.fullname" .root }}{{ else if hasPrefix "nodecare-" .name }}{{ include "nodecare.fullname" .root }}-{{ trimPrefix "nodecare-" .name }}{{ else }}{{ .name }}{{ end }}
{{- end }}

{{- /* system:serviceaccount:<release namespace>:<fullname>-<component>, the username of a component's token. */}}
{{- define "nodecare.serviceAccountUser" -}}
system:serviceaccount:{{ .root.Release.Namespace }}:{{ include "nodecare.fullname" .root }}-{{ .component }}
{{- end }}

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
{{- $labels := merge (deepCopy (.labels | default dict)) (dict "app.kubernetes.io/name" (include "nodecare.name" .root) "app.kubernetes.io/part-of" "nodecare") (fromYaml (include "nodecare.standardLabels" .root)) }}
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
{{- if not (and (eq $object.kind "Namespace") (eq $metadata.name "nodecare-system")) }}
{{- include "nodecare.localize" (dict "root" $root "object" $object) }}
{{- $_ := set $metadata "labels" (fromYaml (include "nodecare.labels" (dict "root" $root "labels" $metadata.labels))) }}
{{- with get $annotations $metadata.name }}
{{- $_ := set $metadata "annotations" (merge (deepCopy ($metadata.annotations | default dict)) .) }}
{{- end }}
---
{{ toYaml $object }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{- /*
An object of the kustomize base moved into the release namespace, in place: what is in nodecare-system goes
to .Release.Namespace with its name's nodecare- prefix replaced by the fullname (nodecare.rename), and every
reference to those follows: the ServiceAccount subjects of the bindings and FlowSchemas, a RoleBinding's Role,
the leader-election Role's Lease name, the controller FlowSchema's namespaces, and the admission policy's
username. The kustomize base's Namespace nodecare-system is not rendered (the release namespace is Helm's:
helm install --create-namespace). The lease namespace and the cluster-scoped names stay.
*/}}
{{- define "nodecare.localize" -}}
{{- $root := .root }}
{{- $object := .object }}
{{- $metadata := $object.metadata }}
{{- $system := eq ($metadata.namespace | default "") "nodecare-system" }}
{{- if $system }}
{{- $_ := set $metadata "namespace" $root.Release.Namespace }}
{{- $_ := set $metadata "name" (include "nodecare.rename" (dict "root" $root "name" $metadata.name)) }}
{{- end }}
{{- range $subject := $object.subjects | default list }}
{{- if and (eq $subject.kind "ServiceAccount") (eq ($subject.namespace | default "") "nodecare-system") }}
{{- $_ := set $subject "namespace" $root.Release.Namespace }}
{{- $_ := set $subject "name" (include "nodecare.rename" (dict "root" $root "name" $subject.name)) }}
{{- end }}
{{- end }}
{{- if and $system (eq $object.kind "RoleBinding") (eq $object.roleRef.kind "Role") }}
{{- $_ := set $object.roleRef "name" (include "nodecare.rename" (dict "root" $root "name" $object.roleRef.name)) }}
{{- end }}
{{- if and $system (eq $object.kind "Role") }}
{{- range $rule := $object.rules }}
{{- if $rule.resourceNames }}
{{- $names := list }}
{{- range $rule.resourceNames }}{{ $names = append $names (include "nodecare.rename" (dict "root" $root "name" .)) }}{{ end }}
{{- $_ := set $rule "resourceNames" $names }}
{{- end }}
{{- end }}
{{- end }}
{{- if eq $object.kind "FlowSchema" }}
{{- range $rule := $object.spec.rules | default list }}
{{- range $subject := $rule.subjects | default list }}
{{- with $subject.serviceAccount }}
{{- if eq .namespace "nodecare-system" }}
{{- $_ := set . "namespace" $root.Release.Namespace }}
{{- $_ := set . "name" (include "nodecare.rename" (dict "root" $root "name" .name)) }}
{{- end }}
{{- end }}
{{- end }}
{{- range $resources := $rule.resourceRules | default list }}
{{- if hasKey $resources "namespaces" }}
{{- $namespaces := list }}
{{- range $resources.namespaces }}{{ $namespaces = append $namespaces (ternary $root.Release.Namespace . (eq . "nodecare-system")) }}{{ end }}
{{- $_ := set $resources "namespaces" $namespaces }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- if eq $object.kind "ValidatingAdmissionPolicy" }}
{{- range $condition := $object.spec.matchConditions | default list }}
{{- $_ := set $condition "expression" (replace "system:serviceaccount:nodecare-system:nodecare-agent" (include "nodecare.serviceAccountUser" (dict "root" $root "component" "agent")) $condition.expression) }}
{{- end }}
{{- end }}
{{- end }}

{{- /*
The agent needs the Pod Security level privileged (host network, host paths) in the release namespace, a
label that the chart does not set: the namespace is Helm's (--create-namespace makes it without labels),
not the chart's. Where the namespace exists and enforces another level, the install fails here, naming the
command that fixes it, instead of a DaemonSet whose pods the API server refuses. An unlabelled namespace
gets the cluster's default level, privileged unless the cluster configures another; NOTES.txt says what to
do then. `lookup` finds nothing under `helm template` (no cluster) and before --create-namespace makes the
namespace.
*/}}
{{- define "nodecare.podSecurityCheck" -}}
{{- $namespace := lookup "v1" "Namespace" "" .Release.Namespace }}
{{- $level := "" }}
{{- with $namespace }}{{ $level = get (.metadata.labels | default dict) "pod-security.kubernetes.io/enforce" }}{{ end }}
{{- if and $level (ne $level "privileged") }}
{{- fail (printf "namespace %s enforces the Pod Security level %q, and nodecare-agent needs privileged (host network, host paths): kubectl label namespace %s pod-security.kubernetes.io/enforce=privileged --overwrite, then install again (docs/install.md, \"Pod Security\")" .Release.Namespace $level .Release.Namespace .Release.Namespace) }}
{{- end }}
{{- end }}

{{- /*
The controller's resources: controller.resources, with the memory request and limit sized from
controller.fleetSize when it is above 0. The benchmark's steady RSS of the controller alone with 5 extensions a
node (docs/install.md, "Controller memory by fleet size") lies under the line 136 MiB + 15 KiB per node at every
size measured (1,000 to 100,000 nodes). The request is that line, the limit the line divided by 0.7 (steady at
most 70% of the limit), each rounded up to 64 MiB and never below the values' own.
Integer MiB arithmetic: ceil(n * 15 / 1024) = (n * 15 + 1023) / 1024.
*/}}
{{- define "nodecare.controllerResources" -}}
{{- $resources := deepCopy .Values.controller.resources }}
{{- $nodes := int64 .Values.controller.fleetSize }}
{{- if gt $nodes 0 }}
{{- $steady := add 136 (div (add (mul $nodes 15) 1023) 1024) }}
{{- $limit := div (add (mul $steady 10) 6) 7 }}
{{- $roundUp := dict "request" (mul (div (add $steady 63) 64) 64) "limit" (mul (div (add $limit 63) 64) 64) }}
{{- $requests := $resources.requests | default dict }}
{{- $limits := $resources.limits | default dict }}
{{- $_ := set $requests "memory" (printf "%dMi" (max $roundUp.request 192)) }}
{{- $_ := set $limits "memory" (printf "%dMi" (max $roundUp.limit 512)) }}
{{- $_ := set $resources "requests" $requests }}
{{- $_ := set $resources "limits" $limits }}
{{- end }}
{{- toYaml $resources }}
{{- end }}
