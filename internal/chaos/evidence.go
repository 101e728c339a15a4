package chaos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/sqlite"
)

// LoadEvidence reads what the checker needs from a stopped run: the
// Turns of sessions (every one, the driver's or not) with their journals
// and inputs from the store in dataDir, every frames-N.jsonl transcript and
// every agent-DEVICE.log in dir. Core must not be running: the store is
// opened directly.
func LoadEvidence(ctx context.Context, dir, dataDir string, sessions []string, observed map[string][]string) (Evidence, error) {
	st, err := sqlite.Open(ctx, dataDir)
	if err != nil {
		return Evidence{Observed: observed}, fmt.Errorf("load evidence: open the store: %w", err)
	}
	defer st.Close()
	return LoadEvidenceFrom(ctx, dir, st, sessions, observed)
}

// LoadEvidenceFrom is LoadEvidence from an open store (the PostgreSQL
// database Core replicas shared).
func LoadEvidenceFrom(ctx context.Context, dir string, st store.Store, sessions []string, observed map[string][]string) (Evidence, error) {
	e := Evidence{Observed: observed}
	for _, sid := range sessions {
		turns, err := st.SessionTurns(ctx, sid, 1<<20)
		if err != nil {
			return e, fmt.Errorf("load evidence: Turns of Session %s: %w", sid, err)
		}
		for _, t := range turns {
			events, err := st.Events(ctx, t.ID, 0, 0)
			if err != nil {
				return e, fmt.Errorf("load evidence: journal of Turn %s: %w", t.ID, err)
			}
			inputs, err := st.Inputs(ctx, t.ID, 0)
			if err != nil {
				return e, fmt.Errorf("load evidence: inputs of Turn %s: %w", t.ID, err)
			}
			e.Turns = append(e.Turns, TurnRecord{Turn: t, Events: events, Inputs: inputs})
		}
	}
	transcripts, _ := filepath.Glob(filepath.Join(dir, "frames-*.jsonl"))
	for _, path := range transcripts {
		gen, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "frames-"), ".jsonl"))
		if err != nil {
			continue
		}
		frames, err := readTranscript(path, gen)
		if err != nil {
			return e, err
		}
		e.Frames = append(e.Frames, frames...)
	}
	slices.SortStableFunc(e.Frames, func(a, b Frame) int { return a.Gen - b.Gen })
	logs, _ := filepath.Glob(filepath.Join(dir, "agent-*.log"))
	for _, path := range logs {
		device := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "agent-"), ".log")
		recs, err := readAgentLog(path, device)
		if err != nil {
			return e, err
		}
		e.Agent = append(e.Agent, recs...)
	}
	return e, nil
}

// readTranscript reads one Core transcript; a last line cut short by
// SIGKILL is skipped, any other line that does not decode is an error.
func readTranscript(path string, gen int) ([]Frame, error) {
	lines, err := jsonLines(path)
	if err != nil {
		return nil, err
	}
	var out []Frame
	for i, l := range lines {
		var line struct {
			Device string `json:"device"`
			Dir    string `json:"dir"`
			Frame  struct {
				Type    string          `json:"type"`
				ID      string          `json:"id"`
				Payload json.RawMessage `json:"payload"`
			} `json:"frame"`
		}
		if err := json.Unmarshal(l, &line); err != nil {
			if i == len(lines)-1 {
				break
			}
			return nil, fmt.Errorf("read transcript %s line %d: %w", path, i+1, err)
		}
		out = append(out, Frame{Gen: gen, Device: line.Device, Dir: line.Dir, Type: line.Frame.Type, ID: line.Frame.ID, Payload: line.Frame.Payload})
	}
	return out, nil
}

// readAgentLog reads one device's agent log. Agents write each line in
// one append, so every line decodes.
func readAgentLog(path, device string) ([]AgentRecord, error) {
	lines, err := jsonLines(path)
	if err != nil {
		return nil, err
	}
	out := make([]AgentRecord, 0, len(lines))
	for i, l := range lines {
		var r AgentRecord
		if err := json.Unmarshal(l, &r); err != nil {
			return nil, fmt.Errorf("read agent log %s line %d: %w", path, i+1, err)
		}
		r.Device = device
		out = append(out, r)
	}
	return out, nil
}

func jsonLines(path string) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var out [][]byte
	for sc.Scan() {
		if l := bytes.TrimSpace(sc.Bytes()); len(l) > 0 {
			out = append(out, bytes.Clone(l))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return out, nil
}
