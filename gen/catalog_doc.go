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
				if dr.Event != nil {
					drives = append(drives, link+" `"+dr.Event.Name+"`")
					continue
				}
				var ks []string
				for _, k := range dr.Keyed {
					ks = append(ks, "`"+k.Value+"` → `"+k.Event.Name+"`")
				}
				drives = append(drives, link+" by `"+dr.Key+"`: "+strings.Join(ks, ", "))
			}
			if len(drives) == 0 {
				drives = []string{"—"}
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | `%s` | %s | %s |\n", msg.Type, msg.From, msg.ID.Name, msg.Payload, strings.Join(drives, "<br>"), cell(msg.Doc))
		}
		b.WriteString("\n")
	}
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
