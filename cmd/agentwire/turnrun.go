package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// turnOutcome is the error of a Turn that ended other than completed; the
// command exits 1 with it.
type turnOutcome struct {
	ID     string
	Status map[string]any
}

func (e *turnOutcome) Error() string {
	b, _ := json.Marshal(e.Status)
	return "turn " + e.ID + " ended " + string(b)
}

// maxStreamResumes bounds how often `turn run` resumes a dropped stream.
const maxStreamResumes = 5

// runTurnRun submits a Turn and prints its events as they arrive, one
// line each ("event data"), resuming a dropped stream with Last-Event-ID.
// It returns nil only for a completed Turn.
//
// Questions the Turn asks are answered through p (nil answers none).
func (c *apiClient) runTurnRun(session, text string, stdout io.Writer, p *prompter) error {
	input := []any{map[string]any{"content": []any{map[string]any{"type": "input_text", "text": text}}}}
	var created bytes.Buffer
	if err := c.call("POST", "/api/v1/sessions/"+session+"/turns", map[string]any{"input": input}, &created); err != nil {
		return err
	}
	var turn struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(created.Bytes(), &turn); err != nil || turn.ID == "" {
		return fmt.Errorf("the API answered no Turn ID: %s", strings.TrimSpace(created.String()))
	}
	fmt.Fprintf(stdout, "turn %s\n", turn.ID)
	last := ""
	for attempt := 0; attempt <= maxStreamResumes; attempt++ {
		status, err := c.stream(turn.ID, &last, stdout, p)
		if err != nil {
			return err
		}
		if status != nil {
			if status["state"] == "completed" {
				return nil
			}
			return &turnOutcome{ID: turn.ID, Status: status}
		}
	}
	return fmt.Errorf("turn %s: the event stream kept closing before the Turn finished", turn.ID)
}

// stream reads the Turn's SSE stream after *last until it ends; it
// returns the final status, or nil when the stream closed before it.
func (c *apiClient) stream(turnID string, last *string, stdout io.Writer, p *prompter) (map[string]any, error) {
	req, err := http.NewRequest("GET", c.base+"/api/v1/turns/"+turnID+"/events", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "text/event-stream")
	if *last != "" {
		req.Header.Set("Last-Event-ID", *last)
	}
	// No client timeout: a Turn may run for long; the server ends the
	// stream once the Turn is terminal.
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return nil, fmt.Errorf("GET events: %s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var id, event, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		case line == "":
			if event == "status" {
				var st map[string]any
				if err := json.Unmarshal([]byte(data), &st); err != nil {
					return nil, fmt.Errorf("the final status is not JSON: %w", err)
				}
				fmt.Fprintf(stdout, "status %s\n", data)
				return st, nil
			}
			if event != "" {
				fmt.Fprintf(stdout, "%s %s\n", event, data)
			}
			if p != nil {
				if err := c.answerQuestion(turnID, p, event, data, stdout); err != nil {
					return nil, err
				}
			}
			if id != "" {
				*last = id
			}
			id, event, data = "", "", ""
		}
	}
	// The stream closed (or broke) before the status: the caller resumes.
	return nil, nil
}

// answerQuestion asks p about a question event and posts the answer. A
// question settled meanwhile (409) is reported, not fatal: the Turn goes
// on and its stream says what became of it.
func (c *apiClient) answerQuestion(turnID string, p *prompter, event, data string, stdout io.Writer) error {
	id, body, err := p.answer(event, data)
	if err != nil || body == nil {
		return err
	}
	var out bytes.Buffer
	if err := c.call("POST", "/api/v1/turns/"+turnID+"/interactions/"+id, body, &out); err != nil {
		fmt.Fprintf(stdout, "answer %s not sent: %v\n", id, err)
		return nil
	}
	b, _ := json.Marshal(body)
	fmt.Fprintf(stdout, "answer %s %s\n", id, b)
	return nil
}
