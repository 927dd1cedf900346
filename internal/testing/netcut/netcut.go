// Package netcut is a loopback TCP proxy that a test can cut and heal, as a
// broken network link would: Cut closes every connection through it and
// refuses new ones; Heal accepts again on the same address. The local fleet
// routes each member's traffic to the hub through one (e2e/fleet/netcut), and
// integration tests route the member component's hub client through one.
package netcut

import (
	"errors"
	"fmt"
	"io"
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
}

// Start listens on listen (host:port; port 0 picks one) and forwards to
// target (host:port). The error is the listener's.
func Start(listen, target string) (*Proxy, error) {
	p := &Proxy{target: target, conns: map[net.Conn]struct{}{}}
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
// connections reset and new ones refused until Heal.
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
}

// Heal listens again on the same address. The error is the listener's (the
// port taken meanwhile).
func (p *Proxy) Heal() error {
	p.mu.Lock()
	defer p.mu.Unlock()
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

// forward pipes in to a new connection to the target, both tracked so that
// Cut closes them.
func (p *Proxy) forward(in net.Conn) {
	out, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = in.Close()
		return
	}
	p.mu.Lock()
	if p.cut {
		p.mu.Unlock()
		_ = in.Close()
		_ = out.Close()
		return
	}
	p.conns[in], p.conns[out] = struct{}{}, struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		_ = dst.Close()
		_ = src.Close()
		done <- struct{}{}
	}
	go pipe(out, in)
	go pipe(in, out)
	<-done
	<-done
	p.mu.Lock()
	delete(p.conns, in)
	delete(p.conns, out)
	p.mu.Unlock()
}
