// chart-render stands in for `helm template` on machines without Helm: it renders a chart
// directory with Go's text/template, the sprig functions and Helm's own additions, and checks
// what the chart tests need (docs/chart-rendering.md says what it does not cover).
//
//	chart-render [--values FILE]... [--set PATH=VALUE]... [--release NAME] [--namespace NS]
//	             [--api-versions LIST] [--include-crds] [--notes] [--lint] CHART_DIR
//
// Output: the manifests as one YAML stream, each document headed by "# Source: ..." as Helm
// writes it. With --lint it also checks every document (see lint.go) and exits 1 on a finding.
// Build offline with Debian's Go packages: GO111MODULE=off GOPATH=/usr/share/gocode go build.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func main() {
	var valueFiles, sets stringList
	flag.Var(&valueFiles, "values", "values file merged over the chart's values.yaml (repeatable)")
	flag.Var(&sets, "set", "PATH=VALUE override, after the values files (repeatable)")
	release := flag.String("release", "perfgate", "release name")
	namespace := flag.String("namespace", "perfgate-system", "release namespace")
	apiVersions := flag.String("api-versions", "",
		"comma-separated extra group/version[/Kind] entries for .Capabilities.APIVersions")
	kubeVersion := flag.String("kube-version", "v1.32.0", ".Capabilities.KubeVersion")
	includeCRDs := flag.Bool("include-crds", false, "emit the chart's crds/ first, as helm template --include-crds")
	notes := flag.Bool("notes", false, "render NOTES.txt to stderr")
	lint := flag.Bool("lint", false, "check the output and the chart (lint.go); exit 1 on a finding")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: chart-render [flags] CHART_DIR")
		os.Exit(2)
	}
	chart, err := LoadChart(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "chart-render:", err)
		os.Exit(2)
	}
	values, err := MergeValues(chart.Values, valueFiles, sets)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chart-render:", err)
		os.Exit(2)
	}
	// As `helm install` and `helm template`: the merged values must meet values.schema.json.
	if err := ValidateValues(chart, values); err != nil {
		fmt.Fprintln(os.Stderr, "chart-render:", err)
		os.Exit(1)
	}
	opts := RenderOptions{
		ReleaseName: *release,
		Namespace:   *namespace,
		KubeVersion: *kubeVersion,
		APIVersions: splitNonEmpty(*apiVersions),
	}
	out, err := Render(chart, values, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chart-render:", err)
		os.Exit(1)
	}
	var docs []Document
	if *includeCRDs {
		docs = append(docs, chart.CRDs...)
	}
	docs = append(docs, out.Manifests...)
	for _, d := range docs {
		fmt.Printf("---\n# Source: %s\n%s\n", d.Source, strings.TrimRight(d.Text, "\n"))
	}
	if *notes {
		fmt.Fprint(os.Stderr, out.Notes)
	}
	if *lint {
		findings := Lint(chart, docs)
		for _, f := range findings {
			fmt.Fprintln(os.Stderr, "lint:", f)
		}
		if len(findings) > 0 {
			os.Exit(1)
		}
	}
}

func splitNonEmpty(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
