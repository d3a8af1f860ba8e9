package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"path"
	"regexp"
	"sort"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig"
	"sigs.k8s.io/yaml"
)

// RenderOptions are what `helm install`/`helm template` take from the command line and the
// cluster.
type RenderOptions struct {
	ReleaseName string
	Namespace   string
	KubeVersion string   // "v1.32.0"
	APIVersions []string // extra entries for .Capabilities.APIVersions
}

// Rendered is the chart's output: manifests in Helm's install order, and NOTES.txt.
type Rendered struct {
	Manifests []Document
	Notes     string
}

// APIVersions is .Capabilities.APIVersions: "group/version" and "group/version/Kind" entries.
type APIVersions []string

// Has reports whether the cluster serves an API group/version (or a kind in it), as Helm's.
func (a APIVersions) Has(v string) bool {
	for _, e := range a {
		if e == v {
			return true
		}
	}
	return false
}

// Files is .Files: the chart's non-template files.
type Files map[string][]byte

// Get returns a file's text, "" when absent (as Helm's).
func (f Files) Get(name string) string { return string(f[name]) }

// GetBytes returns a file's bytes.
func (f Files) GetBytes(name string) []byte { return f[name] }

// Glob returns the files whose path matches the pattern ('*' stays within a folder).
func (f Files) Glob(pattern string) Files {
	out := Files{}
	for name, data := range f {
		if ok, _ := path.Match(pattern, name); ok {
			out[name] = data
		}
	}
	return out
}

