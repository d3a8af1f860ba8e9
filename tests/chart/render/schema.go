package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/xeipuuv/gojsonschema"
)

// ValidateValues checks the merged values against the chart's values.schema.json as Helm does
// (pkg/chartutil/jsonschema.go, with the same library: xeipuuv/gojsonschema), and words the
// refusal as Helm does: every error under the chart's name, each naming the key's path.
// A chart without a schema accepts any values.
func ValidateValues(c *Chart, values map[string]interface{}) error {
	if len(c.Schema) == 0 {
		return nil
	}
	valuesJSON, err := json.Marshal(values)
	if err != nil {
		return err
	}
	result, err := gojsonschema.Validate(gojsonschema.NewBytesLoader(c.Schema),
		gojsonschema.NewBytesLoader(valuesJSON))
	if err != nil {
		return fmt.Errorf("%s/values.schema.json: %v", c.Dir, err)
	}
	if result.Valid() {
		return nil
	}
	name, _ := c.Metadata["name"].(string)
	var sb strings.Builder
	sb.WriteString("values don't meet the specifications of the schema(s) in the following chart(s):\n")
	sb.WriteString(name + ":\n")
	for _, e := range result.Errors() {
		sb.WriteString(fmt.Sprintf("- %s\n", e))
	}
	return errors.New(strings.TrimSuffix(sb.String(), "\n"))
}

// SchemaGaps lists what the schema leaves open in the chart's values: every key of values.yaml
// the schema does not describe, and every object of the schema that lists its properties but
// does not refuse others (so a misspelt key would pass). Objects without "properties" are
// free-form maps (labels, a Kubernetes volume source) and stay open on purpose.
func SchemaGaps(c *Chart) []string {
	if len(c.Schema) == 0 {
		return []string{"values.schema.json: missing: a misspelt value would be ignored"}
	}
	var schema map[string]interface{}
	if err := json.Unmarshal(c.Schema, &schema); err != nil {
		return []string{fmt.Sprintf("values.schema.json: %v", err)}
	}
	var out []string
	walkSchema("", schema, &out)
	keysInSchema("", c.Values, schema, &out)
	sort.Strings(out)
	return out
}

func walkSchema(path string, s map[string]interface{}, out *[]string) {
	props, hasProps := s["properties"].(map[string]interface{})
	if hasProps {
		if ap, ok := s["additionalProperties"].(bool); !ok || ap {
			where := path
			if where == "" {
				where = "(root)"
			}
			*out = append(*out, fmt.Sprintf(
				"values.schema.json: %s lists its keys without additionalProperties: false", where))
		}
		for k, v := range props {
			if sub, ok := v.(map[string]interface{}); ok {
				walkSchema(join(path, k), sub, out)
			}
		}
	}
	if items, ok := s["items"].(map[string]interface{}); ok {
		walkSchema(path+"[]", items, out)
	}
}

func keysInSchema(path string, v interface{}, s map[string]interface{}, out *[]string) {
	m, ok := v.(map[string]interface{})
	if !ok {
		return
	}
	props, hasProps := s["properties"].(map[string]interface{})
	if !hasProps {
		return // a free-form map: its keys are data, not values
	}
	for k, e := range m {
		sub, ok := props[k].(map[string]interface{})
		if !ok {
			*out = append(*out, fmt.Sprintf("values.schema.json: does not describe %s", join(path, k)))
			continue
		}
		keysInSchema(join(path, k), e, sub, out)
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
