package main

// The server role: a file server on spdystream.Connection (server side).
//
// First stdout line: `listening on HOST:PORT`.
//
//	GET/HEAD PATH  the file ROOT/PATH (404 when missing, 400 when the path is bad)
//	POST/PUT PATH  200 with the request body echoed (any path, e.g. /echo)
//	reset paths    Stream.Reset: RST_STREAM CANCEL (default /reset)
//	push map       GET PAGE pushes P1, P2 ... first (default /pushed-page.html=/push.css):
//	               Stream.CreateSubStream, a SYN_STREAM with Associated-To-Stream-ID
//	               = the request's stream (spdystream cannot set FLAG_UNIDIRECTIONAL)

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moby/spdystream"
	"github.com/moby/spdystream/spdy"
)

type serverOpts struct {
	host       string
	port       int
	root       string
	resetPaths []string
	push       map[string][]string
	verbose    bool
}

func parseServerArgs(args []string) serverOpts {
	a := &argReader{role: "server", args: args}
	o := serverOpts{host: "127.0.0.1", push: map[string][]string{}}
	resetGiven, pushGiven := false, false
	for a.more() {
		arg := a.next()
		switch arg {
		case "--host":
			o.host = a.value(arg)
		case "--port":
			n, err := strconv.Atoi(a.value(arg))
			if err != nil || n < 0 || n > 65535 {
				usage("server", "bad --port")
			}
			o.port = n
		case "--plain":
		case "--tls":
			usage("server", "--tls is not supported: spdystream-peer serves plain TCP only")
		case "--root":
			r, err := filepath.Abs(a.value(arg))
			if err != nil {
				usage("server", "bad --root")
			}
			o.root = r
		case "--protocol":
			if p := a.value(arg); p != "spdy/3.1" {
				usage("server", "--protocol must be spdy/3.1; got "+p)
			}
		case "--protocols":
			if l := a.value(arg); !strings.Contains(","+l+",", ",spdy/3.1,") {
				usage("server", "--protocols must include spdy/3.1 (the only one served)")
			}
		case "--auto-spdy31":
			// node-spdy's option; spdystream has no SPDY/3 vs 3.1 distinction.
		case "--reset-path":
			o.resetPaths = append(o.resetPaths, a.value(arg))
			resetGiven = true
		case "--push":
			spec := a.value(arg)
			eq := strings.Index(spec, "=")
			if eq <= 0 {
				usage("server", "--push wants PAGE=P1,P2")
			}
			var list []string
			for _, p := range strings.Split(spec[eq+1:], ",") {
				if p != "" {
					list = append(list, p)
				}
			}
			o.push[spec[:eq]] = list
			pushGiven = true
		case "--verbose", "-v":
			o.verbose = true
		case "--help", "-h":
			usage("", "")
		default:
			usage("server", "unknown argument "+arg)
		}
	}
	if o.root == "" {
		usage("server", "--root is required")
	}
	if !resetGiven {
		o.resetPaths = []string{"/reset"}
	}
	if !pushGiven {
		o.push = map[string][]string{"/pushed-page.html": {"/push.css"}}
	}
	return o
}

type server struct {
	o serverOpts
}

func (s *server) vlog(format string, args ...any) {
	if s.o.verbose {
		logf("server", format, args...)
	}
}

func runServer(args []string) int {
	o := parseServerArgs(args)
	s := &server{o: o}
	ln, err := net.Listen("tcp", net.JoinHostPort(o.host, strconv.Itoa(o.port)))
	if err != nil {
		fmt.Fprintf(os.Stderr, "spdystream-peer server: %v\n", err)
		return 1
	}
	fmt.Printf("listening on %s\n", ln.Addr())
	fmt.Fprintf(os.Stderr, "spdystream server: plain TCP, SPDY/3 framing (moby/spdystream), root %s\n", o.root)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		os.Exit(0)
	}()

	for {
		c, err := ln.Accept()
		if err != nil {
			fmt.Fprintf(os.Stderr, "spdystream-peer server: accept: %v\n", err)
			return 1
		}
		go s.serveConn(c)
	}
}

