package diagram

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// This file is a reader of the stateDiagram-v2 subset the renderers emit. It
// follows the rules of Mermaid's own state-diagram lexer and of the step that
// turns parsed states into boxes, so that a test can ask what a reader of
// the rendered diagram sees without a browser. It rejects anything outside
// the subset rather than guessing: a new statement in the output must be
// taught here first, against Mermaid's rules. The real render is checked by
// `make diagrams-browser-check`.

// mmdDiagram is what one diagram declares.
type mmdDiagram struct {
	direction   string
	states      map[string]*mmdState // by id
	order       []string             // ids in first-mention order
	transitions []mmdTransition
	classDefs   map[string]bool
	notes       []mmdNote
}

// mmdState is one box. descriptions holds, in order, the label of a
// `state "…" as id` declaration and every `id : text` line.
type mmdState struct {
	id           string
	descriptions []string
	classes      []string
}

type mmdTransition struct {
	from, to string   // a state id or "[*]"
	label    []string // rendered lines, entities decoded; nil when unlabelled
}

type mmdNote struct {
	side, id string
	text     []string
}

// lines is the text Mermaid draws in the box, one element per line. Mermaid
// starts every box with its id as a placeholder and replaces it with the
// first description; further descriptions go beneath that one, under a rule.
// So a state with descriptions never shows its id unless a description says
// it (Mermaid's state data fetcher, SHAPE_STATE_WITH_DESC).
func (s *mmdState) lines() []string {
	if len(s.descriptions) == 0 {
		return []string{s.id}
	}
	var out []string
	for _, d := range s.descriptions {
		out = append(out, textLines(d)...)
	}
	return out
}

// The statements of the subset. IDs follow the lexer's ID rule
// ([^:\n\s\-\{]+) narrowed to what spec names can produce.
var (
	mmdIdent      = `[A-Za-z_][A-Za-z0-9_]*`
	mmdStateRef   = `(\[\*\]|` + mmdIdent + `)`
	mmdDeclRE     = regexp.MustCompile(`^state "([^"]*)" as (` + mmdIdent + `)$`)
	mmdDescRE     = regexp.MustCompile(`^(` + mmdIdent + `) : (.*)$`)
	mmdArrowRE    = regexp.MustCompile(`^` + mmdStateRef + ` --> ` + mmdStateRef + `(?: : (.*))?$`)
	mmdDirRE      = regexp.MustCompile(`^direction (TB|BT|LR|RL)$`)
	mmdAnyDirRE   = regexp.MustCompile(`(?i)direction\s+(TB|BT|LR|RL)`)
	mmdClassDefRE = regexp.MustCompile(`^classDef (` + mmdIdent + `) ([a-z-]+:[^,;]+(?:,[a-z-]+:[^,;]+)*)$`)
	mmdClassRE    = regexp.MustCompile(`^class (` + mmdIdent + `(?:,` + mmdIdent + `)*) (` + mmdIdent + `)$`)
	mmdNoteRE     = regexp.MustCompile(`^note (left|right) of (` + mmdIdent + `) : (.*)$`)
	mmdAccRE      = regexp.MustCompile(`^acc(Title|Descr): (.*)$`)
	mmdEntityRE   = regexp.MustCompile(`#(\w+);`)
	mmdBreakRE    = regexp.MustCompile(`(?i)<br\s*/?>`)
)

// mmdKeywords are the words Mermaid's state-diagram lexer matches as syntax
// before it tries an ID, so a state with one of these ids is misread.
var mmdKeywords = map[string]bool{
	"click": true, "href": true, "default": true, "direction": true, "scale": true,
	"acctitle": true, "accdescr": true, "classdef": true, "class": true, "style": true,
	"state": true, "note": true, "end": true, "statediagram": true, "hide": true,
	"as": true, "left": true, "right": true, "of": true,
}

// mmdEntities are the named #codes Mermaid turns back into characters after
// parsing (it passes them through as HTML entities); numeric codes work too.
var mmdEntities = map[string]string{"lt": "<", "gt": ">", "amp": "&", "quot": `"`}

// parseMermaid reads src and returns what it declares, or an error naming the
// first line Mermaid would read differently from what the renderer meant.
func parseMermaid(src string) (*mmdDiagram, error) {
	d := &mmdDiagram{states: map[string]*mmdState{}, classDefs: map[string]bool{}}
	started := false
	for i, raw := range strings.Split(strings.TrimSuffix(src, "\n"), "\n") {
		if err := d.statement(raw, &started); err != nil {
			return nil, fmt.Errorf("line %d %q: %w", i+1, raw, err)
		}
	}
	if !started {
		return nil, fmt.Errorf("no stateDiagram-v2 line")
	}
	return d, nil
}

