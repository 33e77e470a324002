package main

// kube-peer port-forward: client-go's PortForwarder over a SPDY dialer
// (transport/spdy.RoundTripperFor + NewDialer), as `kubectl port-forward`
// does. It forwards a random local port to --remote-port, connects to that
// local port, sends --send and reads back until it has as many bytes as it
// sent (the far end is expected to echo).
//
// Output, one JSON line: {"sent":N,"received":N,"sha256_sent":"..","sha256_received":".."}
// (plus "error" when something failed). Exit 0 when the echo matched, 1 otherwise.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

type pfResult struct {
	Sent           int64  `json:"sent"`
	Received       int64  `json:"received"`
	SHA256Sent     string `json:"sha256_sent"`
	SHA256Received string `json:"sha256_received"`
	Error          string `json:"error,omitempty"`
}

func runPortForward(args []string) int {
	fs := newFlags("port-forward")
	rawURL := fs.String("url", "", "port-forward endpoint, e.g. http://127.0.0.1:PORT/portforward")
	remotePort := fs.Int("remote-port", 0, "port on the far side")
	sendFile := fs.String("send", "", "file to send through the forwarded port")
	timeout := fs.Float64("timeout", 60, "seconds for the whole transfer")
	verbose := fs.Bool("verbose", false, "log to stderr")
	fs.BoolVar(verbose, "v", false, "log to stderr")
	parseFlags(fs, args)
	if *rawURL == "" || *sendFile == "" {
		usage("port-forward: --url and --send are required")
	}
	if *remotePort < 1 || *remotePort > 65535 {
		usage("port-forward: --remote-port must be 1..65535")
	}
	u, err := url.Parse(*rawURL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		usage("port-forward: bad --url " + *rawURL)
	}
	payload, err := os.ReadFile(*sendFile)
	if err != nil {
		usage("port-forward: cannot read --send file: " + err.Error())
	}
	setupKlog(*verbose)
	sum := sha256.Sum256(payload)
	res := pfResult{Sent: int64(len(payload)), SHA256Sent: hex.EncodeToString(sum[:])}
	fail := func(msg string) int {
		res.Error = msg
		b, _ := json.Marshal(res)
		os.Stdout.Write(append(b, '\n'))
		return 1
	}

	config := &rest.Config{Host: u.Scheme + "://" + u.Host}
	transport, upgrader, err := spdy.RoundTripperFor(config)
	if err != nil {
		return fail("RoundTripperFor: " + err.Error())
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, "POST", u)

	stop := make(chan struct{})
	ready := make(chan struct{})
	var logOut io.Writer = io.Discard
	if *verbose {
		logOut = os.Stderr
	}
	// Local port 0: the forwarder picks one (on localhost, as kubectl does).
	pf, err := portforward.New(dialer, []string{"0:" + strconv.Itoa(*remotePort)}, stop, ready, logOut, os.Stderr)
	if err != nil {
		return fail("portforward: " + err.Error())
	}
	fwdErr := make(chan error, 1)
	go func() { fwdErr <- pf.ForwardPorts() }()

	deadline := time.Now().Add(time.Duration(*timeout * float64(time.Second)))
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	select {
	case <-ready:
	case err := <-fwdErr:
		return fail(fmt.Sprintf("ForwardPorts: %v", err))
	case <-ctx.Done():
		return fail("timeout waiting for the forwarder")
	}
	ports, err := pf.GetPorts()
	if err != nil || len(ports) == 0 {
		return fail(fmt.Sprintf("GetPorts: %v", err))
	}
	local := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(ports[0].Local)))
	if *verbose {
		fmt.Fprintf(os.Stderr, "[kube-peer port-forward] %s -> remote port %d via %s\n", local, *remotePort, u)
	}

	conn, err := net.DialTimeout("tcp", local, 10*time.Second)
	if err != nil {
		return fail("connecting to the forwarded port: " + err.Error())
	}
	defer conn.Close()
	conn.SetDeadline(deadline)

	writeErr := make(chan error, 1)
	go func() {
		// 64 KiB writes; the forwarder turns each read into one DATA frame.
		var err error
		for off := 0; off < len(payload) && err == nil; off += 64 * 1024 {
			_, err = conn.Write(payload[off:min(off+64*1024, len(payload))])
		}
		writeErr <- err
	}()

	h := sha256.New()
	buf := make([]byte, 64*1024)
	for res.Received < res.Sent {
		n, err := conn.Read(buf)
		if n > 0 {
			h.Write(buf[:n])
			res.Received += int64(n)
		}
		if err != nil {
			if err != io.EOF {
				res.Error = "reading the echo: " + err.Error()
			} else {
				res.Error = "connection closed before the whole echo"
			}
			break
		}
	}
	res.SHA256Received = hex.EncodeToString(h.Sum(nil))
	if err := <-writeErr; err != nil && res.Error == "" {
		res.Error = "sending: " + err.Error()
	}
	conn.Close()
	close(stop)
	select {
	case err := <-fwdErr:
		if err != nil && *verbose {
			fmt.Fprintf(os.Stderr, "[kube-peer port-forward] ForwardPorts: %v\n", err)
		}
	case <-time.After(2 * time.Second):
	}

	b, _ := json.Marshal(res)
	os.Stdout.Write(append(b, '\n'))
	if res.Error != "" || res.Received != res.Sent || res.SHA256Received != res.SHA256Sent {
		return 1
	}
	return 0
}
