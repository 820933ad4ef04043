package cliflag

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// ParseBytes reads a size: a number of bytes, or with KiB, MiB, GiB (or
// KB, MB, GB, taken as the same powers of two). It must be positive.
func ParseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/mult {
		return 0, errors.New("want a positive size such as 512MiB or 2GiB")
	}
	return n * mult, nil
}

// Bytes is a flag setting *p to a size (ParseBytes). Like a flag.Func, it
// shows no default of its own: its usage says it.
func Bytes(p *int64) flag.Value { return bytesValue{p} }

type bytesValue struct{ p *int64 }

func (bytesValue) String() string { return "" }

func (v bytesValue) Set(s string) error {
	n, err := ParseBytes(s)
	if err != nil {
		return err
	}
	*v.p = n
	return nil
}

// List is a flag adding its comma-separated values, trimmed and not
// empty, to *dst, each time it is given.
func List(dst *[]string) flag.Value { return listValue{dst} }

type listValue struct{ dst *[]string }

func (listValue) String() string { return "" }

func (v listValue) Set(s string) error {
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			*v.dst = append(*v.dst, x)
		}
	}
	return nil
}

// OptionalValue lets the flag NAME be given without a value: a bare
// --NAME or -NAME last in args, or followed by another flag (an argument
// beginning with "-"), gets an empty value after it. Define the flag
// with a Value (flag.Func) taking "" as "given, no value". The other
// arguments are returned as they are.
func OptionalValue(args []string, name string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		out = append(out, a)
		if a == "--"+name || a == "-"+name {
			if i+1 >= len(args) || strings.HasPrefix(args[i+1], "-") {
				out = append(out, "")
			}
		}
	}
	return out
}

// FromEnv sets every flag of fs not given on the command line from the
// environment variable prefix + its name (upper case, dashes as
// underscores: SENTINEL_TOP_MAX_MEMORY for --max-memory). A value the
// flag refuses is an error naming the variable and what the flag takes.
func FromEnv(fs *flag.FlagSet, prefix string) error {
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	var err error
	fs.VisitAll(func(fl *flag.Flag) {
		if given[fl.Name] || err != nil {
			return
		}
		key := prefix + strings.ToUpper(strings.ReplaceAll(fl.Name, "-", "_"))
		if v, ok := os.LookupEnv(key); ok {
			if e := fs.Set(fl.Name, v); e != nil {
				err = fmt.Errorf("%s=%q: %w", key, v, e)
				if want := valueFormat(fl); want != "" {
					err = fmt.Errorf("%s=%q: %w; want %s, as --%s takes", key, v, e, want, fl.Name)
				}
			}
		}
	})
	return err
}

// valueFormat says what a flag's value looks like, for an error message
// ("" when its own error says so).
func valueFormat(fl *flag.Flag) string {
	switch fmt.Sprintf("%T", fl.Value) {
	case "*flag.durationValue", "cliflag.durationValue":
		return "a duration such as 90s, 5m or 1h30m"
	case "*flag.intValue", "*flag.int64Value", "*flag.uintValue", "*flag.uint64Value":
		return "a whole number"
	case "*flag.float64Value":
		return "a number"
	case "*flag.boolValue":
		return "true or false"
	}
	return "" // a flag of its own parsing says what it wants itself
}
