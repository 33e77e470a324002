// Command kube-peer speaks SPDY/3.1 the way Kubernetes does, with the real
// libraries: k8s.io/client-go (tools/remotecommand, tools/portforward,
// transport/spdy) on the client side and k8s.io/apimachinery
// (pkg/util/httpstream, httpstream/spdy) on the server side, all of them on
// top of github.com/moby/spdystream.
//
//	kube-peer exec --url http://127.0.0.1:PORT/exec[?exit=N] [--stdin FILE] [--tty=false]
//	kube-peer port-forward --url http://127.0.0.1:PORT/portforward --remote-port P --send FILE
//	kube-peer kubelet [--listen 127.0.0.1:0]
//
// See README.md for the output formats.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

const usageText = `usage:
  kube-peer exec --url http://HOST:PORT/exec[?exit=N] [--stdin FILE] [--tty=false]
                 [--command CMD] [--protocols V4,V3,...] [--timeout SECONDS] [--verbose]
  kube-peer port-forward --url http://HOST:PORT/portforward --remote-port P --send FILE
                 [--timeout SECONDS] [--verbose]
  kube-peer kubelet [--listen 127.0.0.1:0] [--verbose]
`

func usage(msg string) {
	if msg != "" {
		fmt.Fprintf(os.Stderr, "kube-peer: %s\n", msg)
	}
	fmt.Fprint(os.Stderr, usageText)
	os.Exit(2)
}

// newFlags makes a FlagSet whose errors print our usage and exit 2.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

func parseFlags(fs *flag.FlagSet, args []string) {
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			usage("")
		}
		usage(fs.Name() + ": " + err.Error())
	}
	if fs.NArg() > 0 {
		usage(fs.Name() + ": unexpected argument " + fs.Arg(0))
	}
}

func main() {
	if len(os.Args) < 2 {
		usage("a subcommand is required (exec, port-forward, kubelet)")
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case "exec":
		os.Exit(runExec(args))
	case "port-forward":
		os.Exit(runPortForward(args))
	case "kubelet":
		os.Exit(runKubelet(args))
	case "-h", "--help", "help":
		usage("")
	default:
		usage("unknown subcommand " + os.Args[1])
	}
}
