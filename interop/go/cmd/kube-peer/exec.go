package main

// kube-peer exec: client-go's SPDY remotecommand executor (what `kubectl exec`
// uses when it falls back from WebSockets), streaming a file to stdin.
//
// Output, one JSON line:
//   {"stdout_bytes":N,"stdout_sha256":"..","stderr":"..","exit_code":N,"error":".."}
// Exit 0 when the call completed (whatever the remote exit code), 1 on a
// transport or protocol error, 2 on bad arguments.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	utilexec "k8s.io/utils/exec"
)

type execResult struct {
	StdoutBytes  int64  `json:"stdout_bytes"`
	StdoutSHA256 string `json:"stdout_sha256"`
	Stderr       string `json:"stderr"`
	ExitCode     int    `json:"exit_code"`
	Error        string `json:"error"`
}

// hashCounter is an io.Writer that only counts and hashes.
type hashCounter struct {
	n int64
	h interface {
		io.Writer
		Sum([]byte) []byte
	}
}

func newHashCounter() *hashCounter { return &hashCounter{h: sha256.New()} }

func (w *hashCounter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return w.h.Write(p)
}

func (w *hashCounter) sum() string { return hex.EncodeToString(w.h.Sum(nil)) }

func runExec(args []string) int {
	fs := newFlags("exec")
	rawURL := fs.String("url", "", "exec endpoint, e.g. http://127.0.0.1:PORT/exec")
	stdinFile := fs.String("stdin", "", "file streamed to the remote stdin")
	tty := fs.Bool("tty", false, "ask for a TTY (no separate stderr)")
	command := fs.String("command", "cat", "command query parameter (the kubelet peer never runs it)")
	protocols := fs.String("protocols", "", "comma-separated X-Stream-Protocol-Version list to offer (default: client-go's, v5 down to channel.k8s.io)")
	timeout := fs.Float64("timeout", 60, "seconds for the whole call")
	verbose := fs.Bool("verbose", false, "log to stderr")
	fs.BoolVar(verbose, "v", false, "log to stderr")
	parseFlags(fs, args)
	if *rawURL == "" {
		usage("exec: --url is required")
	}
	u, err := url.Parse(*rawURL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		usage("exec: bad --url " + *rawURL)
	}
	var stdin io.Reader
	if *stdinFile != "" {
		f, err := os.Open(*stdinFile)
		if err != nil {
			usage("exec: cannot open --stdin file: " + err.Error())
		}
		defer f.Close()
		stdin = f
	}
	setupKlog(*verbose)

	// Query as the API server builds it for pods/NAME/exec; parameters
	// already in --url (e.g. exit=3 for the kubelet peer) are kept.
	q := u.Query()
	q.Set("command", *command)
	q.Set("stdout", "true")
	q.Set("stderr", "true")
	if stdin != nil {
		q.Set("stdin", "true")
	} else {
		q.Del("stdin")
	}
	if *tty {
		q.Set("tty", "true")
	} else {
		q.Del("tty")
	}
	u.RawQuery = q.Encode()

	config := &rest.Config{Host: u.Scheme + "://" + u.Host}
	var exec remotecommand.Executor
	if *protocols == "" {
		exec, err = remotecommand.NewSPDYExecutor(config, "POST", u)
	} else {
		// Same executor, offering only the given sub-protocols.
		var transport http.RoundTripper
		var upgrader spdy.Upgrader
		transport, upgrader, err = spdy.RoundTripperFor(config)
		if err == nil {
			exec, err = remotecommand.NewSPDYExecutorForProtocols(transport, upgrader, "POST", u, strings.Split(*protocols, ",")...)
		}
	}
	if err != nil {
		return printExec(execResult{ExitCode: -1, Error: "NewSPDYExecutor: " + err.Error()}, 1)
	}
	stdout := newHashCounter()
	var stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(*timeout*float64(time.Second)))
	defer cancel()
	if *verbose {
		fmt.Fprintf(os.Stderr, "[kube-peer exec] POST %s (SPDY executor, tty=%v)\n", u, *tty)
	}
	err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{
		Stdin:  stdin,
		Stdout: stdout,
		Stderr: &stderr,
		Tty:    *tty,
	})
	res := execResult{StdoutBytes: stdout.n, StdoutSHA256: stdout.sum(), Stderr: stderr.String()}
	if err == nil {
		return printExec(res, 0)
	}
	res.Error = err.Error()
	var exitErr utilexec.ExitError
	if errors.As(err, &exitErr) {
		res.ExitCode = exitErr.ExitStatus()
		return printExec(res, 0)
	}
	res.ExitCode = -1
	// Before v4 the error stream carries only a text message: the call
	// completed, but the exit code is not known.
	if strings.HasPrefix(strings.ToLower(err.Error()), "error executing remote command: ") {
		return printExec(res, 0)
	}
	return printExec(res, 1)
}

func printExec(r execResult, rc int) int {
	b, _ := json.Marshal(r)
	os.Stdout.Write(append(b, '\n'))
	return rc
}
