package cmd

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// inputIsTerminal reports whether r is a terminal (as isTerminal does for
// output).
func inputIsTerminal(r io.Reader) bool {
	w, ok := r.(io.Writer)
	return ok && isTerminal(w)
}

// confirm lets a destructive verb go on: at once with yes (--yes); on a
// terminal, once the user types want after the question; otherwise it
// returns an error saying nothing changed. action names what would be done
// ("restart every instance of fleetset mydb").
func (o *VerbOptions) confirm(yes bool, action, want string) error {
	if yes {
		return nil
	}
	terminal := inputIsTerminal
	if o.IsTerminal != nil {
		terminal = o.IsTerminal
	}
	if !terminal(o.In) {
		return fmt.Errorf("refusing to %s without --yes (no terminal to confirm on): nothing changed", action)
	}
	fmt.Fprintf(o.Out, "Type %q to %s (anything else cancels): ", want, action)
	line, _ := bufio.NewReader(o.In).ReadString('\n')
	if strings.TrimSpace(line) != want {
		return fmt.Errorf("not confirmed: nothing changed (type %q, or pass --yes)", want)
	}
	return nil
}
