package scenario

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"github.com/agentwire/agentwire/internal/peer/transcript"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/coder/websocket"
)

// Shared wire scenarios (daemon-protocol.txt:195-198). One transcript is
// one conversation: its lines list once, in order, the frames Core and the
// Runtime send. Each side runs its real implementation against a scripted
// peer that plays the other side's lines: RunWireRuntime plays the lines
// written "core: …" against the real daemon and asserts the lines written
// "runtime: …"; RunWireCore plays the "runtime: …" lines against the real
// Core and asserts the "core: …" lines. Neither imports the other's
// implementation (daemon-protocol.txt:194).
//
// Directives (each followed by the lines exchanged after its action):
//
//	connect [kind=K] [unsupported=a,b] [version=V]
//	                    input: the Runtime's setup (the script adapter's steps).
//	                    Runtime side: the daemon starts (the first time) and
//	                    connects; Core side: the scripted Runtime dials Core and
//	                    sends the wiretest declaration for "runtime: heartbeat".
//	reconnect           the Runtime's next connection after a loss
//	disconnect          the connection is lost: the scripted side drops it
//	frames              no action
//	silence             the real side sends nothing more within the window
//	core CMD …          what Core owns beyond the wire (its API, a Turn's status,
//	                    the journal, its clock): the Core side runs CMD
//	                    (CoreSide.Do) and prints its lines; the Runtime side
//	                    prints them as written
//	runtime CMD …       what the Runtime owns: "runtime advance by=D" moves the
//	                    daemon's clock; "runtime exit" waits for it to end
//	                    ("runtime: exited: …"); the Core side prints them as written
//
// A side directive's own lines come first, then the frames its action led
// to. Frame lines are "SIDE: TYPE ID PAYLOAD" (the payload as JSON with
// sorted keys), "runtime: heartbeat", "core: closed CODE REASON" (Core
// closes the connection) and "core: refused upgrade STATUS CODE" (Core
// refuses the connect). A line starting with "~" floats among its side's
// frames of the same directive (see splitFloating).
//
// Placeholders: a value one side generates is written $name. The side that
// asserts the line binds it to what its real implementation sent; the side
// that plays the line and finds it unbound mints a value: $expires_at… the
// expiry five minutes past the scripted side's Now (milliseconds), any
// other a UUID derived from the name, which every ID field accepts.

// WireOptions configure the scripted Core of RunWireRuntime.
type WireOptions = ScriptedOptions

// RunWireRuntime runs the shared transcript at path on the Runtime side:
// the real peer opts.Start starts against a scripted Core.
func RunWireRuntime(t *testing.T, path string, opts WireOptions) {
	s := newScripted(t, opts)
	defer s.close()
	w := &wireRuntime{s: s}
	last := ""
	datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
		last = d.Cmd
		out, err := w.do(d)
		if err != nil {
			return out + "error: " + err.Error() + "\n"
		}
		return out
	})
	endsInSilence(t, path, last)
}

// endsInSilence fails a shared transcript whose last directive is not
// silence: a frame the real side sent after the last listed one would
// otherwise go unseen.
func endsInSilence(t *testing.T, path, last string) {
	if last != "silence" {
		t.Errorf("%s: a shared transcript ends with silence, so that a frame it does not list fails it", path)
	}
}

// RunWireCore runs the shared transcript at path on the Core side: the
// real Core opts.Core serves against a scripted Runtime. now is Core's
// clock, for minted expiries.
func RunWireCore(t *testing.T, path string, opts ScriptedRuntimeOptions, now func() time.Time) {
	s, end := newScriptedRuntime(t, opts)
	defer end()
	w := &wireCore{s: s, now: now}
	last := ""
	datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
		last = d.Cmd
		out, err := w.do(t, d)
		if err != nil {
			return out + "error: " + err.Error() + "\n"
		}
		return out
	})
	endsInSilence(t, path, last)
}

// wireLine is one expected line, parsed.
type wireLine struct {
	text     string // as written, without "~"
	floating bool
	side     string // "core" or "runtime"; "" for a side directive's own output
	typ, id  string
	payload  string
}

// written is the line as the transcript has it, its "~" included.
func (l wireLine) written() string {
	if l.floating {
		return "~" + l.text
	}
	return l.text
}

// parseWireLines splits a directive's expected output into its lines.
func parseWireLines(expected string) []wireLine {
	var out []wireLine
	for _, raw := range nonEmptyLines(expected) {
		l := wireLine{text: strings.TrimSpace(raw)}
		if strings.HasPrefix(l.text, "~") {
			l.floating, l.text = true, strings.TrimSpace(strings.TrimPrefix(l.text, "~"))
		}
		side, rest, ok := strings.Cut(l.text, ": ")
		if ok && (side == "core" || side == "runtime") {
			f := strings.SplitN(rest, " ", 3)
			switch {
			case rest == "heartbeat":
				l.side, l.typ = side, "heartbeat"
			case side == "core" && len(f) >= 2 && (f[0] == "closed" || f[0] == "refused"):
				l.side, l.typ = side, f[0]
			case len(f) == 3 && strings.HasPrefix(f[2], "{"):
				l.side, l.typ, l.id, l.payload = side, f[0], f[1], f[2]
			}
		}
		out = append(out, l)
	}
	return out
}

