package speedy.interop.netty;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.spdy.DefaultSpdyDataFrame;
import io.netty.handler.codec.spdy.DefaultSpdyRstStreamFrame;
import io.netty.handler.codec.spdy.DefaultSpdySynReplyFrame;
import io.netty.handler.codec.spdy.DefaultSpdySynStreamFrame;
import io.netty.handler.codec.spdy.SpdyDataFrame;
import io.netty.handler.codec.spdy.SpdyFrameCodec;
import io.netty.handler.codec.spdy.SpdyGoAwayFrame;
import io.netty.handler.codec.spdy.SpdyHeaders;
import io.netty.handler.codec.spdy.SpdyHeadersFrame;
import io.netty.handler.codec.spdy.SpdyProtocolException;
import io.netty.handler.codec.spdy.SpdyRstStreamFrame;
import io.netty.handler.codec.spdy.SpdySessionHandler;
import io.netty.handler.codec.spdy.SpdyStreamStatus;
import io.netty.handler.codec.spdy.SpdySynStreamFrame;
import io.netty.handler.codec.spdy.SpdyVersion;
import io.netty.handler.ssl.ApplicationProtocolConfig;
import io.netty.handler.ssl.ApplicationProtocolNegotiationHandler;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslProvider;
import io.netty.util.ReferenceCountUtil;

import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * SPDY/3.1 file server on Netty's SpdyFrameCodec + SpdySessionHandler, with the
 * command-line contract of interop/server.js:
 *
 * <pre>
 *   server [--host 127.0.0.1] [--port 0] [--tls | --plain] --root DIR
 *          [--protocols spdy/3.1] [--auto-spdy31] [--reset-path PATH]... [--push PAGE=P1,P2]...
 *          [--verbose]
 * </pre>
 *
 * First stdout line: {@code listening on HOST:PORT}.
 */
final class PeerServer {
    private static final String NAME = "netty-spdy server";

    private String host = "127.0.0.1";
    private int port = 0;
    private boolean tls = false;
    private Path root;
    private final List<String> resetPaths = new ArrayList<>();
    private final Map<String, List<String>> push = new LinkedHashMap<>();
    private boolean verbose = false;

    private PeerServer() {
    }

    static void usage(String msg) {
        if (msg != null) {
            System.err.println("netty-peer server: " + msg);
        }
        System.err.println("usage: java -jar netty-peer.jar server [--host H] [--port N] [--tls|--plain] --root DIR "
                + "[--protocols spdy/3.1] [--auto-spdy31] [--reset-path PATH]... [--push PAGE=P1,P2]... [--verbose]");
        System.exit(2);
    }

    static void main(String[] argv) {
        PeerServer s = new PeerServer();
        s.parseArgs(argv);
        try {
            s.run();
        } catch (Exception e) {
            System.err.println("netty-peer server: " + e);
            System.exit(1);
        }
    }

    private void parseArgs(String[] argv) {
        boolean resetGiven = false;
        boolean pushGiven = false;
        for (int i = 0; i < argv.length; i++) {
            String a = argv[i];
            switch (a) {
                case "--host":
                    host = value(argv, ++i, a);
                    break;
                case "--port":
                    try {
                        port = Integer.parseInt(value(argv, ++i, a));
                    } catch (NumberFormatException e) {
                        usage("bad --port");
                    }
                    break;
                case "--tls":
                    tls = true;
                    break;
                case "--plain":
                    tls = false;
                    break;
                case "--root":
                    root = Paths.get(value(argv, ++i, a)).toAbsolutePath().normalize();
                    break;
                case "--protocols": {
                    List<String> dropped = new ArrayList<>();
                    boolean has31 = false;
                    for (String p : value(argv, ++i, a).split(",")) {
                        if (p.isEmpty()) {
                            continue;
                        }
                        if (p.equals(Util.PROTOCOL)) {
                            has31 = true;
                        } else {
                            dropped.add(p);
                        }
                    }
                    if (!has31) {
                        usage("--protocols must include spdy/3.1: this Netty peer speaks only spdy/3.1");
                    }
                    if (!dropped.isEmpty()) {
                        System.err.println("netty-peer server: ignoring " + String.join(",", dropped)
                                + " (this Netty peer speaks only spdy/3.1)");
                    }
                    break;
                }
                case "--auto-spdy31":
                    // Netty's session handler is always SPDY/3.1 here; accepted for compatibility.
                    break;
                case "--reset-path":
                    resetPaths.add(value(argv, ++i, a));
                    resetGiven = true;
                    break;
                case "--push": {
                    String spec = value(argv, ++i, a);
                    int eq = spec.indexOf('=');
                    if (eq <= 0) {
                        usage("--push wants PAGE=P1,P2");
                    }
                    List<String> list = new ArrayList<>();
                    for (String p : spec.substring(eq + 1).split(",")) {
                        if (!p.isEmpty()) {
                            list.add(p);
                        }
                    }
                    push.put(spec.substring(0, eq), list);
                    pushGiven = true;
                    break;
                }
                case "--verbose":
                case "-v":
                    verbose = true;
                    break;
                case "--help":
                case "-h":
                    usage(null);
                    break;
                default:
                    usage("unknown argument " + a);
            }
        }
        if (root == null) {
            usage("--root is required");
        }
        if (!resetGiven) {
            resetPaths.add("/reset");
        }
        if (!pushGiven) {
            push.put("/pushed-page.html", List.of("/push.css"));
        }
    }

