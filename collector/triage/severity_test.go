package triage

import (
	"errors"
	"testing"
)

// TestParseSeverity: the names a threshold may take read back as String
// writes them; info and anything else are refused, saying what is wanted.
func TestParseSeverity(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Severity
		err  string
	}{
		{in: "warning", want: Warning},
		{in: "critical", want: Critical},
		{in: Warning.String(), want: Warning},
		{in: Critical.String(), want: Critical},
		{in: "info", err: `"info": want warning or critical`},
		{in: "", err: `"": want warning or critical`},
		{in: "Critical", err: `"Critical": want warning or critical`},
		{in: "warn", err: `"warn": want warning or critical`},
		{in: " warning", err: `" warning": want warning or critical`},
	} {
		got, err := ParseSeverity(tc.in)
		if tc.err == "" {
			if err != nil || got != tc.want {
				t.Errorf("ParseSeverity(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
			continue
		}
		if err == nil || err.Error() != tc.err || !errors.Is(err, ErrSeverity) {
			t.Errorf("ParseSeverity(%q) = %v, %v; want the error %q", tc.in, got, err, tc.err)
		}
	}
}
