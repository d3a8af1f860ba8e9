package main

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// Lint checks the rendered documents and the chart's templates:
//   - every document parses as YAML and has apiVersion, kind and metadata.name;
//   - no Role/ClusterRole rule uses a wildcard in any field;
//   - every .Values path a template names exists in values.yaml;
//   - every file in crds/ is a CustomResourceDefinition;
//   - values.schema.json describes every key of values.yaml and refuses unknown keys (schema.go).
//
// It returns one line per finding, sorted.
func Lint(c *Chart, docs []Document) []string {
	var findings []string
	for _, d := range docs {
		findings = append(findings, lintDocument(d)...)
	}
	findings = append(findings, MissingValues(c)...)
	findings = append(findings, SchemaGaps(c)...)
	for _, d := range c.CRDs {
		obj := map[string]interface{}{}
		if err := yaml.Unmarshal([]byte(d.Text), &obj); err != nil {
			findings = append(findings, fmt.Sprintf("%s: %v", d.Source, err))
		} else if obj["kind"] != "CustomResourceDefinition" {
			findings = append(findings, fmt.Sprintf("%s: kind %v, want CustomResourceDefinition",
				d.Source, obj["kind"]))
		}
	}
	sort.Strings(findings)
	return findings
}

func lintDocument(d Document) []string {
	obj := map[string]interface{}{}
	if err := yaml.Unmarshal([]byte(d.Text), &obj); err != nil {
		return []string{fmt.Sprintf("%s: does not parse: %v", d.Source, err)}
	}
	var out []string
	kind, _ := obj["kind"].(string)
	apiVersion, _ := obj["apiVersion"].(string)
	meta, _ := obj["metadata"].(map[string]interface{})
	name, _ := meta["name"].(string)
	if kind == "" || apiVersion == "" || name == "" {
		out = append(out, fmt.Sprintf("%s: a document without apiVersion, kind or metadata.name",
			d.Source))
	}
	if kind == "Role" || kind == "ClusterRole" {
		out = append(out, WildcardRules(d.Source+": "+kind+"/"+name, obj)...)
	}
	return out
}

// WildcardRules names every rule field of a Role/ClusterRole that holds a "*" (alone or in a
// pattern such as "pods/*").
func WildcardRules(where string, role map[string]interface{}) []string {
	var out []string
	rules, _ := role["rules"].([]interface{})
	for i, r := range rules {
		rule, _ := r.(map[string]interface{})
		for _, field := range []string{"apiGroups", "resources", "verbs", "resourceNames",
			"nonResourceURLs"} {
			list, _ := rule[field].([]interface{})
			for _, e := range list {
				if s, _ := e.(string); strings.Contains(s, "*") {
					out = append(out, fmt.Sprintf("%s: rule %d: wildcard %q in %s", where, i, s, field))
				}
			}
		}
	}
	if _, ok := role["aggregationRule"]; ok {
		out = append(out, where+": aggregationRule grants whatever other roles grant")
	}
	return out
}

// A .Values path as templates write it: .Values.a.b, $.Values.a.b (not index/pluck forms).
var valuesRef = regexp.MustCompile(`\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)`)

// MissingValues lists every .Values path in the templates that values.yaml does not define.
func MissingValues(c *Chart) []string {
	var out []string
	seen := map[string]bool{}
	for name, text := range c.Templates {
		for _, m := range valuesRef.FindAllStringSubmatch(text, -1) {
			p := strings.TrimPrefix(m[1], ".")
			key := name + " " + p
			if seen[key] {
				continue
			}
			seen[key] = true
			if !hasPath(c.Values, strings.Split(p, ".")) {
				out = append(out, fmt.Sprintf("%s: .Values.%s is not in values.yaml", name, p))
			}
		}
	}
	return out
}

func hasPath(v interface{}, keys []string) bool {
	for _, k := range keys {
		m, ok := v.(map[string]interface{})
		if !ok {
			return false
		}
		if v, ok = m[k]; !ok {
			return false
		}
	}
	return true
}
