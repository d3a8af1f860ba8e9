package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func testChart(templates map[string]string, values map[string]interface{}) *Chart {
	t := map[string]string{}
	for n, s := range templates {
		t["demo/templates/"+n] = s
	}
	return &Chart{
		Metadata:  map[string]interface{}{"name": "demo", "version": "1.2.3", "appVersion": "4.5"},
		Values:    values,
		Templates: t,
		Files:     map[string][]byte{"files/a.txt": []byte("hello\n")},
	}
}

func render(t *testing.T, c *Chart, values map[string]interface{}) *Rendered {
	t.Helper()
	out, err := Render(c, values, RenderOptions{ReleaseName: "rel", Namespace: "ns",
		KubeVersion: "v1.32.0"})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestHelmObjectsAndFunctions(t *testing.T) {
	c := testChart(map[string]string{
		"_h.tpl": `{{- define "demo.name" -}}{{ .Release.Name }}-{{ .Chart.Name }}{{- end -}}`,
		"cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "demo.name" . }}
  namespace: {{ .Release.Namespace }}
data:
  app: {{ .Chart.AppVersion | quote }}
  file: {{ .Files.Get "files/a.txt" | trim | quote }}
  tpl: {{ tpl "{{ .Values.x }}" . | quote }}
  yaml: |
    {{- toYaml .Values.m | nindent 4 }}
  vap: {{ .Capabilities.APIVersions.Has "admissionregistration.k8s.io/v1" | quote }}
  minor: {{ .Capabilities.KubeVersion.Minor | quote }}`,
	}, nil)
	values := map[string]interface{}{"x": "tpl-ok", "m": map[string]interface{}{"b": 1, "a": "z"}}
	out := render(t, c, values)
	if len(out.Manifests) != 1 {
		t.Fatalf("want 1 manifest, got %d", len(out.Manifests))
	}
	got := out.Manifests[0].Text
	for _, want := range []string{"name: rel-demo", "namespace: ns", `app: "4.5"`,
		`file: "hello"`, `tpl: "tpl-ok"`, "    a: z\n    b: 1", `vap: "true"`, `minor: "32"`} {
		if !strings.Contains(got, want) {
			t.Errorf("rendered text lacks %q:\n%s", want, got)
		}
	}
}

func TestRequiredAndFailStopRendering(t *testing.T) {
	c := testChart(map[string]string{"a.yaml": `x: {{ required "image.tag is required" .Values.tag }}`}, nil)
	_, err := Render(c, map[string]interface{}{}, RenderOptions{})
	if err == nil || !strings.Contains(err.Error(), "image.tag is required") {
		t.Fatalf("want the required message, got %v", err)
	}
	c = testChart(map[string]string{"a.yaml": `{{ fail "nope" }}`}, nil)
	if _, err := Render(c, map[string]interface{}{}, RenderOptions{}); err == nil {
		t.Fatal("fail did not stop rendering")
	}
}

func TestEmptyDocumentsDroppedAndInstallOrder(t *testing.T) {
	c := testChart(map[string]string{
		"a.yaml": "{{- if false }}\nkind: Secret\n{{- end }}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n",
		"b.yaml": "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: s\n",
	}, nil)
	out := render(t, c, map[string]interface{}{})
	if len(out.Manifests) != 2 {
		t.Fatalf("want 2 manifests, got %d: %v", len(out.Manifests), out.Manifests)
	}
	if kindOf(out.Manifests[0].Text) != "ServiceAccount" || kindOf(out.Manifests[1].Text) != "Deployment" {
		t.Errorf("want ServiceAccount before Deployment, got %s, %s",
			kindOf(out.Manifests[0].Text), kindOf(out.Manifests[1].Text))
	}
}

func TestLintFindsWildcardsMissingValuesAndBadDocuments(t *testing.T) {
	c := testChart(map[string]string{
		"r.yaml": "{{ .Values.present.leaf }} {{ $.Values.absent.leaf }} {{ .Values.present.nope }}",
	}, map[string]interface{}{"present": map[string]interface{}{"leaf": 1}})
	docs := []Document{
		{Source: "role", Text: "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: r\nrules:\n  - apiGroups: [\"\"]\n    resources: [\"pods/*\"]\n    verbs: [\"get\"]\n  - apiGroups: [\"apps\"]\n    resources: [\"deployments\"]\n    verbs: [\"*\"]\n"},
		{Source: "nokind", Text: "apiVersion: v1\nmetadata:\n  name: x\n"},
		{Source: "broken", Text: "a: [1,\n"},
	}
	findings := strings.Join(Lint(c, docs), "\n")
	for _, want := range []string{`wildcard "pods/*" in resources`, `wildcard "*" in verbs`,
		".Values.absent.leaf is not in values.yaml", ".Values.present.nope is not in values.yaml",
		"nokind: a document without apiVersion, kind or metadata.name", "broken: does not parse"} {
		if !strings.Contains(findings, want) {
			t.Errorf("lint missed %q; findings:\n%s", want, findings)
		}
	}
	if strings.Contains(findings, "present.leaf") {
		t.Errorf("lint flagged a defined value:\n%s", findings)
	}
}

func TestValuesMergeAndSet(t *testing.T) {
	defaults := map[string]interface{}{
		"image": map[string]interface{}{"repository": "a", "tag": ""},
		"list":  []interface{}{"x"},
	}
	out, err := MergeValues(defaults, nil, []string{"image.tag=0.2.0", "replicas=3", "mode=0755",
		"list={p,q}", "flag=true"})
	if err != nil {
		t.Fatal(err)
	}
	img := out["image"].(map[string]interface{})
	if img["repository"] != "a" || img["tag"] != "0.2.0" {
		t.Errorf("image after --set: %v", img)
	}
	if out["replicas"] != int64(3) || out["mode"] != "0755" || out["flag"] != true {
		t.Errorf("typed --set values: %v %v %v", out["replicas"], out["mode"], out["flag"])
	}
	if l := out["list"].([]interface{}); len(l) != 2 || l[1] != "q" {
		t.Errorf("list --set: %v", l)
	}
	if defaults["image"].(map[string]interface{})["tag"] != "" {
		t.Error("MergeValues changed the chart's defaults")
	}
}

func TestLoadChartThroughASymlink(t *testing.T) {
	dir := t.TempDir()
	chartDir := filepath.Join(dir, "real")
	for path, text := range map[string]string{
		"Chart.yaml":          "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
		"values.yaml":         "a: 1\n",
		"templates/cm.yaml":   "kind: ConfigMap\n",
		"crds/x.yaml":         "kind: CustomResourceDefinition\n",
		"files/profiles/p.ya": "x\n",
	} {
		full := filepath.Join(chartDir, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(chartDir, link); err != nil {
		t.Fatal(err)
	}
	c, err := LoadChart(link)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Templates) != 1 || len(c.CRDs) != 1 || len(c.Files["files/profiles/p.ya"]) == 0 {
		t.Errorf("loaded through a symlink: %d templates, %d CRDs, files %v", len(c.Templates),
			len(c.CRDs), c.Files)
	}
}

const demoSchema = `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object", "additionalProperties": false,
  "properties": {
    "image": {"type": "object", "additionalProperties": false,
              "properties": {"tag": {"type": "string"}, "pullPolicy": {"enum": ["Always", "Never"]}}},
    "replicas": {"type": "integer", "minimum": 0},
    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
    "open": {"type": "object", "properties": {"a": {"type": "string"}}}
  }
}`

func TestValuesRefusedByTheSchemaAsHelmWordsIt(t *testing.T) {
	c := testChart(nil, map[string]interface{}{})
	c.Schema = []byte(demoSchema)
	ok := map[string]interface{}{"image": map[string]interface{}{"tag": "1.0", "pullPolicy": "Never"},
		"replicas": int64(2), "labels": map[string]interface{}{"x": "y"}}
	if err := ValidateValues(c, ok); err != nil {
		t.Fatalf("valid values refused: %v", err)
	}
	for _, tc := range []struct {
		values map[string]interface{}
		want   string
	}{
		{map[string]interface{}{"image": map[string]interface{}{"tagg": "1"}},
			"- image: Additional property tagg is not allowed"},
		{map[string]interface{}{"replicaz": 1}, "- (root): Additional property replicaz is not allowed"},
		{map[string]interface{}{"replicas": "three"}, "- replicas: Invalid type. Expected: integer, given: string"},
		{map[string]interface{}{"replicas": int64(-1)}, "- replicas: Must be greater than or equal to 0"},
		{map[string]interface{}{"image": map[string]interface{}{"pullPolicy": "Sometimes"}},
			"- image.pullPolicy: image.pullPolicy must be one of the following"},
		{map[string]interface{}{"labels": map[string]interface{}{"x": int64(1)}},
			"- labels.x: Invalid type. Expected: string, given: integer"},
	} {
		err := ValidateValues(c, tc.values)
		if err == nil {
			t.Errorf("%v: accepted", tc.values)
			continue
		}
		if !strings.HasPrefix(err.Error(), "values don't meet the specifications of the schema(s) in the following chart(s):\ndemo:\n") ||
			!strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %q, want %q under the chart's name", tc.values, err, tc.want)
		}
	}
	c.Schema = nil
	if err := ValidateValues(c, map[string]interface{}{"anything": 1}); err != nil {
		t.Errorf("a chart without a schema refused values: %v", err)
	}
}

func TestSchemaGapsNameUndescribedKeysAndOpenObjects(t *testing.T) {
	c := testChart(nil, map[string]interface{}{
		"image":  map[string]interface{}{"tag": "", "digest": ""},
		"labels": map[string]interface{}{"free": "form"},
		"extra":  1,
	})
	c.Schema = []byte(demoSchema)
	gaps := strings.Join(SchemaGaps(c), "\n")
	for _, want := range []string{"does not describe image.digest", "does not describe extra",
		"open lists its keys without additionalProperties: false"} {
		if !strings.Contains(gaps, want) {
			t.Errorf("SchemaGaps missed %q:\n%s", want, gaps)
		}
	}
	if strings.Contains(gaps, "labels") || strings.Contains(gaps, "image.tag") {
		t.Errorf("SchemaGaps flagged a described key or a free-form map:\n%s", gaps)
	}
}
