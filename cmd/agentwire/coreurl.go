package main

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
)

// CoreEnv names the environment variable that stands in for --core.
const CoreEnv = "AGENTWIRE_CORE"

// coreBase reads --core, or AGENTWIRE_CORE when the flag is empty, as
// Core's base URL: host:port gets http://, and a trailing /api/v1 (with or
// without its slash) is dropped, since every command appends the API's own
// paths. Any other path is kept (Core behind a proxy at a prefix). What it
// cannot use is refused, saying what it expected.
func coreBase(flagValue string) (string, error) {
	raw := strings.TrimSpace(flagValue)
	from := "--core"
	if raw == "" {
		raw = strings.TrimSpace(os.Getenv(CoreEnv))
		from = CoreEnv
	}
	if raw == "" {
		return "", errors.New("--core is required (or set " + CoreEnv + "): Core's base URL, for example http://127.0.0.1:8080")
	}
	s := raw
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("%s %q: want Core's base URL, for example http://127.0.0.1:8080 or 127.0.0.1:8080", from, raw)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("%s %q: want an http or https URL of Core, for example http://127.0.0.1:8080", from, raw)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%s %q: want Core's base URL alone, without credentials, a query or a fragment", from, raw)
	}
	p := strings.TrimRight(u.Path, "/")
	p = strings.TrimSuffix(p, "/api/v1")
	u.Path, u.RawPath = strings.TrimRight(p, "/"), ""
	return u.String(), nil
}