    private static String value(String[] argv, int i, String name) {
        if (i >= argv.length) {
            usage(name + " needs a value");
        }
        return argv[i];
    }

    private void log(String line) {
        if (verbose) {
            FrameLogger.log(NAME, line);
        }
    }

    private void run() throws Exception {
        SslContext ssl = null;
        if (tls) {
            File certDir = certDir();
            ssl = SslContextBuilder.forServer(new File(certDir, "cert.pem"), new File(certDir, "key.pem"))
                    .sslProvider(SslProvider.JDK)
                    .applicationProtocolConfig(new ApplicationProtocolConfig(
                            ApplicationProtocolConfig.Protocol.ALPN,
                            ApplicationProtocolConfig.SelectorFailureBehavior.NO_ADVERTISE,
                            ApplicationProtocolConfig.SelectedListenerFailureBehavior.ACCEPT,
                            Util.PROTOCOL))
                    .build();
        }
        final SslContext sslCtx = ssl;
        EventLoopGroup boss = new NioEventLoopGroup(1);
        EventLoopGroup workers = new NioEventLoopGroup(2);
        ServerBootstrap b = new ServerBootstrap()
                .group(boss, workers)
                .channel(NioServerSocketChannel.class)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        if (sslCtx == null) {
                            addSpdy(ch.pipeline());
                            return;
                        }
                        ch.pipeline().addLast(sslCtx.newHandler(ch.alloc()));
                        ch.pipeline().addLast(new ApplicationProtocolNegotiationHandler("none") {
                            @Override
                            protected void configurePipeline(ChannelHandlerContext ctx, String protocol) {
                                log("TLS connection, ALPN: " + protocol);
                                if (Util.PROTOCOL.equals(protocol)) {
                                    addSpdy(ctx.pipeline());
                                } else {
                                    System.err.println("netty-peer server: closing TLS connection: ALPN "
                                            + protocol + " (only spdy/3.1 is served)");
                                    ctx.close();
                                }
                            }

                            @Override
                            protected void handshakeFailure(ChannelHandlerContext ctx, Throwable cause) {
                                log("TLS handshake failed: " + cause);
                                ctx.close();
                            }
                        });
                    }
                });
        Channel ch = b.bind(host, port).sync().channel();
        InetSocketAddress addr = (InetSocketAddress) ch.localAddress();
        Util.OUT.println("listening on " + addr.getAddress().getHostAddress() + ":" + addr.getPort());
        Util.OUT.flush();
        System.err.println(NAME + ": " + (tls ? "TLS, ALPN spdy/3.1" : "plain") + ", netty "
                + nettyVersion() + ", root " + root);
        installSignals();
        ch.closeFuture().sync();
    }

    static String nettyVersion() {
        io.netty.util.Version v = io.netty.util.Version.identify().get("netty-codec-http");
        return v == null ? "?" : v.artifactVersion();
    }

    private static void installSignals() {
        try {
            sun.misc.Signal.handle(new sun.misc.Signal("TERM"), sig -> Runtime.getRuntime().halt(0));
            sun.misc.Signal.handle(new sun.misc.Signal("INT"), sig -> Runtime.getRuntime().halt(0));
        } catch (Throwable ignored) {
            // default JVM handling then
        }
    }

    /** interop/certs, found next to the jar (interop/netty/target/netty-peer.jar) or from the cwd. */
    private static File certDir() throws IOException {
        List<File> candidates = new ArrayList<>();
        try {
            File jar = new File(PeerServer.class.getProtectionDomain().getCodeSource().getLocation().toURI());
            File dir = jar.getParentFile();
            for (int up = 0; up < 4 && dir != null; up++, dir = dir.getParentFile()) {
                candidates.add(new File(dir, "certs"));
                candidates.add(new File(dir, "interop/certs"));
            }
        } catch (Exception ignored) {
            // fall through to the cwd candidates
        }
        candidates.add(new File("interop/certs"));
        candidates.add(new File("certs"));
        candidates.add(new File("../certs"));
        for (File c : candidates) {
            if (new File(c, "cert.pem").isFile() && new File(c, "key.pem").isFile()) {
                return c;
            }
        }
        throw new IOException("cannot find interop/certs/cert.pem and key.pem");
    }

    private void addSpdy(ChannelPipeline p) {
        p.addLast("spdy-codec", new SpdyFrameCodec(SpdyVersion.SPDY_3_1));
        if (verbose) {
            p.addLast("frame-logger", new FrameLogger(NAME));
        }
        p.addLast("spdy-session", new SpdySessionHandler(SpdyVersion.SPDY_3_1, true));
        p.addLast("files", new Handler());
    }

    // ------------------------------------------------------------------------------

    private static final Map<String, String> TYPES = Map.of(
            ".html", "text/html",
            ".css", "text/css",
            ".js", "application/javascript",
            ".json", "application/json",
            ".txt", "text/plain",
            ".png", "image/png",
            ".jpg", "image/jpeg",
            ".gif", "image/gif");

    static String contentType(String p) {
        int slash = p.lastIndexOf('/');
        int dot = p.lastIndexOf('.');
        if (dot > slash) {
            String t = TYPES.get(p.substring(dot).toLowerCase(Locale.ROOT));
            if (t != null) {
                return t;
            }
        }
        return "application/octet-stream";
    }

    /** Maps a URL path to a file under the root, or null when it is malformed or escapes the root. */
    Path resolveFile(String urlPath) {
        int q = urlPath.indexOf('?');
        String decoded = Util.percentDecode(q >= 0 ? urlPath.substring(0, q) : urlPath);
        if (decoded == null || decoded.indexOf('\0') >= 0) {
            return null;
        }
        // Resolve dot segments ourselves: ".." above the root is an escape (400).
        List<String> parts = new ArrayList<>();
        for (String seg : decoded.split("/")) {
            if (seg.isEmpty() || seg.equals(".")) {
                continue;
            }
            if (seg.equals("..")) {
                if (parts.isEmpty()) {
                    return null;
                }
                parts.remove(parts.size() - 1);
                continue;
            }
            parts.add(seg);
        }
        Path full = root;
        try {
            for (String seg : parts) {
                full = full.resolve(seg);
            }
        } catch (Exception e) {
            return null;
        }
        full = full.normalize();
        if (!full.startsWith(root)) {
            return null;
        }
        return full;
    }

    /** One request stream's state (only kept while its request body is still arriving). */
    private static final class Request {
        final int id;
        final String method;
        final boolean echo; // collect the body and echo it
        CompositeByteBuf body;

        Request(int id, String method, boolean echo) {
            this.id = id;
            this.method = method;
            this.echo = echo;
        }
    }

    /** Per-connection request handler, after SpdySessionHandler. */
    private final class Handler extends ChannelInboundHandlerAdapter {
        private final Map<Integer, Request> requests = new HashMap<>();
        private int nextPushId = 2;

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            try {
                if (msg instanceof SpdySynStreamFrame) {
                    onSynStream(ctx, (SpdySynStreamFrame) msg);
                } else if (msg instanceof SpdyDataFrame) {
                    SpdyDataFrame f = (SpdyDataFrame) msg;
                    Request r = requests.get(f.streamId());
                    if (r != null) {
                        if (r.echo) {
                            r.body.addComponent(true, f.content().retain());
                        }
                        if (f.isLast()) {
                            endOfRequest(ctx, r);
                        }
                    }
                } else if (msg instanceof SpdyRstStreamFrame) {
                    SpdyRstStreamFrame f = (SpdyRstStreamFrame) msg;
                    log("stream " + f.streamId() + " reset: " + f.status());
                    drop(f.streamId());
                } else if (msg instanceof SpdyHeadersFrame) {
                    // HEADERS (trailers) on a request stream
                    SpdyHeadersFrame f = (SpdyHeadersFrame) msg;
                    Request r = requests.get(f.streamId());
                    if (r != null && f.isLast()) {
                        endOfRequest(ctx, r);
                    }
                } else if (msg instanceof SpdyGoAwayFrame) {
                    log("GOAWAY from client: " + ((SpdyGoAwayFrame) msg).status());
                }
                // SETTINGS, PING, WINDOW_UPDATE: SpdySessionHandler did what is needed.
            } finally {
                ReferenceCountUtil.release(msg);
            }
        }

        private void drop(int id) {
            Request r = requests.remove(id);
            if (r != null && r.body != null) {
                r.body.release();
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            for (Integer id : new ArrayList<>(requests.keySet())) {
                drop(id);
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            if (cause instanceof SpdyProtocolException) {
                // SpdySessionHandler answers these with GOAWAY PROTOCOL_ERROR itself.
                System.err.println("netty-peer server: SPDY protocol error: " + cause.getMessage());
                return;
            }
            if (cause instanceof IOException) {
                log("connection error: " + cause.getMessage());
            } else {
                System.err.println("netty-peer server: " + cause);
            }
            ctx.channel().close();
        }

        private void onSynStream(ChannelHandlerContext ctx, SpdySynStreamFrame f) {
            int id = f.streamId();
            SpdyHeaders h = f.headers();
            String method = h.getAsString(SpdyHeaders.HttpNames.METHOD);
            String path = h.getAsString(SpdyHeaders.HttpNames.PATH);
            log("spdy/3.1 stream " + id + " " + method + " " + path);
            if (method == null || path == null) {
                respondSimple(ctx, id, h, 400, "missing :method or :path\n");
                return;
            }
            String urlPath = path.split("\\?", 2)[0];

            if (resetPaths.contains(urlPath)) {
                log("resetting stream " + id + " (RST_STREAM CANCEL)");
                ctx.writeAndFlush(new DefaultSpdyRstStreamFrame(id, SpdyStreamStatus.CANCEL));
                return;
            }

            if (method.equals("POST") || method.equals("PUT")) {
                Request r = new Request(id, method, true);
                r.body = ctx.alloc().compositeBuffer(Integer.MAX_VALUE);
                requests.put(id, r);
                if (f.isLast()) {
                    endOfRequest(ctx, r);
                }
                return;
            }

            // GET/HEAD (and others): nothing to read but the FIN.
            if (!f.isLast()) {
                requests.put(id, new Request(id, method, false));
            }
            if (!method.equals("GET") && !method.equals("HEAD")) {
                respondSimple(ctx, id, h, 405, "method not allowed\n");
                return;
            }
            Path file = resolveFile(urlPath);
            if (file == null) {
                respondSimple(ctx, id, h, 400, "bad path\n");
                return;
            }
            if (!Files.isRegularFile(file)) {
                respondSimple(ctx, id, h, 404, "not found\n");
                return;
            }
            List<String> pushes = push.get(urlPath);
            if (pushes != null) {
                for (String p : pushes) {
                    pushResource(ctx, id, h, p);
                }
            }
            BodyPump.Source src;
            long size;
            try {
                src = BodyPump.of(file);
                size = src.remaining();
            } catch (IOException e) {
                log("read error " + file + ": " + e.getMessage());
                ctx.writeAndFlush(new DefaultSpdyRstStreamFrame(id, SpdyStreamStatus.INTERNAL_ERROR));
                return;
            }
            boolean head = method.equals("HEAD");
            DefaultSpdySynReplyFrame reply = new DefaultSpdySynReplyFrame(id);
            status(reply.headers(), 200);
            reply.headers().set("content-type", contentType(file.toString()));
            reply.headers().set("content-length", Long.toString(size));
            reply.headers().set("x-spdy-version", Util.PROTOCOL);
            if (head || size == 0) {
                src.close();
                reply.setLast(true);
                ctx.writeAndFlush(reply);
                return;
            }
            ctx.write(reply);
            new BodyPump(ctx, id, src, err -> {
                if (err != null) {
                    log("stream " + id + ": body not sent: " + err);
                }
            }).start();
        }

        /** Opens a pushed stream (SYN_STREAM, unidirectional, associated to the request) and streams the file. */
        private void pushResource(ChannelHandlerContext ctx, int assoc, SpdyHeaders reqHeaders, String p) {
            Path file = resolveFile(p);
            if (file == null || !Files.isRegularFile(file)) {
                log("push source missing " + p);
                return;
            }
            BodyPump.Source src;
            try {
                src = BodyPump.of(file);
            } catch (IOException e) {
                log("push source unreadable " + p + ": " + e.getMessage());
                return;
            }
            int pushId = nextPushId;
            nextPushId += 2;
            long size = src.remaining();
            DefaultSpdySynStreamFrame syn = new DefaultSpdySynStreamFrame(pushId, assoc, (byte) 0);
            syn.setUnidirectional(true);
            SpdyHeaders h = syn.headers();
            String scheme = reqHeaders.getAsString(SpdyHeaders.HttpNames.SCHEME);
            h.set(SpdyHeaders.HttpNames.SCHEME, scheme != null ? scheme : (tls ? "https" : "http"));
            String host = reqHeaders.getAsString(SpdyHeaders.HttpNames.HOST);
            if (host != null) {
                h.set(SpdyHeaders.HttpNames.HOST, host);
            }
            h.set(SpdyHeaders.HttpNames.PATH, p);
            h.set(SpdyHeaders.HttpNames.METHOD, "GET");
            status(h, 200);
            h.set("content-type", contentType(p));
            h.set("content-length", Long.toString(size));
            if (size == 0) {
                syn.setLast(true);
            }
            ChannelFuture fut = ctx.write(syn);
            if (fut.isDone() && !fut.isSuccess()) {
                log("push " + p + " failed: " + fut.cause());
                src.close();
                return;
            }
            log("pushing " + p + " (" + size + " bytes) on stream " + pushId + ", associated to " + assoc);
            if (size == 0) {
                src.close();
                ctx.flush();
                return;
            }
            new BodyPump(ctx, pushId, src, err -> {
                if (err != null) {
                    log("push " + p + " on stream " + pushId + " not sent: " + err);
                } else {
                    log("pushed " + p + " " + size + " bytes on stream " + pushId);
                }
            }).start();
        }

        private void endOfRequest(ChannelHandlerContext ctx, Request r) {
            requests.remove(r.id);
            if (!r.echo) {
                return;
            }
            CompositeByteBuf body = r.body;
            r.body = null;
            int len = body.readableBytes();
            log("echo " + len + " bytes on stream " + r.id);
            DefaultSpdySynReplyFrame reply = new DefaultSpdySynReplyFrame(r.id);
            status(reply.headers(), 200);
            reply.headers().set("content-type", "application/octet-stream");
            reply.headers().set("content-length", Integer.toString(len));
            reply.headers().set("x-spdy-version", Util.PROTOCOL);
            if (len == 0) {
                body.release();
                reply.setLast(true);
                ctx.writeAndFlush(reply);
                return;
            }
            ctx.write(reply);
            int id = r.id;
            new BodyPump(ctx, id, BodyPump.of(body), err -> {
                if (err != null) {
                    log("stream " + id + ": echo not sent: " + err);
                }
            }).start();
        }

        private void respondSimple(ChannelHandlerContext ctx, int id, SpdyHeaders req, int code, String text) {
            byte[] b = text.getBytes(StandardCharsets.UTF_8);
            DefaultSpdySynReplyFrame reply = new DefaultSpdySynReplyFrame(id);
            status(reply.headers(), code);
            reply.headers().set("content-type", "text/plain");
            reply.headers().set("content-length", Integer.toString(b.length));
            ctx.write(reply);
            DefaultSpdyDataFrame data = new DefaultSpdyDataFrame(id, Unpooled.wrappedBuffer(b));
            data.setLast(true);
            ctx.writeAndFlush(data);
        }
    }

    static void status(SpdyHeaders h, int code) {
        h.set(SpdyHeaders.HttpNames.STATUS, HttpResponseStatus.valueOf(code).toString());
        h.set(SpdyHeaders.HttpNames.VERSION, "HTTP/1.1");
    }
}
