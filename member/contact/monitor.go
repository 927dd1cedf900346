// Package contact measures the member's contact with the hub: the Heartbeat
// renews the member's own Lease on the hub and reports each attempt to a
// Monitor, which keeps, on the local monotonic clock, when the member last
// reached the hub.
package contact

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Monitor records the member's attempts to reach the hub and answers how long
// ago the last successful one was sent. All times come from its clock, whose
// readings carry Go's monotonic reading: a step of the wall clock (NTP, an
// operator) changes nothing, and no timestamp written by another machine is
// ever compared with it (client-go leader election's observedTime rule).
// Safe for concurrent use.
type Monitor struct {
	clock   clock.PassiveClock
	timeout time.Duration

	mu sync.Mutex
	// last is when the last successful attempt was sent; its zero value is
	// replaced by Restore or the first success.
	last time.Time
	// known is true once last holds a real or restored contact.
	known bool
	// failed is true when the latest finished attempt failed.
	failed bool
	// attempted is true once an attempt of this process finished.
	attempted bool
	// started is when the Monitor was built.
	started time.Time
	// peers is how many peers the member reported in the heartbeat of the
	// last contact; -1: unknown.
	peers int
	// returned is when the first successful attempt of the current
	// contact was sent: the first of this process, or the first after a
	// timeout without one.
	returned time.Time
}

// NewMonitor returns a Monitor on clk that considers the hub lost once no
// attempt sent in the last timeout succeeded.
func NewMonitor(clk clock.PassiveClock, timeout time.Duration) *Monitor {
	return &Monitor{clock: clk, timeout: timeout, started: clk.Now(), peers: -1}
}

// Timeout is the heartbeat timeout the Monitor was built with.
func (m *Monitor) Timeout() time.Duration { return m.timeout }

// Restore sets the last contact to age before now, for a process that
// restarts: the age comes from the member's own record (the local Lease the
// Agent keeps), so a member restarted while cut off does not start its
// timeout over. It never moves the last contact later than one already known.
func (m *Monitor) Restore(age time.Duration, peers int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	at := m.clock.Now().Add(-max(age, 0))
	if !m.known || at.After(m.last) {
		m.last, m.known, m.peers = at, true, peers
	}
}

// Attempt records an attempt to reach the hub that was sent at sent (a
// reading of the Monitor's clock taken before the request left) and ended
// with err. A success counts from sent, not from when the answer came: the
// hub may have seen the write as early as that, so the member's timeout
// never ends later than the hub's.
func (m *Monitor) Attempt(sent time.Time, err error) { m.AttemptReporting(sent, err, -1) }

// AttemptReporting is Attempt for a heartbeat that reported peers peers to
// the hub (-1: none reported); a success makes that the count of the last
// contact (Status.NoPeers when 0), the count the hub also holds.
func (m *Monitor) AttemptReporting(sent time.Time, err error, peers int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.attempted = true
	m.failed = err != nil
	if err == nil && (!m.known || !sent.Before(m.last)) {
		if !m.known || m.returned.IsZero() || sent.Sub(m.last) >= m.timeout {
			m.returned = sent
		}
		m.last, m.known, m.peers = sent, true, peers
	}
}

// Returned is when the first successful attempt of the member's current
// contact with the hub was sent (the renewTime that heartbeat wrote): the
// first success of this process, or the first after a whole timeout
// without one. Zero until a success. A fence record is lifted only on a
// hub acknowledgement of a heartbeat at or after it
// (v1alpha1.AnnotationMemberAck).
func (m *Monitor) Returned() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.returned
}

// Status is the Monitor's view at one instant.
type Status struct {
	// SinceContact is how long ago the last successful attempt was sent; when
	// the member never reached the hub (nor restored a record), the time
	// since the Monitor started plus the timeout: a member that never
	// reached the hub counts as lost once one attempt has failed.
	SinceContact time.Duration
	// Known is false when the member never reached the hub and restored no
	// record.
	Known bool
	// InContact is true while SinceContact is below the timeout.
	InContact bool
	// Lost is true when the member is not in contact and its own latest
	// attempt failed: its own observation that it cannot reach the hub.
	// Before the first attempt of this process ends, Lost is false.
	Lost bool
	// NoPeers is true when the member's last successful heartbeat reported
	// that it knew no peer (the hub holds the same count).
	NoPeers bool
}

// Status returns the view at the clock's now.
func (m *Monitor) Status() Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	var since time.Duration
	if m.known {
		since = now.Sub(m.last)
	} else {
		since = now.Sub(m.started) + m.timeout
	}
	in := since < m.timeout
	return Status{SinceContact: since, Known: m.known, InContact: in, Lost: !in && m.attempted && m.failed, NoPeers: m.known && m.peers == 0}
}
