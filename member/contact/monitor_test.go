package contact_test

import (
	"errors"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/fleetset/fleetset/member/contact"
)

// TestMonitor: contact counts from when the successful attempt was sent;
// the member is lost only past the timeout and after an attempt of its own
// failed; a restored record keeps the age it had.
func TestMonitor(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m := contact.NewMonitor(clk, 15*time.Second)
	if s := m.Status(); s.Known || s.InContact || s.Lost {
		t.Errorf("new monitor: %+v, want unknown, not in contact, not lost (no attempt yet)", s)
	}
	sent := clk.Now()
	clk.Step(2 * time.Second) // the answer takes 2 s
	m.Attempt(sent, nil)
	if s := m.Status(); !s.InContact || s.SinceContact != 2*time.Second {
		t.Errorf("after a success sent 2 s ago: %+v", s)
	}
	clk.Step(13 * time.Second)
	if s := m.Status(); s.InContact || s.Lost {
		t.Errorf("15 s after the send, no attempt failed: %+v, want neither in contact nor lost", s)
	}
	m.Attempt(clk.Now(), errors.New("refused"))
	if s := m.Status(); !s.Lost {
		t.Errorf("after a failure past the timeout: %+v, want lost", s)
	}
	old := clk.Now()
	clk.Step(time.Second)
	m.Attempt(old, nil) // a slow success sent a second ago
	if s := m.Status(); !s.InContact || s.Lost || s.SinceContact != time.Second {
		t.Errorf("after a late success: %+v", s)
	}

	// A restarted process restores its record: 40 s old is lost at the
	// first failure, not 15 s after the restart.
	r := contact.NewMonitor(clk, 15*time.Second)
	r.Restore(40*time.Second, -1)
	r.Attempt(clk.Now(), errors.New("refused"))
	if s := r.Status(); !s.Lost || s.SinceContact != 40*time.Second {
		t.Errorf("restored 40 s record after a failure: %+v", s)
	}
	r.Restore(100*time.Second, -1) // an older record never moves contact back
	if s := r.Status(); s.SinceContact != 40*time.Second {
		t.Errorf("older restore moved contact: %+v", s)
	}
}

// TestMonitorNoPeers: NoPeers is what the last successful heartbeat
// reported (0 peers), kept through a failure and a restart, and cleared by a
// later success that reports peers or none at all.
func TestMonitorNoPeers(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m := contact.NewMonitor(clk, 15*time.Second)
	m.AttemptReporting(clk.Now(), nil, 0)
	if s := m.Status(); !s.NoPeers {
		t.Errorf("after a beat reporting 0 peers: %+v, want NoPeers", s)
	}
	clk.Step(time.Second)
	m.AttemptReporting(clk.Now(), errors.New("refused"), 2) // a failed beat changes nothing
	if s := m.Status(); !s.NoPeers {
		t.Errorf("after a failed beat reporting 2 peers: %+v, want NoPeers still", s)
	}
	m.AttemptReporting(clk.Now(), nil, 2)
	if s := m.Status(); s.NoPeers {
		t.Errorf("after a beat reporting 2 peers: %+v, want peers", s)
	}
	m.AttemptReporting(clk.Now().Add(time.Millisecond), nil, -1)
	if s := m.Status(); s.NoPeers {
		t.Errorf("after a beat reporting no count: %+v, want not NoPeers (unknown fences as before)", s)
	}
	r := contact.NewMonitor(clk, 15*time.Second)
	if s := r.Status(); s.NoPeers {
		t.Errorf("new monitor: %+v, want not NoPeers", s)
	}
	r.Restore(40*time.Second, 0)
	if s := r.Status(); !s.NoPeers {
		t.Errorf("restored a record of 0 peers: %+v, want NoPeers", s)
	}
}

// TestMonitorReturned: the return is the first success of the process, or
// the first after a whole timeout without one; successes within the
// timeout keep it, failures never move it.
func TestMonitorReturned(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m := contact.NewMonitor(clk, 9*time.Second)
	m.Restore(time.Minute, 2) // a restart: the old contact is no return
	if !m.Returned().IsZero() {
		t.Fatalf("Returned after a restore = %s, want zero", m.Returned())
	}
	first := clk.Now()
	m.Attempt(first, nil)
	for range 3 {
		clk.Step(3 * time.Second)
		m.Attempt(clk.Now(), nil)
	}
	if !m.Returned().Equal(first) {
		t.Errorf("Returned = %s, want the first success %s", m.Returned(), first)
	}
	for range 4 {
		clk.Step(3 * time.Second)
		m.Attempt(clk.Now(), errors.New("cut"))
	}
	clk.Step(3 * time.Second)
	back := clk.Now()
	m.Attempt(back, nil)
	if !m.Returned().Equal(back) {
		t.Errorf("Returned = %s, want the first success after 15 s without one %s", m.Returned(), back)
	}
}
