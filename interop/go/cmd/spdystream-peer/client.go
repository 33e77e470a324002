package main

// The client role: every URL over one spdystream.Connection (one TCP
// connection), one stream per request, at most --concurrency at once.
//
// Output, one JSON line each (the contract of interop/client.js):
//   {"url","status","protocol","bytes","sha256","pushed":false,"elapsed_ms"}
//   {"url","status","protocol","bytes","sha256","pushed":true,"associated"}
//   {"url","error"}   (pushed streams add "pushed":true)
// Exit 0 when every failure was expected (--expect-error) and every expected
// error happened, 1 otherwise, 2 on bad arguments.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moby/spdystream"
	"github.com/moby/spdystream/spdy"
)

const (
	protocolName = "spdy/3.1"
	chunkSize    = 16 * 1024
)

type clientOpts struct {
	urls        []*url.URL
	concurrency int
	post        []byte
	expectError []string
	timeout     time.Duration
	pushMode    string
	verbose     bool
}

func normURL(u *url.URL) string {
	c := *u
	if c.Path == "" && c.RawPath == "" {
		c.Path = "/"
	}
	return c.String()
}

func parseClientArgs(args []string) clientOpts {
	a := &argReader{role: "client", args: args}
	o := clientOpts{concurrency: 1, timeout: 60 * time.Second, pushMode: "reply"}
	var raw []string
	var postFile string
	for a.more() {
		arg := a.next()
		switch arg {
		case "--protocol":
			if p := a.value(arg); p != "spdy/3.1" {
				usage("client", "--protocol must be spdy/3.1 (spdystream speaks only SPDY/3 framing, which Kubernetes calls SPDY/3.1); got "+p)
			}
		case "--concurrency", "-c":
			n, err := strconv.Atoi(a.value(arg))
			if err != nil || n < 1 {
				usage("client", "bad --concurrency")
			}
			o.concurrency = n
		case "--post", "--data":
			postFile = a.value(arg)
		case "--expect-error":
			o.expectError = append(o.expectError, a.value(arg))
		case "--timeout":
			f, err := strconv.ParseFloat(a.value(arg), 64)
			if err != nil || f <= 0 {
				usage("client", "bad --timeout")
			}
			o.timeout = time.Duration(f * float64(time.Second))
		case "--push-mode":
			o.pushMode = a.value(arg)
			if o.pushMode != "reply" && o.pushMode != "reset" {
				usage("client", "--push-mode must be reply or reset")
			}
		case "--verbose", "-v":
			o.verbose = true
		case "--help", "-h":
			usage("", "")
		default:
			if strings.HasPrefix(arg, "-") {
				usage("client", "unknown argument "+arg)
			}
			raw = append(raw, arg)
		}
	}
	if len(raw) == 0 {
		usage("client", "no URL")
	}
	for _, r := range raw {
		u, err := url.Parse(r)
		if err != nil || u.Host == "" {
			usage("client", "bad URL "+r)
		}
		if u.Scheme != "http" {
			usage("client", "only http:// URLs (plain TCP) are supported: "+r)
		}
		if len(o.urls) > 0 && u.Host != o.urls[0].Host {
			usage("client", "all URLs must have the same origin ("+r+")")
		}
		o.urls = append(o.urls, u)
	}
	for i, e := range o.expectError {
		if u, err := url.Parse(e); err == nil {
			o.expectError[i] = normURL(u)
		}
	}
	if postFile != "" {
		b, err := os.ReadFile(postFile)
		if err != nil {
			usage("client", "cannot read --post file: "+err.Error())
		}
		o.post = b
	}
	return o
}

// ---------------------------------------------------------------------------
// What the inbound tap saw, per stream.

type wireStream struct {
	headers http.Header // SYN_STREAM (push) + SYN_REPLY + HEADERS, merged
	replied bool        // SYN_REPLY seen
	fin     bool        // FIN seen (SYN_REPLY, HEADERS or DATA)
	rst     spdy.RstStreamStatus
	pushed  bool
	assoc   uint32
	uni     bool
	bytes   int64
}

type wireState struct {
	mu      sync.Mutex
	cond    *sync.Cond
	streams map[uint32]*wireStream
	pushes  []uint32
	goaway  *spdy.GoAwayFrame
	ended   bool
	endErr  error
	verbose bool
}

func newWireState(verbose bool) *wireState {
	w := &wireState{streams: map[uint32]*wireStream{}, verbose: verbose}
	w.cond = sync.NewCond(&w.mu)
	return w
}

func (w *wireState) get(id spdy.StreamId) *wireStream {
	s := w.streams[uint32(id)]
	if s == nil {
		s = &wireStream{headers: http.Header{}}
		w.streams[uint32(id)] = s
	}
	return s
}

