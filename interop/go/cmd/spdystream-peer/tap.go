package main

// A frame tap: a second decoder of a connection's byte stream, built from
// spdystream's own spdy.Framer.
//
// spdystream's Stream API hides things an HTTP-over-SPDY client needs:
// handleReplyFrame drops the SYN_REPLY header block (so the response :status
// is not reachable), and a stream's Read returns io.EOF alike for FIN,
// RST_STREAM and the end of the session. The tap decodes the same inbound
// bytes a second time (same zlib dictionary, so its header decompressor stays
// in step) and records, per stream, the headers, FIN, RST_STREAM status and
// DATA byte count. It never writes anything: spdystream alone talks to the peer.
//
// The tap is synchronous: tapConn.Read hands bytes to spdystream only after
// the tap has parsed every complete frame in them, so when spdystream reports
// something about a stream, the tap already knows the frame that caused it.
// With --verbose the outbound bytes get a tap too, to log what spdystream sends.

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/moby/spdystream/spdy"
)

// syncPipe feeds bytes to the tap's framer and lets the feeder wait until the
// framer has consumed them all and is blocked asking for more.
type syncPipe struct {
	mu      sync.Mutex
	cond    *sync.Cond
	buf     []byte
	waiting bool // the reader is blocked in Read with nothing buffered
	closed  bool // no more input (EOF)
	dead    bool // the reader gave up; feeds no longer wait
}

func newSyncPipe() *syncPipe {
	p := &syncPipe{}
	p.cond = sync.NewCond(&p.mu)
	return p
}

func (p *syncPipe) Read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.buf) == 0 && !p.closed {
		p.waiting = true
		p.cond.Broadcast()
		p.cond.Wait()
	}
	p.waiting = false
	if len(p.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(b, p.buf)
	p.buf = p.buf[n:]
	return n, nil
}

// feed appends b and returns once the reader has parsed everything it could.
func (p *syncPipe) feed(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead || p.closed {
		return
	}
	p.buf = append(p.buf, b...)
	p.cond.Broadcast()
	for !p.dead && !(len(p.buf) == 0 && p.waiting) {
		p.cond.Wait()
	}
}

func (p *syncPipe) close() {
	p.mu.Lock()
	p.closed = true
	p.cond.Broadcast()
	p.mu.Unlock()
}

func (p *syncPipe) kill() {
	p.mu.Lock()
	p.dead = true
	p.buf = nil
	p.cond.Broadcast()
	p.mu.Unlock()
}

// frameTap runs a spdy.Framer over a syncPipe.
type frameTap struct {
	pipe    *syncPipe
	framer  *spdy.Framer
	onFrame func(spdy.Frame)
	onEnd   func(error) // io.EOF at a clean end
	stats   *wireStats
}

func newFrameTap(stats *wireStats, onFrame func(spdy.Frame), onEnd func(error)) *frameTap {
	p := newSyncPipe()
	fr, err := spdy.NewFramer(io.Discard, p)
	if err != nil {
		panic(err) // only fails when zlib cannot be set up
	}
	t := &frameTap{pipe: p, framer: fr, onFrame: onFrame, onEnd: onEnd, stats: stats}
	go t.run()
	return t
}

func (t *frameTap) run() {
	for {
		f, err := t.framer.ReadFrame()
		if err != nil {
			t.pipe.kill()
			if t.onEnd != nil {
				t.onEnd(err)
			}
			return
		}
		if t.stats != nil {
			t.stats.count(f)
		}
		if t.onFrame != nil {
			t.onFrame(f)
		}
	}
}

// tapConn wraps the TCP connection handed to spdystream.
type tapConn struct {
	net.Conn
	in, out *frameTap // either may be nil
	buf     []byte
	r, w    int
	rerr    error
}

func newTapConn(c net.Conn, in, out *frameTap) *tapConn {
	return &tapConn{Conn: c, in: in, out: out, buf: make([]byte, 64*1024)}
}

// Read serves spdystream's (many, small) reads from a buffer; each refill is
// parsed by the inbound tap before any of it is handed on.
func (c *tapConn) Read(p []byte) (int, error) {
	if c.r == c.w {
		if c.rerr != nil {
			return 0, c.rerr
		}
		n, err := c.Conn.Read(c.buf)
		if n > 0 && c.in != nil {
			c.in.pipe.feed(c.buf[:n])
		}
		c.r, c.w = 0, n
		if err != nil {
			c.rerr = err
			if c.in != nil {
				c.in.pipe.close()
			}
			if n == 0 {
				return 0, err
			}
		}
	}
	n := copy(p, c.buf[c.r:c.w])
	c.r += n
	return n, nil
}

func (c *tapConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 && c.out != nil {
		c.out.pipe.feed(p[:n])
	}
	return n, err
}

// ---------------------------------------------------------------------------
// Frame descriptions and counters for --verbose.

func frameName(f spdy.Frame) string {
	switch f.(type) {
	case *spdy.SynStreamFrame:
		return "SYN_STREAM"
	case *spdy.SynReplyFrame:
		return "SYN_REPLY"
	case *spdy.RstStreamFrame:
		return "RST_STREAM"
	case *spdy.SettingsFrame:
		return "SETTINGS"
	case *spdy.PingFrame:
		return "PING"
	case *spdy.GoAwayFrame:
		return "GOAWAY"
	case *spdy.HeadersFrame:
		return "HEADERS"
	case *spdy.WindowUpdateFrame:
		return "WINDOW_UPDATE"
	case *spdy.DataFrame:
		return "DATA"
	}
	return fmt.Sprintf("%T", f)
}