func (d *mmdDiagram) statement(raw string, started *bool) error {
	line := strings.TrimSpace(raw)
	switch {
	case line == "":
		return nil
	case strings.HasPrefix(line, "%%{"):
		return fmt.Errorf("a %%%%{ directive is outside the subset")
	case strings.HasPrefix(line, "%%"):
		return nil
	case !*started:
		if line != "stateDiagram-v2" {
			return fmt.Errorf("the diagram must start with stateDiagram-v2")
		}
		*started = true
		return nil
	}
	// The lexer matches "direction XX" anywhere in a line before anything
	// else, so only the direction statement itself may contain it.
	if m := mmdDirRE.FindStringSubmatch(line); m != nil {
		if d.direction != "" {
			return fmt.Errorf("a second direction statement")
		}
		d.direction = m[1]
		return nil
	}
	if mmdAnyDirRE.MatchString(line) {
		return fmt.Errorf("text that Mermaid reads as a direction statement")
	}
	if m := mmdAccRE.FindStringSubmatch(line); m != nil {
		_, err := checkText(m[2])
		return err
	}
	if m := mmdDeclRE.FindStringSubmatch(line); m != nil {
		if _, err := checkText(m[1]); err != nil {
			return err
		}
		s, err := d.state(m[2])
		if err != nil {
			return err
		}
		if len(s.descriptions) > 0 {
			return fmt.Errorf("state %s is declared after it was described", s.id)
		}
		s.descriptions = append(s.descriptions, m[1])
		return nil
	}
	if m := mmdClassDefRE.FindStringSubmatch(line); m != nil {
		if d.classDefs[m[1]] {
			return fmt.Errorf("classDef %s twice", m[1])
		}
		d.classDefs[m[1]] = true
		return nil
	}
	if m := mmdClassRE.FindStringSubmatch(line); m != nil {
		if !d.classDefs[m[2]] {
			return fmt.Errorf("class %s is used before its classDef", m[2])
		}
		for _, id := range strings.Split(m[1], ",") {
			s, err := d.state(id)
			if err != nil {
				return err
			}
			s.classes = append(s.classes, m[2])
		}
		return nil
	}
	if m := mmdNoteRE.FindStringSubmatch(line); m != nil {
		text, err := checkText(m[3])
		if err != nil {
			return err
		}
		if _, err := d.state(m[2]); err != nil {
			return err
		}
		d.notes = append(d.notes, mmdNote{side: m[1], id: m[2], text: text})
		return nil
	}
	if m := mmdArrowRE.FindStringSubmatch(line); m != nil {
		t := mmdTransition{from: m[1], to: m[2]}
		for _, id := range m[1:3] {
			if id == "[*]" {
				continue
			}
			if _, err := d.state(id); err != nil {
				return err
			}
		}
		if strings.Contains(line, " : ") {
			label, err := checkText(m[3])
			if err != nil {
				return err
			}
			t.label = label
		}
		d.transitions = append(d.transitions, t)
		return nil
	}
	if m := mmdDescRE.FindStringSubmatch(line); m != nil {
		if _, err := checkText(m[2]); err != nil {
			return err
		}
		s, err := d.state(m[1])
		if err != nil {
			return err
		}
		s.descriptions = append(s.descriptions, m[2])
		return nil
	}
	return fmt.Errorf("not a statement of the subset")
}

// state returns the box with the given id, creating it as Mermaid does on
// first mention.
func (d *mmdDiagram) state(id string) (*mmdState, error) {
	if mmdKeywords[strings.ToLower(id)] {
		return nil, fmt.Errorf("state id %q is a Mermaid keyword", id)
	}
	s := d.states[id]
	if s == nil {
		s = &mmdState{id: id}
		d.states[id] = s
		d.order = append(d.order, id)
	}
	return s, nil
}

// checkText checks one label, description or quoted state label, and returns
// its rendered lines. Mermaid swaps #code; entities for placeholders before
// it parses and turns them back into characters afterwards, so they are
// safe anywhere; the rest of the text must not contain what ends a label
// (';' and "::" end a description, '"' a quoted label), starts a comment
// ('#', "%%"), or what the HTML sanitiser would strip or act on ('<', '>',
// '&', '{', '}'), except the line breaks. ':' is refused although Mermaid
// accepts a single one, because a label must not depend on that subtlety.
func checkText(text string) ([]string, error) {
	for _, m := range mmdEntityRE.FindAllStringSubmatch(text, -1) {
		if _, err := strconv.Atoi(m[1]); err != nil && mmdEntities[m[1]] == "" {
			return nil, fmt.Errorf("unknown entity #%s;", m[1])
		}
	}
	bare := mmdBreakRE.ReplaceAllString(mmdEntityRE.ReplaceAllString(text, ""), "")
	if i := strings.IndexAny(bare, `;#%"<>&{}:`); i >= 0 {
		return nil, fmt.Errorf("raw %q in text %q", bare[i], text)
	}
	lines := textLines(text)
	if strings.TrimSpace(strings.Join(lines, "")) == "" {
		return nil, fmt.Errorf("empty text")
	}
	return lines, nil
}

// textLines splits checked text at its line breaks and decodes its entities.
func textLines(text string) []string {
	parts := mmdBreakRE.Split(text, -1)
	for i, p := range parts {
		parts[i] = strings.TrimSpace(mmdEntityRE.ReplaceAllStringFunc(p, func(code string) string {
			name := code[1 : len(code)-1]
			if n, err := strconv.Atoi(name); err == nil {
				return string(rune(n))
			}
			return mmdEntities[name]
		}))
	}
	return parts
}