func mergeHeaders(dst, src http.Header) {
	for k, v := range src {
		dst[k] = append(dst[k], v...)
	}
}

func (w *wireState) onFrame(f spdy.Frame) {
	if w.verbose {
		logf("client", "recv %s", describeFrame(f))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	defer w.cond.Broadcast()
	switch fr := f.(type) {
	case *spdy.SynStreamFrame:
		s := w.get(fr.StreamId)
		s.pushed = true
		s.assoc = uint32(fr.AssociatedToStreamId)
		s.uni = fr.CFHeader.Flags&spdy.ControlFlagUnidirectional != 0
		mergeHeaders(s.headers, fr.Headers)
		if fr.CFHeader.Flags&spdy.ControlFlagFin != 0 {
			s.fin = true
		}
		w.pushes = append(w.pushes, uint32(fr.StreamId))
	case *spdy.SynReplyFrame:
		s := w.get(fr.StreamId)
		s.replied = true
		mergeHeaders(s.headers, fr.Headers)
		if fr.CFHeader.Flags&spdy.ControlFlagFin != 0 {
			s.fin = true
		}
	case *spdy.HeadersFrame:
		s := w.get(fr.StreamId)
		mergeHeaders(s.headers, fr.Headers)
		if fr.CFHeader.Flags&spdy.ControlFlagFin != 0 {
			s.fin = true
		}
	case *spdy.DataFrame:
		s := w.get(fr.StreamId)
		s.bytes += int64(len(fr.Data))
		if fr.Flags&spdy.DataFlagFin != 0 {
			s.fin = true
		}
	case *spdy.RstStreamFrame:
		w.get(fr.StreamId).rst = fr.Status
	case *spdy.GoAwayFrame:
		g := *fr
		w.goaway = &g
	}
}

func (w *wireState) onEnd(err error) {
	w.mu.Lock()
	w.ended = true
	w.endErr = err
	w.cond.Broadcast()
	w.mu.Unlock()
	if w.verbose || (err != nil && err != io.EOF) {
		logf("client", "inbound frame stream ended: %v", err)
	}
}

// snapshot copies a stream's record (the tap is synchronous with spdystream,
// so no waiting is needed once spdystream has reported the stream's end).
func (w *wireState) snapshot(id uint32) wireStream {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.streams[id]
	if s == nil {
		return wireStream{headers: http.Header{}}
	}
	c := *s
	c.headers = s.headers.Clone()
	return c
}

// sessionWhy says why the session may have ended.
func (w *wireState) sessionWhy() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var parts []string
	if w.goaway != nil {
		parts = append(parts, fmt.Sprintf("GOAWAY received (last-good-stream %d, status %d); spdystream stops reading at GOAWAY",
			w.goaway.LastGoodStreamId, w.goaway.Status))
	}
	if w.ended {
		if w.endErr == nil || w.endErr == io.EOF {
			parts = append(parts, "connection closed by the peer")
		} else {
			parts = append(parts, "frame read error: "+w.endErr.Error())
		}
	}
	if len(parts) == 0 {
		return "session closed"
	}
	return strings.Join(parts, "; ")
}

func statusOf(h http.Header) *int {
	v := h.Get(":status")
	if v == "" {
		return nil
	}
	f := strings.Fields(v)
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return nil
	}
	return &n
}

// ---------------------------------------------------------------------------

type jsonResult struct {
	URL        string  `json:"url"`
	Status     *int    `json:"status,omitempty"`
	Protocol   string  `json:"protocol,omitempty"`
	Bytes      *int64  `json:"bytes,omitempty"`
	SHA256     string  `json:"sha256,omitempty"`
	Error      string  `json:"error,omitempty"`
	Pushed     *bool   `json:"pushed,omitempty"`
	Associated *uint32 `json:"associated,omitempty"`
	ElapsedMS  *int64  `json:"elapsed_ms,omitempty"`
}

type client struct {
	o      clientOpts
	origin string
	conn   *spdystream.Connection
	wire   *wireState
	sent   *wireStats
	recv   *wireStats

	outMu      sync.Mutex
	failures   int
	seenErrors map[string]bool

	pushMu   sync.Mutex
	pushDone map[uint32]bool
	pushSeen map[uint32]bool
}

func logf(role, format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[spdystream %s] %s\n", role, fmt.Sprintf(format, args...))
}

func (c *client) vlog(format string, args ...any) {
	if c.o.verbose {
		logf("client", format, args...)
	}
}

