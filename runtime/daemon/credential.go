package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

// ReadCredentialFile reads the credential of device deviceID from path,
// which holds either the secret alone or the JSON that `agentwire core
// credential issue --kind device` prints. It refuses a file every user of
// the machine can read (any of them could act as the device), and a JSON
// credential of another kind or for another device. Errors never hold
// the secret.
func ReadCredentialFile(path, deviceID string) (Credential, error) {
	info, err := os.Stat(path)
	if err != nil {
		return Credential{}, fmt.Errorf("daemon: the credential file %s: %w", path, errors.Unwrap(err))
	}
	if info.Mode().Perm()&0o004 != 0 {
		// decision: a device credential any user of the machine can read
		// lets any of them act as the device; refused rather than warned,
		// with the one command that fixes it.
		return Credential{}, fmt.Errorf("daemon: the credential file %s can be read by every user of this machine (mode %04o); fix it with: chmod 600 %s",
			path, info.Mode().Perm(), path)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return Credential{}, fmt.Errorf("daemon: the credential file %s: %w", path, errors.Unwrap(err))
	}
	text := strings.TrimSpace(string(raw))
	if !strings.HasPrefix(text, "{") {
		if text == "" {
			return Credential{}, fmt.Errorf("daemon: the credential file %s is empty", path)
		}
		return NewCredential(text), nil
	}
	var c struct {
		Kind     string `json:"kind"`
		DeviceID string `json:"device_id"`
		Secret   string `json:"secret"`
	}
	switch {
	case json.Unmarshal([]byte(text), &c) != nil:
		return Credential{}, fmt.Errorf("daemon: the credential file %s is neither a secret nor the JSON credential issue prints", path)
	case c.Secret == "":
		return Credential{}, fmt.Errorf("daemon: the credential file %s holds no secret", path)
	case c.Kind != "" && c.Kind != "device":
		return Credential{}, fmt.Errorf("daemon: the credential file %s holds a %s credential; a Runtime needs one issued with --kind device", path, c.Kind)
	case c.DeviceID != "" && c.DeviceID != deviceID:
		return Credential{}, fmt.Errorf("daemon: the credential file %s is for device %s, not %s", path, c.DeviceID, deviceID)
	}
	return NewCredential(c.Secret), nil
}
