// Command echo is the e2e suite's TCP echo server and client, a static
// binary on scratch (image fleetset-e2e-echo:dev, `make kind-echo-image`),
// for checks of the network between member clusters:
//
//	echo -listen :7777
//	    serves TCP: reads one line from each connection and answers one
//	    JSON line {"message", "client" (the address the server saw),
//	    "server" (its hostname), "serverAddr", "env" (its environment
//	    variables named FLEETSET_*, as the kubelet set them when it
//	    started the container: the locality from the downward API)}.
//	echo -connect HOST:PORT[,HOST:PORT...] -message X [-timeout 5s] [-retry 0s]
//	    connects to each target in turn (HOST may be a DNS name, such as a
//	    fleet DNS name <pod>.<service>.<namespace>.svc.cluster.local),
//	    sends X and prints one JSON line per target {"target", "remote"
//	    (the address it connected to), "local" (its own address), "reply",
//	    "error"}. It exits 1 when a target fails, answers another message,
//	    or saw another client address than the connection's own (address
//	    translation on the way). -retry keeps retrying a failing target for
//	    that long (a name that is not yet resolvable, a server starting).
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

// Reply is the server's answer.
type Reply struct {
	Message    string `json:"message"`
	Client     string `json:"client"`
	Server     string `json:"server"`
	ServerAddr string `json:"serverAddr"`
	// Env holds the server's FLEETSET_* environment variables.
	Env map[string]string `json:"env,omitempty"`
}

// Result is the client's line for one target.
type Result struct {
	Target string `json:"target"`
	Remote string `json:"remote,omitempty"`
	Local  string `json:"local,omitempty"`
	Reply  *Reply `json:"reply,omitempty"`
	Error  string `json:"error,omitempty"`
}

func main() {
	listen := flag.String("listen", "", "serve on this address (e.g. :7777)")
	connect := flag.String("connect", "", "comma-separated HOST:PORT targets to send -message to")
	message := flag.String("message", "hello", "the message the client sends")
	timeout := flag.Duration("timeout", 5*time.Second, "bound of one connection attempt (dial, send, answer)")
	retry := flag.Duration("retry", 0, "keep retrying a failing target for this long")
	flag.Parse()
	switch {
	case *listen != "" && *connect == "":
		if err := serve(*listen); err != nil {
			fmt.Fprintln(os.Stderr, "echo:", err)
			os.Exit(1)
		}
	case *connect != "" && *listen == "":
		ok := true
		enc := json.NewEncoder(os.Stdout)
		for _, t := range strings.Split(*connect, ",") {
			r := try(t, *message, *timeout, *retry)
			ok = ok && r.Error == ""
			_ = enc.Encode(r)
		}
		if !ok {
			os.Exit(1)
		}
	default:
		fmt.Fprintln(os.Stderr, "echo: give one of -listen ADDR or -connect HOST:PORT[,...]")
		os.Exit(2)
	}
}

func serve(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "FLEETSET_") {
			env[k] = v
		}
	}
	fmt.Printf("%s echo: listening on %s, env %v\n", time.Now().UTC().Format(time.RFC3339), l.Addr(), env)
	for {
		c, err := l.Accept()
		if err != nil {
			return err
		}
		go func(c net.Conn) {
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			line, err := bufio.NewReader(c).ReadString('\n')
			if err != nil && line == "" {
				return
			}
			r := Reply{Message: strings.TrimRight(line, "\r\n"), Client: c.RemoteAddr().String(), Server: host, ServerAddr: c.LocalAddr().String(), Env: env}
			b, _ := json.Marshal(r)
			_, _ = c.Write(append(b, '\n'))
			fmt.Printf("%s echo: %q from %s\n", time.Now().UTC().Format(time.RFC3339), r.Message, r.Client)
		}(c)
	}
}

// try sends message to target until it answers well or retry has passed.
func try(target, message string, timeout, retry time.Duration) Result {
	deadline := time.Now().Add(retry)
	for {
		r := once(target, message, timeout)
		if r.Error == "" || time.Now().After(deadline) {
			return r
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func once(target, message string, timeout time.Duration) Result {
	r := Result{Target: target}
	c, err := net.DialTimeout("tcp", target, timeout)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	defer c.Close()
	r.Remote, r.Local = c.RemoteAddr().String(), c.LocalAddr().String()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := fmt.Fprintf(c, "%s\n", message); err != nil {
		r.Error = err.Error()
		return r
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		r.Error = err.Error()
		return r
	}
	var rep Reply
	if err := json.Unmarshal([]byte(line), &rep); err != nil {
		r.Error = fmt.Sprintf("answer %q: %v", line, err)
		return r
	}
	r.Reply = &rep
	r.Error = check(r, message)
	return r
}

// check: the answer echoes message and names this connection's own
// address as the client.
func check(r Result, message string) string {
	var errs []error
	if r.Reply.Message != message {
		errs = append(errs, fmt.Errorf("echoed %q, sent %q", r.Reply.Message, message))
	}
	if r.Reply.Client != r.Local {
		errs = append(errs, fmt.Errorf("server saw client %s, the connection's own address is %s (address translation on the way)", r.Reply.Client, r.Local))
	}
	if err := errors.Join(errs...); err != nil {
		return err.Error()
	}
	return ""
}
