package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
)

const vaultUsage = `usage: agentwire vault <command> [flags]

commands:
  put      write a secret of the project's Vault (its value from standard input or --value-file)
  list     list the project's secrets (names and times; values are never shown)
  delete   delete a secret

An Agent's MCP server names a secret as its bearer_secret; Core sends its value
as the server's bearer token. Run "agentwire vault <command> -h" for one command.`

var vaultCommands = map[string]subcommand{
	"put": {use: "vault put [flags] NAME", about: "Writes the project's secret NAME, replacing its value; the value is read from --value-file, or\n" +
		"from standard input (one line; the trailing newline is dropped). A value is never a flag: flags show\n" +
		"in process listings.",
		examples: []string{"agentwire vault put docs-token < token.txt", "agentwire vault put --value-file token.txt docs-token"}},
	"list": {use: "vault list [flags]", about: "Lists the project's secrets: a table (local times), or the API's JSON with --json.",
		examples: []string{"agentwire vault list"}},
	"delete": {use: "vault delete [flags] NAME", about: "Deletes the project's secret NAME. A Turn whose Agent still names it fails before anything is\nsent.",
		examples: []string{"agentwire vault delete docs-token"}},
}

func runVault(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, vaultUsage)
		return errUsage
	}
	if oneOf(args[0], "-h", "--help", "help") {
		fmt.Fprintln(stdout, vaultUsage)
		return nil
	}
	cmd, ok := vaultCommands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "agentwire vault: unknown command %q\n\n%s\n", args[0], vaultUsage)
		return errUsage
	}
	fs := cmd.flags(stderr)
	core := fs.String("core", "", "Core's base URL (default $AGENTWIRE_CORE)")
	valueFile, asJSON := new(string), new(bool)
	switch args[0] {
	case "put":
		valueFile = fs.String("value-file", "", "read the value from this file (its trailing newline dropped) instead of standard input")
	case "list":
		asJSON = fs.Bool("json", false, "print the API's JSON instead of a table")
	}
	if err := parseFlags(fs, args[1:]); err != nil {
		return flagsDone(err)
	}
	want := 1
	if args[0] == "list" {
		want = 0
	}
	if fs.NArg() != want {
		if want == 0 {
			return usageError(fs, "vault list takes no arguments, got %d", fs.NArg())
		}
		return usageError(fs, "want one NAME, got %d arguments", fs.NArg())
	}
	c, err := newAPIClient(*core)
	if err != nil {
		return usageError(fs, "%v", err)
	}
	switch args[0] {
	case "list":
		return c.listTable("/api/v1/vault/secrets", "secrets", []column{field("name"), field("created_at"), field("updated_at")}, *asJSON, stdout)
	case "delete":
		return c.call("DELETE", "/api/v1/vault/secrets/"+url.PathEscape(fs.Arg(0)), nil, stdout)
	}
	value, err := readSecret(*valueFile, stdin)
	if err != nil {
		return err
	}
	return c.call("PUT", "/api/v1/vault/secrets/"+url.PathEscape(fs.Arg(0)), map[string]string{"value": value}, stdout)
}

// readSecret reads a secret's value: the file's content, or the first
// line of stdin, without its trailing newline.
func readSecret(path string, stdin io.Reader) (string, error) {
	var b []byte
	var err error
	if path != "" {
		b, err = os.ReadFile(path)
	} else {
		var line string
		line, err = bufio.NewReader(io.LimitReader(stdin, 16<<10)).ReadString('\n')
		if errors.Is(err, io.EOF) {
			err = nil
		}
		b = []byte(line)
	}
	if err != nil {
		return "", fmt.Errorf("reading the secret's value: %w", err)
	}
	v := strings.TrimRight(string(b), "\r\n")
	if strings.TrimSpace(v) == "" {
		return "", errors.New("the secret's value is empty (give it on standard input or with --value-file)")
	}
	return v, nil
}
