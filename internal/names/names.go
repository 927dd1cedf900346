// Package names checks the names that key a list (subsets, shares, domains):
// the one home of the "non-empty and unique" rule the hub's division, its
// ordinal blocks and the scheduler's placements share.
package names

import "fmt"

// Check returns, for each name in order, nil or the error that it is empty
// or repeats an earlier one, naming its element as field[i].name (field is
// the list's path, e.g. "spec.domains"). The result has len(names) entries.
func Check(field string, names []string) []error {
	errs := make([]error, len(names))
	seen := make(map[string]bool, len(names))
	for i, n := range names {
		switch {
		case n == "":
			errs[i] = fmt.Errorf("%s[%d].name: must not be empty", field, i)
		case seen[n]:
			errs[i] = fmt.Errorf("%s[%d].name: duplicate name %q", field, i, n)
		}
		seen[n] = true
	}
	return errs
}

// First returns the first non-nil error of Check, or nil.
func First(field string, names []string) error {
	for _, err := range Check(field, names) {
		if err != nil {
			return err
		}
	}
	return nil
}