// mint is the value a playing side gives an unbound placeholder.
func mint(name string, now func() time.Time) (value string, number bool) {
	if strings.HasPrefix(name, "$expires_at") {
		return strconv.FormatInt(now().Add(5*time.Minute).UnixMilli(), 10), true
	}
	h := fmt.Sprintf("%x", sha256.Sum256([]byte(name)))
	return h[0:8] + "-" + h[8:12] + "-4" + h[13:16] + "-8" + h[17:20] + "-" + h[20:32], false
}

// placeholders lists the $names in s, longest match first at each place.
func placeholders(s string) []string {
	var out []string
	for i := 0; i < len(s); i++ {
		if s[i] != '$' {
			continue
		}
		j := i + 1
		for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= '0' && s[j] <= '9') {
			j++
		}
		if j > i+1 {
			out = append(out, s[i:j])
		}
		i = j - 1
	}
	return out
}

// wireRuntime is the Runtime side: a scripted Core plays Core's lines.
type wireRuntime struct{ s *scripted }

func (w *wireRuntime) do(d *datadriven.TestData) (string, error) {
	s, lines := w.s, parseWireLines(d.Expected)
	var out strings.Builder
	switch d.Cmd {
	case "connect", "reconnect":
		// A refusal Core answers the connect with is armed before the
		// daemon dials (scripted Core serves it).
		for _, l := range lines {
			if l.side == "core" && l.typ == "refused" {
				f := strings.Fields(l.text)
				if len(f) < 5 {
					return "", fmt.Errorf("%q: want core: refused STEP STATUS CODE", l.text)
				}
				status, _ := strconv.Atoi(f[3])
				s.mu.Lock()
				s.refusal[f[2]] = refusal{status: status, code: f[4]}
				s.mu.Unlock()
			}
		}
		if d.Cmd == "connect" && s.stop == nil {
			// The setup may name what Core created (an Environment bound
			// by its ID): its placeholders are minted as Core's lines'.
			w.mintAll(d.Input)
			s.stop = s.opts.Start(s.t, s.srv.URL, w.resolve(d.Input))
		}
		refused, err := s.accept()
		if err != nil {
			return "", err
		}
		if refused != "" {
			out.WriteString(refused + "\n")
			lines = dropRefusal(lines)
		}
	case "disconnect":
		if s.ws == nil {
			return "", fmt.Errorf("disconnect: no connection is open")
		}
		_ = s.ws.Close(websocket.StatusGoingAway, "scenario")
		s.ws = nil
	case "frames", "silence", "core":
	case "runtime":
		printed, err := w.runtimeDirective(d)
		out.WriteString(printed)
		if err != nil {
			return out.String(), err
		}
	default:
		return "", fmt.Errorf("unknown directive %q", d.Cmd)
	}
	if d.Cmd == "core" {
		for _, l := range lines {
			if l.side == "" {
				out.WriteString(l.text + "\n")
			}
		}
	}
	err := w.exchange(d, lines, &out)
	return out.String(), err
}

func dropRefusal(lines []wireLine) []wireLine {
	for i, l := range lines {
		if l.typ == "refused" {
			return append(lines[:i:i], lines[i+1:]...)
		}
	}
	return lines
}

func (w *wireRuntime) runtimeDirective(d *datadriven.TestData) (string, error) {
	if len(d.CmdArgs) == 0 {
		return "", fmt.Errorf("runtime: want a directive (advance by=D, exit)")
	}
	switch sub := d.CmdArgs[0].Key; sub {
	case "advance":
		by, err := time.ParseDuration(transcript.Arg(d, "by"))
		if err != nil || by <= 0 {
			return "", fmt.Errorf("runtime advance by=%q: want a positive Go duration", transcript.Arg(d, "by"))
		}
		if w.s.opts.Advance == nil {
			return "", fmt.Errorf("runtime advance: this peer's clock cannot be moved")
		}
		w.s.opts.Advance(w.s.t, by)
		return "", nil
	case "exit":
		if w.s.opts.Ended == nil {
			return "", fmt.Errorf("runtime exit: this peer cannot report its end")
		}
		res, ok := w.s.opts.Ended(w.s.t, 10*time.Second)
		if !ok {
			return "runtime: (still running)\n", nil
		}
		return "runtime: exited: " + res + "\n", nil
	default:
		return "", fmt.Errorf("runtime %s: unknown", sub)
	}
}

