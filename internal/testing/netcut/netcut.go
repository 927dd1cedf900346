// Package netcut is a loopback TCP proxy that a test can cut and heal, as a
// broken network link would: Cut closes every connection through it and
// refuses new ones; Blackhole drops every packet silently instead (as an
// iptables DROP rule does: connections stay open and hang, new ones are
// accepted but never answered); Heal restores the link on the same address.
// The local fleet routes each member's traffic to the hub through one
// (e2e/fleet/netcut), and integration tests route the member component's hub
// client through one.
package netcut

import (
	"errors"
	"fmt"
	"net"
	"sync"
)

// Proxy forwards every TCP connection accepted on its address to Target.
// Safe for concurrent use.
type Proxy struct {
	target string
	addr   string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
	cut   bool
	// open is closed while the link forwards; a blackhole replaces it with
	// an open channel that Heal closes.
	open chan struct{}
	hole bool
}

// Start listens on listen (host:port; port 0 picks one) and forwards to
// target (host:port). The error is the listener's.
func Start(listen, target string) (*Proxy, error) {
	p := &Proxy{target: target, conns: map[net.Conn]struct{}{}, open: make(chan struct{})}
	close(p.open)
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("netcut: listening on %s: %w", listen, err)
	}
	p.ln, p.addr = ln, ln.Addr().String()
	go p.serve(ln)
	return p, nil
}

// Addr is the proxy's listening address (host:port).
func (p *Proxy) Addr() string { return p.addr }

// Cut closes the listener and every open connection: clients see their
// connections reset and new ones refused until Heal. A blackhole in place
// becomes a cut.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return
	}
	p.cut = true
	_ = p.ln.Close()
	for c := range p.conns {
		_ = c.Close()
	}
	p.conns = map[net.Conn]struct{}{}
	p.openLocked()
}

// Blackhole drops the link silently, as iptables DROP does both ways: every
// open connection stays open but nothing goes through it in either
// direction, and new connections are accepted but never reach the target
// (nor get an answer) until Heal. Bytes sent meanwhile are held and
// delivered on Heal, as TCP retransmits them. A cut proxy stays cut.
func (p *Proxy) Blackhole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut || p.hole {
		return
	}
	p.hole, p.open = true, make(chan struct{})
}

// IsBlackholed reports whether the proxy drops the link silently.
func (p *Proxy) IsBlackholed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hole
}

// openLocked ends a blackhole: held bytes and connections go through.
func (p *Proxy) openLocked() {
	if p.hole {
		p.hole = false
		close(p.open)
	}
}

// gate returns a channel closed when the link forwards.
func (p *Proxy) gate() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.open
}

// Heal ends a cut or a blackhole: after a cut it listens again on the same
// address, after a blackhole the held bytes and connections go through.
// The error is the listener's (the port taken meanwhile).
func (p *Proxy) Heal() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.openLocked()
	if !p.cut {
		return nil
	}
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return fmt.Errorf("netcut: listening again on %s: %w", p.addr, err)
	}
	p.ln, p.cut = ln, false
	go p.serve(ln)
	return nil
}

// IsCut reports whether the proxy is cut.
func (p *Proxy) IsCut() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut
}

// Close cuts the proxy for good.
func (p *Proxy) Close() { p.Cut() }

func (p *Proxy) serve(ln net.Listener) {
	for {
		in, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		go p.forward(in)
	}
}

// track adds conns to the set Cut closes; false (and conns closed) when the
// proxy is cut.
func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *Proxy) untrack(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		delete(p.conns, c)
	}
}

// forward pipes in to a new connection to the target, both tracked so that
// Cut closes them. During a blackhole the connection is held, unanswered,
// until Heal (or Cut).
func (p *Proxy) forward(in net.Conn) {
	if !p.track(in) {
		return
	}
	<-p.gate()
	out, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = in.Close()
		p.untrack(in)
		return
	}
	if !p.track(out) {
		_ = in.Close()
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				<-p.gate() // a blackhole holds the bytes read
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		_ = dst.Close()
		_ = src.Close()
		done <- struct{}{}
	}
	go pipe(out, in)
	go pipe(in, out)
	<-done
	<-done
	p.untrack(in, out)
}
