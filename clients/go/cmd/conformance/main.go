// Command conformance runs the shared conformance scenarios (tests/conformance/*.json, described in
// tests/conformance/README.md) against an askuser server through the Go client, and prints
// "N passed, N failed" as its last line. It exits 1 when any scenario failed. Calls carry
// ASKUSER_API_KEY when it is set; steps with "as": "other" carry ASKUSER_OTHER_API_KEY.
//
//	conformance [-scenarios DIR] [-timeout D] HOST:PORT
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/askuser-dev/askuser/clients/go/askuser"
)

func main() {
	dir := flag.String("scenarios", "tests/conformance", "folder of the scenario *.json files")
	timeout := flag.Duration("timeout", 30*time.Second, "time limit of one scenario")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: %s [flags] HOST:PORT\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if !runAll(flag.Arg(0), *dir, *timeout) {
		os.Exit(1)
	}
}

// runAll runs every scenario of dir in name order and reports whether all passed.
func runAll(addr, dir string, timeout time.Duration) bool {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(paths) == 0 {
		// A run that checks nothing must not look like a pass.
		fmt.Fprintf(os.Stderr, "conformance: no scenarios in %s\n", dir)
		return false
	}
	var c clients
	if c.own, err = dialWithKey(addr, os.Getenv("ASKUSER_API_KEY")); err != nil {
		fmt.Fprintf(os.Stderr, "conformance: %v\n", err)
		return false
	}
	defer c.own.Close()
	if key := os.Getenv("ASKUSER_OTHER_API_KEY"); key != "" {
		if c.other, err = dialWithKey(addr, key); err != nil {
			fmt.Fprintf(os.Stderr, "conformance: %v\n", err)
			return false
		}
		defer c.other.Close()
	}

	passed, failed := 0, 0
	for _, path := range paths {
		name, err := runFile(c, path, timeout)
		if err != nil {
			failed++
			fmt.Printf("FAIL %s: %v\n", name, err)
		} else {
			passed++
			fmt.Printf("ok   %s\n", name)
		}
	}
	fmt.Printf("%d passed, %d failed\n", passed, failed)
	return failed == 0
}

// dialWithKey connects to addr; every call carries key, unless it is empty.
func dialWithKey(addr, key string) (*askuser.Client, error) {
	if key == "" {
		return askuser.Dial(addr)
	}
	return askuser.Dial(addr, askuser.WithAPIKey(key))
}

// runFile runs the scenario of one file and returns its name (the file's, when it has none).
func runFile(c clients, path string, timeout time.Duration) (string, error) {
	name := filepath.Base(path)
	sc, err := loadScenario(path)
	if err != nil {
		return name, err
	}
	if sc.Name != "" {
		name = sc.Name
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return name, sc.run(ctx, c)
}
