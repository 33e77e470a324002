package main

// kube-peer kubelet: a kubelet-like streaming server built the way the
// kubelet's (CRI streaming) server is: apimachinery's httpstream.Handshake for
// X-Stream-Protocol-Version and spdy.NewResponseUpgrader for the SPDY/3.1
// upgrade, streams accepted by their streamType header.
//
// It never runs anything from the network:
//   /exec         whatever `command` says: copies stdin to stdout, writes the
//                 fixed line "speedy-kube-double stderr\n" to stderr (no TTY),
//                 and ends with the exit code of the query parameter `exit`
//                 (default 0), reported on the error stream (v4: metav1.Status).
//   /portforward  portforward.k8s.io: for each data/error stream pair (same
//                 requestID) echoes the data stream back, in process.

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/httpstream/spdy"
	"k8s.io/apimachinery/pkg/util/remotecommand"
)

const (
	stderrLine            = "speedy-kube-double stderr\n"
	streamCreationTimeout = 30 * time.Second
	portForwardProtocolV1 = "portforward.k8s.io"
)

var execProtocols = []string{
	remotecommand.StreamProtocolV4Name,
	remotecommand.StreamProtocolV3Name,
	remotecommand.StreamProtocolV2Name,
	remotecommand.StreamProtocolV1Name,
}

type kubelet struct {
	verbose bool
}

func (k *kubelet) logf(format string, args ...any) {
	if k.verbose {
		fmt.Fprintf(os.Stderr, "[kube-peer kubelet] %s\n", fmt.Sprintf(format, args...))
	}
}

func runKubelet(args []string) int {
	fs := newFlags("kubelet")
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on (port 0 picks one)")
	verbose := fs.Bool("verbose", false, "log to stderr")
	fs.BoolVar(verbose, "v", false, "log to stderr")
	parseFlags(fs, args)
	setupKlog(*verbose)

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kube-peer kubelet: %v\n", err)
		return 1
	}
	k := &kubelet{verbose: *verbose}
	mux := http.NewServeMux()
	mux.HandleFunc("/exec", k.serveExec)
	mux.HandleFunc("/exec/", k.serveExec)
	mux.HandleFunc("/portforward", k.servePortForward)
	mux.HandleFunc("/portforward/", k.servePortForward)
	fmt.Printf("listening on %s\n", ln.Addr())
	fmt.Fprintf(os.Stderr, "kube-peer kubelet: /exec (%v), /portforward (%s); SPDY/3.1 via apimachinery + spdystream\n",
		execProtocols, portForwardProtocolV1)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		os.Exit(0)
	}()
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second}
	if err := srv.Serve(ln); err != nil {
		fmt.Fprintf(os.Stderr, "kube-peer kubelet: %v\n", err)
		return 1
	}
	return 0
}

type acceptedStream struct {
	stream    httpstream.Stream
	replySent <-chan struct{}
}

// upgrade negotiates the sub-protocol and switches to SPDY/3.1; streams the
// client opens arrive on the returned channel.
func (k *kubelet) upgrade(w http.ResponseWriter, req *http.Request, protocols []string) (httpstream.Connection, string, <-chan acceptedStream, bool) {
	if !httpstream.IsUpgradeRequest(req) {
		http.Error(w, "this endpoint wants a SPDY/3.1 upgrade request", http.StatusBadRequest)
		return nil, "", nil, false
	}
	protocol, err := httpstream.Handshake(req, w, protocols)
	if err != nil {
		k.logf("%s %s: handshake: %v", req.Method, req.URL, err)
		return nil, "", nil, false
	}
	streams := make(chan acceptedStream)
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, req, func(s httpstream.Stream, replySent <-chan struct{}) error {
		streams <- acceptedStream{s, replySent}
		return nil
	})
	if conn == nil {
		k.logf("%s %s: upgrade failed", req.Method, req.URL)
		return nil, "", nil, false
	}
	k.logf("%s %s: upgraded, protocol %s", req.Method, req.URL, protocol)
	return conn, protocol, streams, true
}

func queryBool(req *http.Request, name string) bool {
	switch req.URL.Query().Get(name) {
	case "1", "true", "True", "TRUE":
		return true
	}
	return false
}

// ---------------------------------------------------------------------------
// exec