func (s *server) serveConn(tcp net.Conn) {
	peer := tcp.RemoteAddr().String()
	s.vlog("connection from %s", peer)
	recv, sent := newWireStats(), newWireStats()
	var in, out *frameTap
	if s.o.verbose {
		in = newFrameTap(recv, func(f spdy.Frame) { logf("server", "%s recv %s", peer, describeFrame(f)) },
			func(err error) { logf("server", "%s inbound frame stream ended: %v", peer, err) })
		out = newFrameTap(sent, func(f spdy.Frame) { logf("server", "%s send %s", peer, describeFrame(f)) }, nil)
	}
	conn, err := spdystream.NewConnection(newTapConn(tcp, in, out), true)
	if err != nil {
		logf("server", "%s: %v", peer, err)
		tcp.Close()
		return
	}
	// After a GOAWAY from the client, spdystream stops reading and closes
	// the connection once it tracks no stream; give that 10 s at most.
	conn.NotifyClose(make(chan *spdystream.Stream, 1), 10*time.Second)

	var work sync.WaitGroup
	conn.Serve(func(st *spdystream.Stream) { s.onStream(conn, st, &work) })
	// Serve returns when the peer's GOAWAY arrived or reading failed. Let the
	// responses under way finish, then close the TCP connection.
	work.Wait()
	s.vlog("%s: session over (frames received: %s; sent: %s)", peer, recv.summary(), sent.summary())
	tcp.Close()
}

var contentTypes = map[string]string{
	".html": "text/html",
	".css":  "text/css",
	".js":   "application/javascript",
	".json": "application/json",
	".txt":  "text/plain",
	".png":  "image/png",
	".jpg":  "image/jpeg",
	".gif":  "image/gif",
}

func contentType(p string) string {
	if t, ok := contentTypes[strings.ToLower(path.Ext(p))]; ok {
		return t
	}
	return "application/octet-stream"
}

// resolveFile maps a URL path to a file under the root ("" when it is bad).
func (s *server) resolveFile(urlPath string) string {
	p := urlPath
	if i := strings.IndexByte(p, '?'); i >= 0 {
		p = p[:i]
	}
	decoded, err := url.PathUnescape(p)
	if err != nil || strings.ContainsRune(decoded, 0) {
		return ""
	}
	clean := path.Clean("/" + decoded)
	full := filepath.Join(s.o.root, filepath.FromSlash(clean))
	if full != s.o.root && !strings.HasPrefix(full, s.o.root+string(filepath.Separator)) {
		return ""
	}
	return full
}

func replyHeaders(status int, extra ...string) http.Header {
	h := http.Header{
		":status":  {fmt.Sprintf("%d %s", status, http.StatusText(status))},
		":version": {"HTTP/1.1"},
	}
	for i := 0; i+1 < len(extra); i += 2 {
		h[extra[i]] = []string{extra[i+1]}
	}
	return h
}

// onStream runs on spdystream's frame worker for the stream's partition.
// Anything that must happen before the next frame of the stream is handled
// (SendReply for uploads: spdystream drops DATA on a stream it has not
// replied to) is done here; the rest runs in a goroutine.
func (s *server) onStream(conn *spdystream.Connection, st *spdystream.Stream, work *sync.WaitGroup) {
	h := st.Headers()
	method := h.Get(":method")
	rawPath := h.Get(":path")
	if rawPath == "" {
		rawPath = "/"
	}
	urlPath := rawPath
	if i := strings.IndexByte(urlPath, '?'); i >= 0 {
		urlPath = urlPath[:i]
	}
	id := st.Identifier()
	s.vlog("stream %d %s %s %s", id, method, rawPath, headerString(h))
	go drainHeaders(st)

	for _, r := range s.o.resetPaths {
		if r == urlPath {
			s.vlog("resetting stream %d (Stream.Reset: RST_STREAM CANCEL)", id)
			if err := st.Reset(); err != nil {
				s.vlog("stream %d: reset: %v", id, err)
			}
			return
		}
	}

	if method == "POST" || method == "PUT" {
		extra := []string{"content-type", "application/octet-stream", "x-spdy-version", protocolName}
		if cl := h.Get("content-length"); cl != "" {
			extra = append(extra, "content-length", cl)
		}
		if err := st.SendReply(replyHeaders(200, extra...), false); err != nil {
			s.vlog("stream %d: reply: %v", id, err)
			return
		}
		work.Add(1)
		go func() {
			defer work.Done()
			var body bytes.Buffer
			if _, err := io.Copy(&body, st); err != nil {
				s.vlog("stream %d: reading body: %v", id, err)
			}
			s.vlog("echo %d bytes on stream %d", body.Len(), id)
			s.writeBody(st, bytes.NewReader(body.Bytes()))
		}()
		return
	}

	work.Add(1)
	go func() {
		defer work.Done()
		s.serveGet(st, method, urlPath, h)
	}()
}