func (c *client) emit(r jsonResult, failed bool, expectable bool) {
	b, _ := json.Marshal(r)
	c.outMu.Lock()
	defer c.outMu.Unlock()
	os.Stdout.Write(append(b, '\n'))
	if failed {
		if expectable {
			c.seenErrors[r.URL] = true
			for _, e := range c.o.expectError {
				if e == r.URL {
					return
				}
			}
		}
		c.failures++
	}
}

func (c *client) fail(u string, msg string) {
	c.emit(jsonResult{URL: u, Error: msg}, true, true)
}

func runClient(args []string) int {
	o := parseClientArgs(args)
	c := &client{
		o:          o,
		origin:     o.urls[0].Scheme + "://" + o.urls[0].Host,
		seenErrors: map[string]bool{},
		pushDone:   map[uint32]bool{},
		pushSeen:   map[uint32]bool{},
		wire:       newWireState(o.verbose),
		recv:       newWireStats(),
		sent:       newWireStats(),
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()

	host := o.urls[0].Host
	if o.urls[0].Port() == "" {
		host = net.JoinHostPort(o.urls[0].Hostname(), "80")
	}
	d := net.Dialer{Timeout: o.timeout}
	tcp, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		for _, u := range o.urls {
			c.fail(normURL(u), "session error: "+err.Error())
		}
		return c.finish()
	}
	in := newFrameTap(c.recv, c.wire.onFrame, c.wire.onEnd)
	var out *frameTap
	if o.verbose {
		out = newFrameTap(c.sent, func(f spdy.Frame) { logf("client", "send %s", describeFrame(f)) }, nil)
	}
	conn, err := spdystream.NewConnection(newTapConn(tcp, in, out), false)
	if err != nil {
		for _, u := range o.urls {
			c.fail(normURL(u), "session error: "+err.Error())
		}
		return c.finish()
	}
	c.conn = conn
	go conn.Serve(c.onPushedStream)
	c.vlog("session up with %s (spdystream, SPDY/3 framing)", tcp.RemoteAddr())

	sem := make(chan struct{}, o.concurrency)
	var wg sync.WaitGroup
	for i, u := range o.urls {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			for _, rest := range o.urls[i:] {
				c.emit(jsonResult{URL: normURL(rest), Error: "timeout: never sent"}, true, false)
			}
			goto drained
		}
		wg.Add(1)
		go func(u *url.URL) {
			defer wg.Done()
			c.fetch(ctx, u)
			<-sem
		}(u)
	}
drained:
	wg.Wait()
	c.waitPushes(ctx)

	// Polite close: GOAWAY, without waiting for spdystream's shutdown (which
	// waits for every stream it still tracks, pushed ones included).
	if err := conn.Close(); err != nil {
		c.vlog("close: %v", err)
	}
	time.Sleep(50 * time.Millisecond)
	if o.verbose {
		logf("client", "frames received: %s", c.recv.summary())
		logf("client", "frames sent: %s", c.sent.summary())
	}
	return c.finish()
}

func (c *client) finish() int {
	c.outMu.Lock()
	defer c.outMu.Unlock()
	for _, e := range c.o.expectError {
		if !c.seenErrors[e] {
			fmt.Fprintf(os.Stderr, "spdystream-peer client: expected an error for %s but it succeeded\n", e)
			c.failures++
		}
	}
	if c.failures == 0 {
		return 0
	}
	return 1
}

