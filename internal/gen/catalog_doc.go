package gen

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/agentwire/agentwire/spec"
)

// catalogPage renders docs/wire/catalog.md: every message type by family,
// with its direction, identity, payload type and the machine events it
// drives, linked to the machine pages.
func catalogPage(c *spec.Catalog, caps []*spec.Capability) []byte {
	var b bytes.Buffer
	b.WriteString("<!-- " + catalogHeader() + " -->\n\n")
	b.WriteString("# Wire catalog\n\n")
	fmt.Fprintf(&b, "Wire version **%s**: peers must match it exactly, patch included. ", c.Version)
	b.WriteString("Every frame is one JSON envelope `{type, id, payload, trace}`; a type that is not listed here is rejected, never dropped. ")
	b.WriteString("Decoding is strict in both directions (unknown members at any depth, missing required members and wrong JSON types are errors that name the field).\n\n")
	for _, fam := range c.Families {
		fmt.Fprintf(&b, "## %s\n\n%s.\n\n", fam.Name, upperFirst(cell(fam.Doc)))
		b.WriteString("| Type | Sent by | `id` carries | Payload | Drives | Meaning |\n")
		b.WriteString("| --- | --- | --- | --- | --- | --- |\n")
		for _, msg := range c.Messages {
			if msg.Family != fam {
				continue
			}
			var drives []string
			for _, dr := range msg.Drives {
				link := fmt.Sprintf("[%s](../machines/%s.md)", dr.Machine.Name, dr.Machine.Name)
				line := ""
				if dr.Event != nil {
					line = link + " `" + dr.Event.Name + "`"
				} else {
					var ks []string
					for _, k := range dr.Keyed {
						ks = append(ks, "`"+k.Value+"` → `"+k.Event.Name+"`")
					}
					line = link + " by `" + dr.By + "`: " + strings.Join(ks, ", ")
				}
				drives = append(drives, line+instanceDoc(dr))
			}
			if len(drives) == 0 {
				drives = []string{"—"}
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | `%s` | %s | %s |\n", msg.Type, msg.From, msg.ID.Name, msg.Payload, strings.Join(drives, "<br>"), cell(msg.Doc))
		}
		b.WriteString("\n")
	}
	b.WriteString("Each drive's instance is the one keyed by the envelope id unless the drive says otherwise: " +
		"a payload member (*instance from*), the envelope id with a member, an alias or a delivery ID that an earlier frame " +
		"*registers*, or the connection's one instance.\n\n")
	b.WriteString("## Identities\n\n| Identity | Rule | Meaning |\n| --- | --- | --- |\n")
	for _, id := range c.Identities {
		rule := "1–128 bytes of UTF-8"
		switch {
		case id.Name == "none" || id.Name == "device":
			rule = "absent"
		case id.UUID:
			rule = "canonical non-nil UUID"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", id.Name, rule, cell(id.Doc))
	}
	if len(caps) > 0 {
		fmt.Fprintf(&b, "\n## Capabilities\n\n`AgentKindCapabilities` has %d fields, each a JSON boolean that must be present (false included):\n\n| Field | Meaning |\n| --- | --- |\n", len(caps))
		for _, cp := range caps {
			fmt.Fprintf(&b, "| `%s` | %s |\n", cp.Name, cell(cp.Doc))
		}
	}
	return b.Bytes()
}

func cell(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ") }

func upperFirst(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// instanceDoc says where a drive finds its instance, when not in the
// envelope id, and what it registers.
func instanceDoc(dr *spec.Drive) string {
	var out string
	switch src := dr.Instance; src.Kind {
	case spec.InstanceByField:
		out = " (instance from `" + src.Field + "`)"
	case spec.InstanceByIDAndField:
		out = " (instance from the id and `" + src.Field + "`)"
	case spec.InstanceByAlias:
		out = " (instance registered as `" + src.Alias + "`)"
	case spec.InstanceByDelivery:
		out = " (instance that sent `" + src.Field + "`)"
	case spec.InstanceConnection:
		out = " (the connection)"
	}
	for _, r := range dr.Registers {
		if r.Alias != "" {
			out += " registers the id as `" + r.Alias + "`"
		} else {
			out += " registers `" + r.Field + "`"
		}
	}
	return out
}
