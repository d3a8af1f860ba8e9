package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// Chart is a chart directory as Helm loads it (no dependencies, no archives).
type Chart struct {
	Dir       string
	Metadata  map[string]interface{} // Chart.yaml as written
	Values    map[string]interface{} // values.yaml
	Schema    []byte                 // values.schema.json; nil when the chart has none
	Templates map[string]string      // "NAME/templates/x.yaml" -> text
	Files     map[string][]byte      // every other file, path relative to the chart
	CRDs      []Document             // crds/*.yaml, as they are (Helm never templates them)
}

// Document is one rendered manifest and the template it came from.
type Document struct {
	Source string
	Text   string
}

// LoadChart reads Chart.yaml, values.yaml, templates/, crds/ and the remaining files.
func LoadChart(dir string) (*Chart, error) {
	c := &Chart{Dir: dir, Templates: map[string]string{}, Files: map[string][]byte{}}
	meta, err := readYAMLMap(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return nil, err
	}
	c.Metadata = meta
	name, _ := meta["name"].(string)
	if name == "" {
		return nil, fmt.Errorf("%s/Chart.yaml: no name", dir)
	}
	if c.Values, err = readYAMLMap(filepath.Join(dir, "values.yaml")); err != nil {
		return nil, err
	}
	if c.Schema, err = os.ReadFile(filepath.Join(dir, "values.schema.json")); err != nil &&
		!os.IsNotExist(err) {
		return nil, err
	}
	// Walk does not descend into a root that is a symlink (a chart linked into place).
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	err = filepath.Walk(root, func(path string, info os.FileInfo, werr error) error {
		if werr != nil || info.IsDir() {
			return werr
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		switch {
		case strings.HasPrefix(rel, "templates/"):
			c.Templates[name+"/"+rel] = string(data)
		case strings.HasPrefix(rel, "crds/"):
			c.CRDs = append(c.CRDs, Document{Source: name + "/" + rel, Text: string(data)})
		default:
			c.Files[rel] = data
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(c.CRDs, func(i, j int) bool { return c.CRDs[i].Source < c.CRDs[j].Source })
	return c, nil
}

func readYAMLMap(path string) (map[string]interface{}, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m := map[string]interface{}{}
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return m, nil
}

// MergeValues applies the values files (deep merge, maps only, as Helm does) and then the
// --set overrides to a copy of the chart's defaults.
func MergeValues(defaults map[string]interface{}, files, sets []string) (map[string]interface{}, error) {
	out := deepCopy(defaults).(map[string]interface{})
	for _, f := range files {
		m, err := readYAMLMap(f)
		if err != nil {
			return nil, err
		}
		mergeInto(out, m)
	}
	for _, s := range sets {
		if err := applySet(out, s); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func deepCopy(v interface{}) interface{} {
	switch t := v.(type) {
	case map[string]interface{}:
		m := make(map[string]interface{}, len(t))
		for k, e := range t {
			m[k] = deepCopy(e)
		}
		return m
	case []interface{}:
		l := make([]interface{}, len(t))
		for i, e := range t {
			l[i] = deepCopy(e)
		}
		return l
	default:
		return v
	}
}

// mergeInto: maps merge key by key, anything else replaces; null deletes (Helm's rule).
func mergeInto(dst, src map[string]interface{}) {
	for k, v := range src {
		if v == nil {
			delete(dst, k)
			continue
		}
		if sm, ok := v.(map[string]interface{}); ok {
			if dm, ok := dst[k].(map[string]interface{}); ok {
				mergeInto(dm, sm)
				continue
			}
		}
		dst[k] = deepCopy(v)
	}
}

var setIndex = regexp.MustCompile(`^(.*)\[(\d+)\]$`)

// applySet handles the --set forms the README uses: a.b.c=value, a.b[0]=value, a={x,y};
// values are typed as Helm types them (int, bool, null, else string).
func applySet(values map[string]interface{}, s string) error {
	eq := strings.Index(s, "=")
	if eq <= 0 {
		return fmt.Errorf("--set %q: want PATH=VALUE", s)
	}
	path, raw := s[:eq], s[eq+1:]
	var value interface{}
	if strings.HasPrefix(raw, "{") && strings.HasSuffix(raw, "}") {
		var list []interface{}
		for _, e := range strings.Split(raw[1:len(raw)-1], ",") {
			list = append(list, typed(e))
		}
		value = list
	} else {
		value = typed(raw)
	}
	keys := strings.Split(path, ".")
	cur := values
	for i, k := range keys {
		last := i == len(keys)-1
		if m := setIndex.FindStringSubmatch(k); m != nil {
			idx, _ := strconv.Atoi(m[2])
			list, _ := cur[m[1]].([]interface{})
			for len(list) <= idx {
				list = append(list, nil)
			}
			cur[m[1]] = list
			if last {
				list[idx] = value
				return nil
			}
			next, ok := list[idx].(map[string]interface{})
			if !ok {
				next = map[string]interface{}{}
				list[idx] = next
			}
			cur = next
			continue
		}
		if last {
			cur[k] = value
			return nil
		}
		next, ok := cur[k].(map[string]interface{})
		if !ok {
			next = map[string]interface{}{}
			cur[k] = next
		}
		cur = next
	}
	return nil
}

func typed(s string) interface{} {
	switch s {
	case "true":
		return true
	case "false":
		return false
	case "null":
		return nil
	}
	// A leading zero keeps a string ("0755", "007"), as in Helm's strvals.
	if s == "0" || !strings.HasPrefix(s, "0") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i
		}
	}
	return s
}
