// Package daemon runs an agentwire Runtime: the process on a device that
// connects to Core, declares which agent kinds it can run and runs the
// Turns Core places on it through Harnesses you provide.
//
// # Embedding a Runtime
//
// A Runtime is a registry of Harnesses and a Config; Run does the rest.
//
//  1. Write a Harness: a harness.Adapter for one agent kind. Its
//     Declaration names the kind and decides every capability
//     (harness.Supports); its NewExecutor prepares an Executor for one
//     Session. The Executor's Run streams one Turn's events through Emit
//     and returns the final wire.Done; Close releases it. Core requires
//     the capabilities harness.EveryTurn lists for every Turn, steering
//     among them, so an Executor also implements harness.Steerer; the
//     other optional operations are declared in the harness package next
//     to Executor, each with the capabilities it backs. harness.Inbox is
//     a ready Steerer for a Turn that takes steered input as more input.
//  2. Register it: list it in Config.Harnesses, or register it in a
//     harness.Registry (Config.Registry); either refuses a declaration
//     with an undecided field.
//  3. Configure: Config names Core (CoreURL), this device (DeviceID) and
//     its credential, issued by Core for the device: Credential
//     (NewCredential wraps the secret; it never prints) or
//     CredentialFile (ReadCredentialFile). Optional fields choose the logger,
//     the HTTP client every connection to Core goes through (a custom
//     dialer, proxy or TLS setting goes in its Transport), the version
//     reported to Core, the Environments (workspaces) served and the
//     limits on concurrent and idle Executors.
//  4. Run: Run connects, reconnects after transient failures with a
//     jittered backoff, and returns when its context ends (once every
//     Executor it owns closed), when Core shuts the device down, or with
//     a *Permanent error when Core refuses in a way only an operator can
//     fix (a revoked credential, a wrong URL, an incompatible version).
//
// examples/embed-runtime is a complete Runtime built this way, with its
// own Harness, in one short file.
//
// # What the daemon does for you
//
// Each physical connection starts with bootstrap and a WebSocket upgrade,
// gets a fresh protocol driver and sends a heartbeat declaring every
// registered kind; nothing is replayed across connections
// (daemon-protocol.txt:19, :158). Admission, preparation, the Turn's
// lifecycle, active-input and answer receipts, cancellation, workspace
// transfers and shutdown follow the generated state machines; the daemon
// checks each request against the Turn's declaration before it calls a
// Harness, so an Executor is only asked for what it declared.
package daemon