func (k *kubelet) serveExec(w http.ResponseWriter, req *http.Request) {
	exitCode := 0
	if e := req.URL.Query().Get("exit"); e != "" {
		n, err := strconv.Atoi(e)
		if err != nil || n < 0 || n > 255 {
			http.Error(w, "exit must be 0..255", http.StatusBadRequest)
			return
		}
		exitCode = n
	}
	wantStdin, wantStdout := queryBool(req, "stdin"), queryBool(req, "stdout")
	wantStderr, tty := queryBool(req, "stderr"), queryBool(req, "tty")
	if !wantStdin && !wantStdout && !wantStderr {
		http.Error(w, "you must specify at least 1 of stdin, stdout, stderr", http.StatusBadRequest)
		return
	}
	conn, protocol, streamCh, ok := k.upgrade(w, req, execProtocols)
	if !ok {
		return
	}
	defer conn.Close()
	k.logf("exec: command %q ignored (fixed behaviour), stdin=%v stdout=%v stderr=%v tty=%v exit=%d",
		req.URL.Query()["command"], wantStdin, wantStdout, wantStderr, tty, exitCode)

	// Which streams the client opens, by protocol (client-go's createStreams).
	expected := map[string]bool{v1.StreamTypeError: true}
	if wantStdin {
		expected[v1.StreamTypeStdin] = true
	}
	if wantStdout {
		expected[v1.StreamTypeStdout] = true
	}
	if wantStderr && !tty {
		expected[v1.StreamTypeStderr] = true
	}
	if tty && protocol != remotecommand.StreamProtocolV1Name && protocol != remotecommand.StreamProtocolV2Name {
		expected[v1.StreamTypeResize] = true
	}
	if protocol == remotecommand.StreamProtocolV1Name {
		// v1 clients open stderr even with a TTY and the error stream last;
		// accept whatever arrives within the timeout.
		expected[v1.StreamTypeStderr] = wantStderr
	}

	got := map[string]acceptedStream{}
	timer := time.NewTimer(streamCreationTimeout)
	defer timer.Stop()
	for !haveAll(got, expected) {
		select {
		case s := <-streamCh:
			t := s.stream.Headers().Get(v1.StreamType)
			k.logf("exec: stream %d streamType=%q", s.stream.Identifier(), t)
			if _, dup := got[t]; dup || t == "" {
				k.logf("exec: unexpected stream %q, resetting it", t)
				s.stream.Reset()
				continue
			}
			got[t] = s
		case <-timer.C:
			k.logf("exec: timed out waiting for streams (have %d)", len(got))
			return
		case <-conn.CloseChan():
			k.logf("exec: connection closed while waiting for streams")
			return
		}
	}
	for _, s := range got {
		<-s.replySent
	}

	if r, ok := got[v1.StreamTypeResize]; ok {
		go io.Copy(io.Discard, r.stream) // terminal sizes: nothing to resize
	}
	var wg sync.WaitGroup
	if e, ok := got[v1.StreamTypeStderr]; ok {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := io.WriteString(e.stream, stderrLine); err != nil {
				k.logf("exec: stderr: %v", err)
			}
			e.stream.Close()
		}()
	}
	var copied int64
	in, hasIn := got[v1.StreamTypeStdin]
	out, hasOut := got[v1.StreamTypeStdout]
	switch {
	case hasIn && hasOut:
		n, err := io.Copy(out.stream, in.stream)
		copied = n
		if err != nil {
			k.logf("exec: stdin->stdout: %v", err)
		}
	case hasIn:
		copied, _ = io.Copy(io.Discard, in.stream)
	}
	if hasOut {
		out.stream.Close()
	}
	wg.Wait()
	k.logf("exec: copied %d bytes stdin->stdout, exit %d", copied, exitCode)

	errStream := got[v1.StreamTypeError].stream
	if err := writeExitStatus(errStream, protocol, exitCode); err != nil {
		k.logf("exec: error stream: %v", err)
	}
	errStream.Close()
}

func haveAll(got map[string]acceptedStream, expected map[string]bool) bool {
	for t, want := range expected {
		if _, ok := got[t]; want && !ok {
			return false
		}
	}
	return true
}

// writeExitStatus reports the end of the "command" as the kubelet does:
// v4 a JSON metav1.Status, earlier versions a text message on failure only.
func writeExitStatus(w io.Writer, protocol string, code int) error {
	if protocol != remotecommand.StreamProtocolV4Name {
		if code == 0 {
			return nil
		}
		_, err := fmt.Fprintf(w, "command terminated with non-zero exit code: exit status %d", code)
		return err
	}
	status := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusSuccess,
	}
	if code != 0 {
		status = metav1.Status{
			TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status:   metav1.StatusFailure,
			Reason:   remotecommand.NonZeroExitCodeReason,
			Message:  fmt.Sprintf("command terminated with non-zero exit code: exit status %d", code),
			Details: &metav1.StatusDetails{
				Causes: []metav1.StatusCause{{
					Type:    remotecommand.ExitCodeCauseType,
					Message: strconv.Itoa(code),
				}},
			},
		}
	}
	b, err := json.Marshal(status)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// ---------------------------------------------------------------------------
// port-forward

type pfPair struct {
	data, errs httpstream.Stream
}

func (k *kubelet) servePortForward(w http.ResponseWriter, req *http.Request) {
	conn, _, streamCh, ok := k.upgrade(w, req, []string{portForwardProtocolV1})
	if !ok {
		return
	}
	defer conn.Close()

	pairs := map[string]*pfPair{}
	for {
		select {
		case <-conn.CloseChan():
			k.logf("port-forward: connection closed")
			return
		case s := <-streamCh:
			h := s.stream.Headers()
			id, port, typ := h.Get(v1.PortForwardRequestIDHeader), h.Get(v1.PortHeader), h.Get(v1.StreamType)
			k.logf("port-forward: stream %d streamType=%q port=%q requestID=%q", s.stream.Identifier(), typ, port, id)
			if id == "" || port == "" {
				k.logf("port-forward: stream without requestID/port, resetting it")
				s.stream.Reset()
				continue
			}
			p := pairs[id]
			if p == nil {
				p = &pfPair{}
				pairs[id] = p
			}
			switch typ {
			case v1.StreamTypeData:
				p.data = s.stream
			case v1.StreamTypeError:
				p.errs = s.stream
			default:
				k.logf("port-forward: unknown streamType %q, resetting it", typ)
				s.stream.Reset()
				continue
			}
			if p.data != nil && p.errs != nil {
				delete(pairs, id)
				go k.echo(conn, id, port, p, s.replySent)
			}
		}
	}
}

// echo sends the data stream's bytes back on it until the client's FIN, then
// closes the data and error streams (an empty error stream means success).
func (k *kubelet) echo(conn httpstream.Connection, id, port string, p *pfPair, replySent <-chan struct{}) {
	<-replySent
	n, err := io.Copy(p.data, p.data)
	if err != nil {
		k.logf("port-forward %s: echo: %v", id, err)
		fmt.Fprintf(p.errs, "echo for port %s failed: %v", port, err)
	}
	k.logf("port-forward %s: echoed %d bytes for port %s", id, n, port)
	p.data.Close()
	p.errs.Close()
	conn.RemoveStreams(p.data, p.errs)
}
