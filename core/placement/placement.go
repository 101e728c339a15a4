// Package placement is the one choice Core's scheduler leaves to its
// embedder: which of the devices that may run a Turn runs it.
//
// Everything that makes a device eligible stays Core's and is checked
// before and after a Policy is asked: the device belongs to the Turn's
// project, hosts its Environment's workspace when the Environment is
// local, declares the Session's agent kind available with every capability
// the Turn requires, and has admission room (daemon-protocol.txt:19, 33,
// 157). A Policy only orders those devices, or leaves some out, so no
// policy can place work where the protocol or tenancy forbids it.
package placement

import (
	"slices"
	"strings"
)

// Turn is the queued Turn being placed.
type Turn struct {
	ID            string
	SessionID     string
	Project       string
	AgentKind     string
	EnvironmentID string
}

// Device is one device Core found eligible for the Turn.
type Device struct {
	ID string
	// OwnerEpoch is the epoch of the device's current connection.
	OwnerEpoch uint64
	// Admissions counts the preparations and Runs admitted on the
	// connection now (at most 64).
	Admissions int
}

// Policy orders the eligible devices for a Turn. Core tries the IDs it
// returns in order and places the Turn on the first that still admits it;
// a device left out is not tried in this scheduling pass, and an empty
// answer leaves the Turn queued, waiting as device_busy. Order is called
// from the scheduler's goroutine and must not block.
type Policy interface {
	Order(t Turn, devices []Device) []string
}

// ByDeviceID tries devices in the order of their IDs: placement is
// deterministic, and a Session's Turns keep landing on the same device
// while it has room. It is Core's default.
type ByDeviceID struct{}

// Order implements Policy.
func (ByDeviceID) Order(_ Turn, devices []Device) []string {
	ids := make([]string, len(devices))
	for i, d := range devices {
		ids[i] = d.ID
	}
	slices.Sort(ids)
	return ids
}

// LeastLoaded tries the device with the fewest admissions first (ties by
// ID), spreading a project's Turns over its devices.
type LeastLoaded struct{}

// Order implements Policy.
func (LeastLoaded) Order(_ Turn, devices []Device) []string {
	ds := slices.Clone(devices)
	slices.SortFunc(ds, func(a, b Device) int {
		if a.Admissions != b.Admissions {
			return a.Admissions - b.Admissions
		}
		return strings.Compare(a.ID, b.ID)
	})
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.ID
	}
	return ids
}