var rstNames = map[spdy.RstStreamStatus]string{
	spdy.ProtocolError:       "PROTOCOL_ERROR",
	spdy.InvalidStream:       "INVALID_STREAM",
	spdy.RefusedStream:       "REFUSED_STREAM",
	spdy.UnsupportedVersion:  "UNSUPPORTED_VERSION",
	spdy.Cancel:              "CANCEL",
	spdy.InternalError:       "INTERNAL_ERROR",
	spdy.FlowControlError:    "FLOW_CONTROL_ERROR",
	spdy.StreamInUse:         "STREAM_IN_USE",
	spdy.StreamAlreadyClosed: "STREAM_ALREADY_CLOSED",
	spdy.InvalidCredentials:  "INVALID_CREDENTIALS",
	spdy.FrameTooLarge:       "FRAME_TOO_LARGE",
}

func rstName(s spdy.RstStreamStatus) string {
	if n, ok := rstNames[s]; ok {
		return fmt.Sprintf("%s (%d)", n, s)
	}
	return fmt.Sprintf("status %d", s)
}

func headerString(h http.Header) string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, strings.ToLower(k)+"="+strings.Join(h[k], ","))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

func describeFrame(f spdy.Frame) string {
	var b strings.Builder
	b.WriteString(frameName(f))
	switch fr := f.(type) {
	case *spdy.SynStreamFrame:
		fmt.Fprintf(&b, " id=%d assoc=%d pri=%d flags=%#x", fr.StreamId, fr.AssociatedToStreamId, fr.Priority, fr.CFHeader.Flags)
		if fr.CFHeader.Flags&spdy.ControlFlagFin != 0 {
			b.WriteString(" fin")
		}
		if fr.CFHeader.Flags&spdy.ControlFlagUnidirectional != 0 {
			b.WriteString(" unidirectional")
		}
		b.WriteString(" " + headerString(fr.Headers))
	case *spdy.SynReplyFrame:
		fmt.Fprintf(&b, " id=%d", fr.StreamId)
		if fr.CFHeader.Flags&spdy.ControlFlagFin != 0 {
			b.WriteString(" fin")
		}
		b.WriteString(" " + headerString(fr.Headers))
	case *spdy.HeadersFrame:
		fmt.Fprintf(&b, " id=%d", fr.StreamId)
		if fr.CFHeader.Flags&spdy.ControlFlagFin != 0 {
			b.WriteString(" fin")
		}
		b.WriteString(" " + headerString(fr.Headers))
	case *spdy.RstStreamFrame:
		fmt.Fprintf(&b, " id=%d %s", fr.StreamId, rstName(fr.Status))
	case *spdy.SettingsFrame:
		for _, s := range fr.FlagIdValues {
			fmt.Fprintf(&b, " [id=%d value=%d flags=%#x]", s.Id, s.Value, s.Flag)
		}
	case *spdy.PingFrame:
		fmt.Fprintf(&b, " id=%d", fr.Id)
	case *spdy.GoAwayFrame:
		fmt.Fprintf(&b, " last=%d status=%d", fr.LastGoodStreamId, fr.Status)
	case *spdy.WindowUpdateFrame:
		fmt.Fprintf(&b, " id=%d delta=%d", fr.StreamId, fr.DeltaWindowSize)
	case *spdy.DataFrame:
		fmt.Fprintf(&b, " id=%d len=%d", fr.StreamId, len(fr.Data))
		if fr.Flags&spdy.DataFlagFin != 0 {
			b.WriteString(" fin")
		}
	}
	return b.String()
}

// wireStats counts frames by type, and DATA frame sizes.
type wireStats struct {
	mu       sync.Mutex
	counts   map[string]int
	dataMin  int
	dataMax  int
	dataSum  int64
	settings []string
}

func newWireStats() *wireStats { return &wireStats{counts: map[string]int{}, dataMin: -1} }

func (s *wireStats) count(f spdy.Frame) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts[frameName(f)]++
	switch fr := f.(type) {
	case *spdy.DataFrame:
		n := len(fr.Data)
		s.dataSum += int64(n)
		if n > 0 {
			if s.dataMin < 0 || n < s.dataMin {
				s.dataMin = n
			}
			if n > s.dataMax {
				s.dataMax = n
			}
		}
	case *spdy.SettingsFrame:
		s.settings = append(s.settings, describeFrame(fr))
	}
}

func (s *wireStats) summary() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.counts))
	for k := range s.counts {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := []string{}
	for _, k := range names {
		parts = append(parts, fmt.Sprintf("%s=%d", k, s.counts[k]))
	}
	out := strings.Join(parts, " ")
	if out == "" {
		out = "no frames"
	}
	if s.counts["DATA"] > 0 {
		out += fmt.Sprintf("; DATA payload %d bytes, non-empty frames %d..%d bytes", s.dataSum, max(s.dataMin, 0), s.dataMax)
	}
	for _, st := range s.settings {
		out += "; " + st
	}
	return out
}
