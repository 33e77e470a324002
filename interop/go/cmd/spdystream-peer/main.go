// Command spdystream-peer is a SPDY/3.1 peer built on github.com/moby/spdystream
// (the stream multiplexer Kubernetes and Docker use) for speedy's interop tests.
// It has the same command-line contract as the node-spdy peers
// interop/server.js and interop/client.js:
//
//	spdystream-peer server [--host 127.0.0.1] [--port 0] [--plain] --root DIR
//	                [--reset-path PATH]... [--push PAGE=P1,P2]... [--verbose]
//	spdystream-peer client URL... [--protocol spdy/3.1] [--concurrency N]
//	                [--post FILE] [--expect-error URL]... [--timeout SECONDS]
//	                [--push-mode reply|reset] [--verbose]
//
// Plain TCP only; spdystream speaks SPDY/3 framing (no flow control of its own),
// which is what Kubernetes calls SPDY/3.1. See README.md for what spdystream
// does on the wire.
package main

import (
	"fmt"
	"os"
)

const usageText = `usage:
  spdystream-peer server [--host H] [--port N] [--plain] --root DIR [--reset-path PATH]...
                         [--push PAGE=P1,P2]... [--protocol spdy/3.1] [--verbose]
  spdystream-peer client URL... [--protocol spdy/3.1] [--concurrency N] [--post FILE]
                         [--expect-error URL]... [--timeout SECONDS] [--push-mode reply|reset]
                         [--verbose]
`

func usage(role, msg string) {
	if msg != "" {
		name := "spdystream-peer"
		if role != "" {
			name += " " + role
		}
		fmt.Fprintf(os.Stderr, "%s: %s\n", name, msg)
	}
	fmt.Fprint(os.Stderr, usageText)
	os.Exit(2)
}

func main() {
	if len(os.Args) < 2 {
		usage("", "first argument must be server or client")
	}
	switch os.Args[1] {
	case "server":
		os.Exit(runServer(os.Args[2:]))
	case "client":
		os.Exit(runClient(os.Args[2:]))
	case "-h", "--help", "help":
		usage("", "")
	default:
		usage("", "unknown role "+os.Args[1]+" (want server or client)")
	}
}

// argReader walks a node-style argument list (flags and positionals mixed).
type argReader struct {
	role string
	args []string
	i    int
}

func (a *argReader) more() bool { return a.i < len(a.args) }

func (a *argReader) next() string {
	s := a.args[a.i]
	a.i++
	return s
}

func (a *argReader) value(flag string) string {
	if a.i >= len(a.args) {
		usage(a.role, flag+" needs a value")
	}
	return a.next()
}
