package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// column is one column of a record table: its header and how a record
// (one element of the API's list, decoded) shows in it.
type column struct {
	header string
	cell   func(rec map[string]any) string
}

// field shows a member as text: strings as they are, times (RFC 3339 in
// the API) in local time, lists joined, nothing as "-".
func field(name string) column {
	return column{header: strings.ToUpper(strings.ReplaceAll(name, "_", " ")), cell: func(rec map[string]any) string {
		return cellText(rec[name])
	}}
}

func cellText(v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case string:
		if x == "" {
			return "-"
		}
		if t, err := time.Parse(time.RFC3339Nano, x); err == nil {
			return t.Local().Format(time.DateTime)
		}
		return x
	case bool:
		if x {
			return "yes"
		}
		return "no"
	case float64:
		return fmt.Sprint(x)
	case []any:
		parts := make([]string, 0, len(x))
		for _, e := range x {
			parts = append(parts, cellText(e))
		}
		if len(parts) == 0 {
			return "-"
		}
		return strings.Join(parts, ",")
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// listTable prints the API's list at path as a table of cols, one row per
// element of the member key; with asJSON it prints the API's JSON.
func (c *apiClient) listTable(path, key string, cols []column, asJSON bool, stdout io.Writer) error {
	if asJSON {
		return c.call("GET", path, nil, stdout)
	}
	var out bytes.Buffer
	if err := c.call("GET", path, nil, &out); err != nil {
		return err
	}
	var doc map[string][]map[string]any
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		return fmt.Errorf("GET %s: the API answered no %s list: %w", path, key, err)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	headers := make([]string, len(cols))
	for i, col := range cols {
		headers[i] = col.header
	}
	fmt.Fprintln(tw, strings.Join(headers, "\t"))
	for _, rec := range doc[key] {
		cells := make([]string, len(cols))
		for i, col := range cols {
			cells[i] = col.cell(rec)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// The tables of the list commands.
var (
	deviceColumns = []column{field("device_id"), field("project"), field("connected"),
		{header: "AGENT KINDS", cell: func(rec map[string]any) string {
			var kinds []any
			list, _ := rec["agent_kinds"].([]any)
			for _, k := range list {
				if m, ok := k.(map[string]any); ok {
					name, _ := m["kind"].(string)
					if avail, _ := m["available"].(bool); !avail {
						name += " (unavailable)"
					}
					kinds = append(kinds, name)
				}
			}
			return cellText(kinds)
		}},
		field("last_seen")}
	environmentColumns = []column{field("id"), field("type"), field("device_id"), field("created_at")}
	agentColumns       = []column{field("id"), field("version"),
		{header: "NAME", cell: func(rec map[string]any) string { return agentMember(rec, "name") }},
		{header: "AGENT KIND", cell: func(rec map[string]any) string { return agentMember(rec, "agent_kind") }},
		field("created_at")}
)

func agentMember(rec map[string]any, name string) string {
	def, _ := rec["agent"].(map[string]any)
	return cellText(def[name])
}
