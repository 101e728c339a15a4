package modeltest

import (
	"strings"
)

// This file has the calls of the real CLIs' own tools, built on
// FunctionCall and CustomToolCall. Each names the tool and shapes the
// arguments as that CLI declares them; an adapter that needs another
// shape calls FunctionCall itself.

// Choice is one answer a user-choice question offers.
type Choice struct {
	Label       string
	Description string
}

// Question is one question of a user-choice tool call.
type Question struct {
	// ID names the question (Codex answers are keyed by it; Claude Code's
	// questions have no id and are answered by their text).
	ID       string
	Header   string
	Question string
	Choices  []Choice
	// MultiSelect lets the user pick several choices (Claude Code only).
	MultiSelect bool
}

func choices(cs []Choice) []map[string]any {
	out := make([]map[string]any, 0, len(cs))
	for _, c := range cs {
		out = append(out, map[string]any{"label": c.Label, "description": c.Description})
	}
	return out
}

// CodexExec calls Codex's exec_command tool to run cmd in the sandbox.
func CodexExec(cmd string) Part {
	return FunctionCall("exec_command", map[string]any{"cmd": cmd})
}

// CodexExecEscalated calls Codex's exec_command tool to run cmd outside
// the sandbox (sandbox_permissions "require_escalated") with the reason
// justification, which Codex asks the user to approve under
// approval_policy "on-request".
func CodexExecEscalated(cmd, justification string) Part {
	return FunctionCall("exec_command", map[string]any{
		"cmd": cmd, "sandbox_permissions": "require_escalated", "justification": justification,
	})
}

// CodexApplyPatch calls Codex's freeform apply_patch tool with patch (see
// AddFilePatch). Codex offers the tool only for models it knows.
func CodexApplyPatch(patch string) Part {
	return CustomToolCall("apply_patch", patch)
}

// AddFilePatch is an apply_patch patch that creates path with content.
func AddFilePatch(path, content string) string {
	var b strings.Builder
	b.WriteString("*** Begin Patch\n*** Add File: ")
	b.WriteString(path)
	b.WriteString("\n")
	for _, line := range strings.SplitAfter(content, "\n") {
		if line == "" {
			continue
		}
		b.WriteString("+")
		b.WriteString(strings.TrimSuffix(line, "\n"))
		b.WriteString("\n")
	}
	b.WriteString("*** End Patch\n")
	return b.String()
}

// CodexRequestUserInput calls Codex's request_user_input tool with qs
// (Codex offers it in Plan collaboration mode).
func CodexRequestUserInput(qs ...Question) Part {
	questions := make([]map[string]any, 0, len(qs))
	for _, q := range qs {
		questions = append(questions, map[string]any{
			"id": q.ID, "header": q.Header, "question": q.Question, "options": choices(q.Choices),
		})
	}
	return FunctionCall("request_user_input", map[string]any{"questions": questions})
}

// ClaudeBash calls Claude Code's Bash tool to run cmd.
func ClaudeBash(cmd, description string) Part {
	return FunctionCall("Bash", map[string]any{"command": cmd, "description": description})
}

// ClaudeWrite calls Claude Code's Write tool to write content to path (an
// absolute path).
func ClaudeWrite(path, content string) Part {
	return FunctionCall("Write", map[string]any{"file_path": path, "content": content})
}

// ClaudeAskUserQuestion calls Claude Code's AskUserQuestion tool with qs.
func ClaudeAskUserQuestion(qs ...Question) Part {
	questions := make([]map[string]any, 0, len(qs))
	for _, q := range qs {
		questions = append(questions, map[string]any{
			"question": q.Question, "header": q.Header, "options": choices(q.Choices), "multiSelect": q.MultiSelect,
		})
	}
	return FunctionCall("AskUserQuestion", map[string]any{"questions": questions})
}

// GeminiShell calls Gemini CLI's run_shell_command tool to run cmd, with
// description as the reason shown when it asks for permission.
func GeminiShell(cmd, description string) Part {
	return FunctionCall("run_shell_command", map[string]any{"command": cmd, "description": description})
}
