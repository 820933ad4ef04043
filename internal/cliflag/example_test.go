package cliflag_test

import (
	"flag"
	"fmt"
	"os"

	"github.com/sentinel-top/sentinel-top/internal/cliflag"
)

func Example() {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var budget int64 = 512 << 20
	var hosts []string
	fs.Var(cliflag.Bytes(&budget), "max-memory", "most memory (default 512MiB)")
	fs.Var(cliflag.List(&hosts), "allow-host", "names clients use; repeat or separate with commas")
	os.Setenv("EXAMPLE_MAX_MEMORY", "2GiB")
	defer os.Unsetenv("EXAMPLE_MAX_MEMORY")
	if err := fs.Parse([]string{"--allow-host", "collector-a,collector-b"}); err != nil {
		fmt.Println(err)
		return
	}
	if err := cliflag.FromEnv(fs, "EXAMPLE_"); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(budget>>20, "MiB;", hosts)
	// Output: 2048 MiB; [collector-a collector-b]
}