func (s *server) simple(st *spdystream.Stream, status int, text string) {
	if err := st.SendReply(replyHeaders(status, "content-type", "text/plain",
		"content-length", strconv.Itoa(len(text))), false); err != nil {
		s.vlog("stream %d: reply: %v", st.Identifier(), err)
		return
	}
	s.writeBody(st, strings.NewReader(text))
}

func (s *server) serveGet(st *spdystream.Stream, method, urlPath string, reqHeaders http.Header) {
	if method != "GET" && method != "HEAD" {
		s.simple(st, 405, "method not allowed\n")
		return
	}
	file := s.resolveFile(urlPath)
	if file == "" {
		s.simple(st, 400, "bad path\n")
		return
	}
	fi, err := os.Stat(file)
	if err != nil || !fi.Mode().IsRegular() {
		s.simple(st, 404, "not found\n")
		return
	}
	if method == "GET" {
		s.pushResources(st, urlPath, reqHeaders)
	}
	f, err := os.Open(file)
	if err != nil {
		s.simple(st, 404, "not found\n")
		return
	}
	defer f.Close()
	if err := st.SendReply(replyHeaders(200, "content-type", contentType(file),
		"content-length", strconv.FormatInt(fi.Size(), 10), "x-spdy-version", protocolName), false); err != nil {
		s.vlog("stream %d: reply: %v", st.Identifier(), err)
		return
	}
	if method == "HEAD" {
		s.writeBody(st, strings.NewReader(""))
		return
	}
	s.writeBody(st, f)
}

// writeBody sends r in 16 KiB DATA frames (one Stream.Write each), then
// Stream.Close: a zero-length DATA frame with FIN.
func (s *server) writeBody(st *spdystream.Stream, r io.Reader) {
	buf := make([]byte, chunkSize)
	for {
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			if _, werr := st.Write(buf[:n]); werr != nil {
				s.vlog("stream %d: write: %v", st.Identifier(), werr)
				return
			}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			s.vlog("stream %d: read: %v", st.Identifier(), err)
			st.Reset()
			return
		}
	}
	if err := st.Close(); err != nil {
		s.vlog("stream %d: close: %v", st.Identifier(), err)
	}
}

// pushResources opens a pushed stream per file mapped to urlPath, before the
// parent's SYN_REPLY. The SYN_STREAM carries request and response headers
// together (:scheme :host :path :method, :status :version, content-*), as
// node-spdy does. Bodies are written before the parent's response.
func (s *server) pushResources(parent *spdystream.Stream, urlPath string, req http.Header) {
	for _, p := range s.o.push[urlPath] {
		file := s.resolveFile(p)
		if file == "" {
			s.vlog("push source bad path %s", p)
			continue
		}
		body, err := os.ReadFile(file)
		if err != nil {
			s.vlog("push source missing %s", p)
			continue
		}
		scheme := req.Get(":scheme")
		if scheme == "" {
			scheme = "http"
		}
		h := replyHeaders(200, "content-type", contentType(p), "content-length", strconv.Itoa(len(body)))
		h[":scheme"] = []string{scheme}
		h[":host"] = []string{req.Get(":host")}
		h[":path"] = []string{p}
		h[":method"] = []string{"GET"}
		push, err := parent.CreateSubStream(h, false)
		if err != nil {
			s.vlog("push %s failed: %v", p, err)
			continue
		}
		// spdystream's frame worker blocks on an RST_STREAM for a stream it
		// created until someone calls Wait on it; keep a waiter.
		go push.Wait()
		go drainHeaders(push)
		s.writeBody(push, bytes.NewReader(body))
		s.vlog("pushed %s %d bytes on stream %d (associated %d)", p, len(body), push.Identifier(), parent.Identifier())
	}
}
