// Command dockerfile-lint checks a Dockerfile with BuildKit's own parser and linter (the rules of
// `docker build --check` that are decided while parsing instructions), without a Docker daemon. It prints
// one line per finding ("<line>: <rule>: <message>") and exits 1 if there is any, 2 if the file does not
// parse.
package main

import (
	"fmt"
	"os"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: dockerfile-lint <Dockerfile>")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer f.Close()
	result, err := parser.Parse(f)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", os.Args[1], err)
		os.Exit(2)
	}
	findings := 0
	report := func(line int, rule, message string) {
		findings++
		fmt.Printf("%d: %s: %s\n", line, rule, message)
	}
	for _, w := range result.Warnings {
		line := 0
		if w.Location != nil {
			line = w.Location.Start.Line
		}
		report(line, "Parser", w.Short)
	}
	// Every rule, the experimental ones included.
	lint := linter.New(&linter.Config{
		ExperimentalAll: true,
		Warn: func(rule, _ /* description */, _ /* url */, message string, location []parser.Range) {
			line := 0
			if len(location) > 0 {
				line = location[0].Start.Line
			}
			report(line, rule, message)
		},
	})
	stages, _, err := instructions.Parse(result.AST, lint)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", os.Args[1], err)
		os.Exit(2)
	}
	if len(stages) == 0 {
		fmt.Fprintf(os.Stderr, "%s: no build stage\n", os.Args[1])
		os.Exit(2)
	}
	if findings > 0 {
		os.Exit(1)
	}
	fmt.Printf("%s: %d stages, no findings\n", os.Args[1], len(stages))
}
