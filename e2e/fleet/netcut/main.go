// Command netcut is the local fleet's cuttable link between a member and the
// hub (package internal/testing/netcut): it forwards -listen to -target, and
// SIGUSR1 cuts it (every connection closed, new ones refused), SIGHUP
// blackholes it (packets dropped silently both ways, as an iptables DROP:
// connections left open and hanging, new ones accepted and never answered),
// SIGUSR2 heals it. e2e/fleet/agent.sh cut|blackhole|heal CLUSTER sends the
// signals; the member's processes keep running, as behind a broken link. It
// writes "cut", "blackholed" or "healed" to -state after each change, and
// exits on SIGTERM or SIGINT.
package main

import (
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/fleetset/fleetset/internal/testing/netcut"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "host:port to listen on (loopback)")
	target := flag.String("target", "", "host:port to forward to")
	state := flag.String("state", "", "file written with the link's state (cut, blackholed or healed) after each change")
	flag.Parse()
	if *target == "" {
		log.Fatal("netcut: -target is required")
	}
	p, err := netcut.Start(*listen, *target)
	if err != nil {
		log.Fatal(err)
	}
	write := func(s string) {
		log.Printf("netcut %s → %s: %s", p.Addr(), *target, s)
		if *state != "" {
			if err := os.WriteFile(*state, []byte(s+"\n"), 0o644); err != nil {
				log.Print(err)
			}
		}
	}
	write("healed")
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGUSR1, syscall.SIGHUP, syscall.SIGUSR2, syscall.SIGTERM, syscall.SIGINT)
	for s := range sig {
		switch s {
		case syscall.SIGUSR1:
			p.Cut()
			write("cut")
		case syscall.SIGHUP:
			p.Blackhole()
			if p.IsBlackholed() {
				write("blackholed")
			}
		case syscall.SIGUSR2:
			if err := p.Heal(); err != nil {
				log.Print(err)
				continue
			}
			write("healed")
		default:
			p.Close()
			return
		}
	}
}
