package names

import (
	"errors"
	"testing"
)

func TestCheck(t *testing.T) {
	if err := First("shares", []string{"a", "b"}); err != nil {
		t.Errorf("First(a, b) = %v, want nil", err)
	}
	got := errors.Join(Check("spec.domains", []string{"a", "", "a", "b", "b"})...).Error()
	want := "spec.domains[1].name: must not be empty\nspec.domains[2].name: duplicate name \"a\"\nspec.domains[4].name: duplicate name \"b\""
	if got != want {
		t.Errorf("Check = %q, want %q", got, want)
	}
}