// Lines returns a file's lines.
func (f Files) Lines(name string) []string {
	s := strings.TrimRight(string(f[name]), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// AsConfig renders the files as a ConfigMap's data block (base names as keys).
func (f Files) AsConfig() string {
	m := map[string]string{}
	for name, data := range f {
		m[path.Base(name)] = string(data)
	}
	return toYAML(m)
}

// Helm's kinds install order (pkg/releaseutil/kind_sorter.go in helm/helm); unknown kinds go
// last, by kind name.
var installOrder = []string{
	"PriorityClass", "Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange",
	"PodSecurityPolicy", "PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList",
	"ConfigMap", "StorageClass", "PersistentVolume", "PersistentVolumeClaim",
	"CustomResourceDefinition", "ClusterRole", "ClusterRoleList", "ClusterRoleBinding",
	"ClusterRoleBindingList", "Role", "RoleList", "RoleBinding", "RoleBindingList", "Service",
	"DaemonSet", "Pod", "ReplicationController", "ReplicaSet", "Deployment",
	"HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "IngressClass", "Ingress",
	"APIService",
}

var kindLine = regexp.MustCompile(`(?m)^kind:\s*([A-Za-z0-9]+)\s*$`)

// Render executes every template (not partials, not NOTES.txt) with Helm's built-in objects.
func Render(c *Chart, values map[string]interface{}, o RenderOptions) (*Rendered, error) {
	name, _ := c.Metadata["name"].(string)
	root := template.New("gotpl")
	// Helm without --strict: a missing key renders as empty, not as an error.
	root.Option("missingkey=zero")
	root.Funcs(funcMap(root))
	names := make([]string, 0, len(c.Templates))
	for n := range c.Templates {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, err := root.New(n).Parse(c.Templates[n]); err != nil {
			return nil, err
		}
	}
	top := map[string]interface{}{
		"Values":       values,
		"Release":      releaseObject(o),
		"Chart":        chartObject(c.Metadata),
		"Capabilities": capabilities(o),
		"Files":        filesObject(c.Files),
	}
	out := &Rendered{}
	for _, n := range names {
		base := path.Base(n)
		if strings.HasPrefix(base, "_") {
			continue
		}
		data := shallowCopy(top)
		data["Template"] = map[string]interface{}{"Name": n, "BasePath": name + "/templates"}
		var buf bytes.Buffer
		if err := root.ExecuteTemplate(&buf, n, data); err != nil {
			return nil, err
		}
		text := strings.ReplaceAll(buf.String(), "<no value>", "")
		if base == "NOTES.txt" {
			out.Notes = text
			continue
		}
		for _, doc := range splitManifests(text) {
			out.Manifests = append(out.Manifests, Document{Source: n, Text: doc})
		}
	}
	sortByKind(out.Manifests)
	return out, nil
}

func shallowCopy(m map[string]interface{}) map[string]interface{} {
	out := make(map[string]interface{}, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

var docSep = regexp.MustCompile(`(?m)^---[ \t]*$`)

// splitManifests splits on YAML document separators and drops documents that are only
// whitespace (what `{{- if }}` leaves behind), as Helm's releaseutil.SplitManifests does.
func splitManifests(text string) []string {
	var out []string
	for _, d := range docSep.Split(text, -1) {
		if strings.TrimSpace(d) == "" {
			continue
		}
		out = append(out, strings.Trim(d, "\n"))
	}
	return out
}

func kindOf(doc string) string {
	if m := kindLine.FindStringSubmatch(doc); m != nil {
		return m[1]
	}
	return ""
}

func sortByKind(docs []Document) {
	rank := map[string]int{}
	for i, k := range installOrder {
		rank[k] = i
	}
	key := func(d Document) (int, string) {
		k := kindOf(d.Text)
		if r, ok := rank[k]; ok {
			return r, ""
		}
		return len(installOrder), k
	}
	sort.SliceStable(docs, func(i, j int) bool {
		ri, ki := key(docs[i])
		rj, kj := key(docs[j])
		if ri != rj {
			return ri < rj
		}
		return ki < kj
	})
}

func releaseObject(o RenderOptions) map[string]interface{} {
	return map[string]interface{}{
		"Name": o.ReleaseName, "Namespace": o.Namespace, "Service": "Helm",
		"IsInstall": true, "IsUpgrade": false, "Revision": 1,
	}
}

// chartObject maps Chart.yaml's keys to the field names Helm's templates see (.Chart.AppVersion).
func chartObject(meta map[string]interface{}) map[string]interface{} {
	out := map[string]interface{}{}
	for k, v := range meta {
		switch k {
		case "apiVersion":
			out["APIVersion"] = v
		case "appVersion":
			out["AppVersion"] = v
		case "kubeVersion":
			out["KubeVersion"] = v
		default:
			out[strings.ToUpper(k[:1])+k[1:]] = v
		}
	}
	return out
}

func capabilities(o RenderOptions) map[string]interface{} {
	v := strings.TrimPrefix(o.KubeVersion, "v")
	parts := strings.SplitN(v, ".", 3)
	major, minor := "", ""
	if len(parts) >= 2 {
		major, minor = parts[0], parts[1]
	}
	// What every cluster this chart supports (kubeVersion >= 1.30) serves, plus the extras.
	apis := APIVersions{"v1", "apps/v1", "rbac.authorization.k8s.io/v1", "coordination.k8s.io/v1",
		"apiextensions.k8s.io/v1", "admissionregistration.k8s.io/v1", "events.k8s.io/v1",
		"admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy",
		"admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding"}
	apis = append(apis, o.APIVersions...)
	return map[string]interface{}{
		"KubeVersion": map[string]interface{}{
			"Version": "v" + v, "GitVersion": "v" + v, "Major": major, "Minor": minor,
		},
		"APIVersions": apis,
		"HelmVersion": map[string]interface{}{"Version": "chart-render"},
	}
}

func filesObject(files map[string][]byte) Files {
	out := Files{}
	for n, d := range files {
		// Helm keeps these out of .Files.
		if n == "Chart.yaml" || n == "values.yaml" || n == "values.schema.json" ||
			n == ".helmignore" {
			continue
		}
		out[n] = d
	}
	return out
}

// funcMap is sprig's text functions less env/expandenv (Helm removes them), plus Helm's own.
func funcMap(root *template.Template) template.FuncMap {
	f := sprig.TxtFuncMap()
	delete(f, "env")
	delete(f, "expandenv")
	f["toYaml"] = toYAML
	f["fromYaml"] = fromYAML
	f["fromYamlArray"] = fromYAMLArray
	f["toJson"] = toJSON
	f["fromJson"] = fromJSON
	f["fromJsonArray"] = fromJSONArray
	f["required"] = func(msg string, v interface{}) (interface{}, error) {
		if v == nil {
			return nil, errors.New(msg)
		}
		if s, ok := v.(string); ok && s == "" {
			return nil, errors.New(msg)
		}
		return v, nil
	}
	f["fail"] = func(msg string) (string, error) { return "", errors.New(msg) }
	// `helm template` has no cluster: lookup finds nothing.
	f["lookup"] = func(string, string, string, string) (map[string]interface{}, error) {
		return map[string]interface{}{}, nil
	}
	f["include"] = func(name string, data interface{}) (string, error) {
		var buf bytes.Buffer
		if err := root.ExecuteTemplate(&buf, name, data); err != nil {
			return "", err
		}
		return buf.String(), nil
	}
	f["tpl"] = func(text string, data interface{}) (string, error) {
		t, err := root.Clone()
		if err != nil {
			return "", err
		}
		t, err = t.New("tpl").Parse(text)
		if err != nil {
			return "", err
		}
		var buf bytes.Buffer
		if err := t.Execute(&buf, data); err != nil {
			return "", err
		}
		return strings.ReplaceAll(buf.String(), "<no value>", ""), nil
	}
	return f
}

func toYAML(v interface{}) string {
	data, err := yaml.Marshal(v)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(data), "\n")
}

func fromYAML(s string) map[string]interface{} {
	m := map[string]interface{}{}
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

func fromYAMLArray(s string) []interface{} {
	var a []interface{}
	if err := yaml.Unmarshal([]byte(s), &a); err != nil {
		return []interface{}{err.Error()}
	}
	return a
}

func toJSON(v interface{}) string {
	data, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(data)
}

func fromJSON(s string) map[string]interface{} {
	m := map[string]interface{}{}
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

func fromJSONArray(s string) []interface{} {
	var a []interface{}
	if err := json.Unmarshal([]byte(s), &a); err != nil {
		return []interface{}{err.Error()}
	}
	return a
}