func (c *client) requestHeaders(u *url.URL) http.Header {
	method := "GET"
	if c.o.post != nil {
		method = "POST"
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	if u.RawQuery != "" {
		path += "?" + u.RawQuery
	}
	// spdystream lower-cases names when it writes them; keys are given
	// lower-case here so that nothing depends on that.
	h := http.Header{
		":method":    {method},
		":path":      {path},
		":version":   {"HTTP/1.1"},
		":host":      {u.Host},
		":scheme":    {"http"},
		"accept":     {"*/*"},
		"user-agent": {"spdystream interop client"},
	}
	if c.o.post != nil {
		h["content-length"] = []string{strconv.Itoa(len(c.o.post))}
	}
	return h
}

type readResult struct {
	bytes int64
	sum   string
	err   error
}

func readAll(s *spdystream.Stream) readResult {
	h := sha256.New()
	buf := make([]byte, 32*1024)
	var n int64
	for {
		k, err := s.Read(buf)
		if k > 0 {
			h.Write(buf[:k])
			n += int64(k)
		}
		if err == io.EOF {
			return readResult{bytes: n, sum: hex.EncodeToString(h.Sum(nil))}
		}
		if err != nil {
			return readResult{bytes: n, err: err}
		}
	}
}

// drainHeaders keeps spdystream's frame worker from blocking: a HEADERS frame
// is handed to ReceiveHeader through an unbuffered channel.
func drainHeaders(s *spdystream.Stream) {
	for {
		if _, err := s.ReceiveHeader(); err != nil {
			return
		}
	}
}

func (c *client) fetch(ctx context.Context, u *url.URL) {
	us := normURL(u)
	started := time.Now()
	select {
	case <-c.conn.CloseChan():
		c.fail(us, "session error: "+c.wire.sessionWhy())
		return
	default:
	}
	stream, err := c.conn.CreateStream(c.requestHeaders(u), nil, c.o.post == nil)
	if err != nil {
		c.fail(us, "request error: "+err.Error())
		return
	}
	id := stream.Identifier()
	c.vlog("stream %d %s", id, us)
	go drainHeaders(stream)
	var sent atomic.Int64
	if c.o.post != nil {
		go c.sendBody(stream, id, &sent)
	}
	timedOut := func() {
		ws := c.wire.snapshot(id)
		var parts []string
		if c.o.post != nil {
			parts = append(parts, fmt.Sprintf("request body %d of %d bytes written", sent.Load(), len(c.o.post)))
		}
		if ws.replied {
			parts = append(parts, fmt.Sprintf("reply received, %d response body bytes received", ws.bytes))
		} else {
			parts = append(parts, "no reply")
		}
		c.fail(us, fmt.Sprintf("timeout after %g s (%s)", c.o.timeout.Seconds(), strings.Join(parts, "; ")))
	}

	// Stream.Wait returns at SYN_REPLY, or ErrReset at an RST_STREAM before
	// it (spdystream's frame worker blocks until someone takes that error, so
	// every stream must be waited on). It never returns when the session
	// dies first, hence the CloseChan case.
	waited := make(chan error, 1)
	go func() { waited <- stream.Wait() }()
	select {
	case err = <-waited:
	case <-c.conn.CloseChan():
		select {
		case err = <-waited:
		case <-time.After(100 * time.Millisecond):
			c.fail(us, "session error before a reply: "+c.wire.sessionWhy())
			return
		}
	case <-ctx.Done():
		timedOut()
		return
	}
	if err != nil {
		ws := c.wire.snapshot(id)
		if errors.Is(err, spdystream.ErrReset) && ws.rst != 0 {
			c.fail(us, "stream reset: RST_STREAM "+rstName(ws.rst))
		} else {
			c.fail(us, "stream error: "+err.Error())
		}
		return
	}

	got := make(chan readResult, 1)
	go func() { got <- readAll(stream) }()
	var r readResult
	select {
	case r = <-got:
	case <-ctx.Done():
		timedOut()
		return
	}
	if r.err != nil {
		c.fail(us, "stream error: "+r.err.Error())
		return
	}
	ws := c.wire.snapshot(id)
	switch {
	case ws.rst != 0:
		c.fail(us, "stream reset: RST_STREAM "+rstName(ws.rst))
		return
	case !ws.fin:
		c.fail(us, "stream closed before its end: "+c.wire.sessionWhy())
		return
	case !ws.replied:
		c.fail(us, "stream ended without a response")
		return
	}
	if r.bytes != ws.bytes {
		logf("client", "warning: stream %d: spdystream delivered %d bytes, the wire carried %d", id, r.bytes, ws.bytes)
	}
	c.vlog("response %d %s", id, headerString(ws.headers))
	elapsed := time.Since(started).Milliseconds()
	pushed := false
	c.emit(jsonResult{
		URL:       us,
		Status:    statusOf(ws.headers),
		Protocol:  protocolName,
		Bytes:     &r.bytes,
		SHA256:    r.sum,
		Pushed:    &pushed,
		ElapsedMS: &elapsed,
	}, false, false)
}

// sendBody streams the POST body in 16 KiB DATA frames (one WriteData each),
// FIN on the last one. spdystream sends without regard to any window.
func (c *client) sendBody(s *spdystream.Stream, id uint32, sent *atomic.Int64) {
	body := c.o.post
	if len(body) == 0 {
		if err := s.WriteData(nil, true); err != nil {
			c.vlog("stream %d: body write: %v", id, err)
		}
		return
	}
	for off := 0; off < len(body); off += chunkSize {
		end := min(off+chunkSize, len(body))
		if ws := c.wire.snapshot(id); ws.rst != 0 {
			c.vlog("stream %d: reset by the peer after %d body bytes; not sending the rest", id, off)
			return
		}
		if err := s.WriteData(body[off:end], end == len(body)); err != nil {
			c.vlog("stream %d: body write: %v", id, err)
			return
		}
		sent.Store(int64(end))
	}
}

// onPushedStream is spdystream's handler for server-initiated streams.
//
// spdystream drops DATA for a stream until it has "replied" to it, and the
// only way to get there is Stream.SendReply, which puts a SYN_REPLY for the
// pushed stream on the wire (the spec says a client never does). --push-mode
// reply does that and reads the push; --push-mode reset calls Stream.Reset
// (RST_STREAM CANCEL, or nothing at all when the push is unidirectional, as
// spdystream then considers the stream finished).
func (c *client) onPushedStream(s *spdystream.Stream) {
	id := s.Identifier()
	ws := c.wire.snapshot(id)
	assoc := ws.assoc
	if p := s.Parent(); p != nil {
		assoc = p.Identifier()
	}
	path := s.Headers().Get(":path")
	u := path
	if !strings.Contains(path, "://") {
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		u = c.origin + path
	}
	c.vlog("push promise %s stream %d associated %d %s", u, id, assoc, headerString(s.Headers()))
	c.pushMu.Lock()
	c.pushSeen[id] = true
	c.pushMu.Unlock()
	if c.o.pushMode == "reset" {
		err := s.Reset()
		c.vlog("push %d refused with Stream.Reset (err=%v)", id, err)
		c.markPush(id)
		return
	}
	if err := s.SendReply(http.Header{}, false); err != nil {
		c.emit(jsonResult{URL: u, Error: "pushed stream: SendReply: " + err.Error(), Pushed: ptr(true)}, true, false)
		c.markPush(id)
		return
	}
	go drainHeaders(s)
	go func() {
		defer c.markPush(id)
		r := readAll(s)
		ws := c.wire.snapshot(id)
		switch {
		case r.err != nil:
			c.emit(jsonResult{URL: u, Error: "pushed stream error: " + r.err.Error(), Pushed: ptr(true)}, true, false)
		case ws.rst != 0:
			c.emit(jsonResult{URL: u, Error: "pushed stream reset: RST_STREAM " + rstName(ws.rst), Pushed: ptr(true)}, true, false)
		case !ws.fin:
			c.emit(jsonResult{URL: u, Error: "pushed stream closed before its end: " + c.wire.sessionWhy(), Pushed: ptr(true)}, true, false)
		default:
			if r.bytes != ws.bytes {
				logf("client", "warning: pushed stream %d: spdystream delivered %d bytes, the wire carried %d", id, r.bytes, ws.bytes)
			}
			c.emit(jsonResult{
				URL:        u,
				Status:     statusOf(ws.headers),
				Protocol:   protocolName,
				Bytes:      &r.bytes,
				SHA256:     r.sum,
				Pushed:     ptr(true),
				Associated: &assoc,
			}, false, false)
		}
	}()
}

func ptr[T any](v T) *T { return &v }

func (c *client) markPush(id uint32) {
	c.pushMu.Lock()
	c.pushDone[id] = true
	c.pushMu.Unlock()
}

// waitPushes waits until every pushed SYN_STREAM the tap saw has been handed
// to onPushedStream by spdystream (given 2 s) and read to its end (given the
// rest of --timeout).
func (c *client) waitPushes(ctx context.Context) {
	undeliveredSince := map[uint32]time.Time{}
	for {
		c.wire.mu.Lock()
		ids := append([]uint32(nil), c.wire.pushes...)
		c.wire.mu.Unlock()
		var pending, lost []uint32
		c.pushMu.Lock()
		for _, id := range ids {
			if c.pushDone[id] {
				continue
			}
			pending = append(pending, id)
			if !c.pushSeen[id] {
				if t, ok := undeliveredSince[id]; !ok {
					undeliveredSince[id] = time.Now()
				} else if time.Since(t) > 2*time.Second {
					lost = append(lost, id)
				}
			}
		}
		c.pushMu.Unlock()
		if len(pending) == 0 {
			return
		}
		if ctx.Err() != nil || len(lost) > 0 {
			if ctx.Err() == nil {
				pending = lost
			}
			for _, id := range pending {
				ws := c.wire.snapshot(id)
				why := "spdystream did not hand it to the stream handler"
				if c.pushSeenID(id) {
					why = "unfinished at timeout"
				}
				c.emit(jsonResult{URL: c.origin + ws.headers.Get(":path"),
					Error:  fmt.Sprintf("pushed stream %d: %s", id, why),
					Pushed: ptr(true)}, true, false)
				c.markPush(id)
			}
			if ctx.Err() != nil {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *client) pushSeenID(id uint32) bool {
	c.pushMu.Lock()
	defer c.pushMu.Unlock()
	return c.pushSeen[id]
}