// exchange walks the frame lines: Core's are sent, each run of the
// Runtime's is read and rendered (floating lines settled within the run).
func (w *wireRuntime) exchange(d *datadriven.TestData, lines []wireLine, out *strings.Builder) error {
	s := w.s
	for i := 0; i < len(lines); {
		l := lines[i]
		switch l.side {
		case "":
			i++
		case "core":
			if err := w.play(l); err != nil {
				return err
			}
			out.WriteString(l.written() + "\n")
			i++
		case "runtime":
			j := i
			var want []string
			var floating []bool
			for ; j < len(lines) && lines[j].side == "runtime"; j++ {
				want, floating = append(want, lines[j].text), append(floating, lines[j].floating)
			}
			found := make([]string, 0, len(want))
			used := make([]bool, len(want))
			for n := range want {
				b, ok := s.next(10*time.Second, want[n] == "runtime: heartbeat")
				if !ok {
					out.WriteString(strings.Join(found, ""))
					out.WriteString("(no frame)\n")
					return nil
				}
				found = append(found, w.renameID(s.render(b, want[pairFor(b, want, used, n)]))+"\n")
			}
			out.WriteString(settleFloating(found, want, floating))
			i = j
		}
	}
	if d.Cmd == "silence" {
		for {
			b, ok := s.next(s.opts.Silence, false)
			if !ok {
				break
			}
			out.WriteString(w.renameID(s.render(b, "")) + "\n")
		}
	}
	return nil
}

// renameID writes the values Core's lines minted or bound as their names
// where a rendered line carries them inside a string or as its ID (an
// item "msg-RUN-1"); whole payload values are named by render already.
func (w *wireRuntime) renameID(line string) string {
	type nv struct{ name, value string }
	var vals []nv
	for name, v := range w.s.bind {
		var str string
		if json.Unmarshal([]byte(v), &str) == nil && len(str) >= 8 {
			vals = append(vals, nv{name, str})
		}
	}
	// Longest value first, then by name: deterministic and never a part
	// of a longer value.
	sort.Slice(vals, func(i, j int) bool {
		if len(vals[i].value) != len(vals[j].value) {
			return len(vals[i].value) > len(vals[j].value)
		}
		return vals[i].name < vals[j].name
	})
	for _, x := range vals {
		line = strings.ReplaceAll(line, x.value, x.name)
	}
	return line
}

// play sends one of Core's lines, minting what is unbound.
func (w *wireRuntime) play(l wireLine) error {
	s := w.s
	if s.ws == nil {
		return fmt.Errorf("%s: no connection is open", l.text)
	}
	if l.typ == "closed" {
		f := strings.SplitN(l.text, " ", 4)
		code, err := strconv.Atoi(f[2])
		if err != nil {
			return fmt.Errorf("%q: want core: closed CODE REASON", l.text)
		}
		reason := ""
		if len(f) == 4 {
			reason = f[3]
		}
		_ = s.ws.Close(websocket.StatusCode(code), reason)
		s.ws = nil
		return nil
	}
	w.mintAll(l.id + " " + l.payload)
	id, payload := w.resolve(l.id), w.resolve(l.payload)
	if id == "-" {
		id = ""
	}
	var v any
	if json.Unmarshal([]byte(payload), &v) == nil {
		s.remember(v)
	}
	payload, err := fill(payload)
	if err != nil {
		return err
	}
	idJSON, _ := json.Marshal(id)
	frame := `{"type":"` + l.typ + `","id":` + string(idJSON) + `,"payload":` + payload + `}`
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.ws.Write(ctx, websocket.MessageText, []byte(frame))
}

// mintAll binds every unbound placeholder of text to a minted value.
func (w *wireRuntime) mintAll(text string) {
	for _, name := range placeholders(text) {
		if _, ok := w.s.bind[name]; !ok {
			v, number := mint(name, time.Now)
			if !number {
				b, _ := json.Marshal(v)
				v = string(b)
			}
			w.s.bind[name] = v
		}
	}
}

// resolve substitutes bound placeholders: a quoted one by its JSON value,
// one inside a string (or the ID) by the string itself.
func (w *wireRuntime) resolve(text string) string {
	names := placeholders(text)
	// Longest first, so that $run never replaces the front of $run2.
	for i := range names {
		for j := i + 1; j < len(names); j++ {
			if len(names[j]) > len(names[i]) {
				names[i], names[j] = names[j], names[i]
			}
		}
	}
	for _, name := range names {
		v, ok := w.s.bind[name]
		if !ok {
			continue
		}
		text = strings.ReplaceAll(text, `"`+name+`"`, v)
		var str string
		if json.Unmarshal([]byte(v), &str) == nil {
			text = strings.ReplaceAll(text, name, str)
		}
	}
	return text
}
