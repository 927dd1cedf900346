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
	r.Restore(40 * time.Second)
	r.Attempt(clk.Now(), errors.New("refused"))
	if s := r.Status(); !s.Lost || s.SinceContact != 40*time.Second {
		t.Errorf("restored 40 s record after a failure: %+v", s)
	}
	r.Restore(100 * time.Second) // an older record never moves contact back
	if s := r.Status(); s.SinceContact != 40*time.Second {
		t.Errorf("older restore moved contact: %+v", s)
	}
}
