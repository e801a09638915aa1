// Command tour walks through herald: typed fan-out, correlation and the
// Kubernetes adapter. Run it with:
//
//	go run ./examples/tour
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "tour:", err)
		os.Exit(1)
	}
}

func run(out io.Writer) error {
	fmt.Fprintln(out, "herald tour: under construction.")
	return nil
}
