package speedy.interop.netty;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.spdy.DefaultSpdySynStreamFrame;
import io.netty.handler.codec.spdy.SpdyDataFrame;
import io.netty.handler.codec.spdy.SpdyFrameCodec;
import io.netty.handler.codec.spdy.SpdyGoAwayFrame;
import io.netty.handler.codec.spdy.SpdyHeaders;
import io.netty.handler.codec.spdy.SpdyHeadersFrame;
import io.netty.handler.codec.spdy.SpdyProtocolException;
import io.netty.handler.codec.spdy.SpdyRstStreamFrame;
import io.netty.handler.codec.spdy.SpdySessionHandler;
import io.netty.handler.codec.spdy.SpdySynReplyFrame;
import io.netty.handler.codec.spdy.SpdySynStreamFrame;
import io.netty.handler.codec.spdy.SpdyVersion;
import io.netty.handler.ssl.ApplicationProtocolConfig;
import io.netty.handler.ssl.ApplicationProtocolNegotiationHandler;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslProvider;
import io.netty.handler.ssl.util.InsecureTrustManagerFactory;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.ScheduledFuture;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * SPDY/3.1 client on Netty's SpdyFrameCodec + SpdySessionHandler, with the command-line
 * contract of interop/client.js:
 *
 * <pre>
 *   client URL... [--protocol spdy/3.1] [--concurrency N] [--post FILE]
 *                 [--expect-error URL]... [--timeout SECONDS] [--verbose]
 * </pre>
 *
 * All URLs share one origin and one SPDY session. One JSON line per response
 * {url,status,protocol,bytes,sha256,pushed:false,elapsed_ms}, per pushed stream
 * {url,status,protocol,bytes,sha256,pushed:true,associated}, per failure {url,error}.
 * Exit 0 when every failure was expected and every expected error happened, else 1.
 */
final class PeerClient {
    private static final String NAME = "netty-spdy client";

    // options
    private final List<String> urlArgs = new ArrayList<>();
    private String protocol = Util.PROTOCOL;
    private int concurrency = 1;
    private String post;
    private final List<String> expectError = new ArrayList<>();
    private double timeout = 60;
    private boolean verbose;

    // target
    private final List<Target> targets = new ArrayList<>();
    private String origin;
    private String authority;
    private String scheme;
    private String host;
    private int port;
    private boolean secure;
    private byte[] postBody;

    // session state, only touched on the event loop
    private EventLoop loop;
    private ChannelHandlerContext ctx;
    private boolean sessionUp;
    private String sessionError;
    private String goAway;
    private boolean timedOut;
    private int nextStreamId = 1;
    private final Map<Integer, Req> active = new LinkedHashMap<>();
    private final Map<Integer, Push> pushes = new LinkedHashMap<>();
    private final ArrayDeque<Target> queue = new ArrayDeque<>();
    private final Set<String> seenErrors = new HashSet<>();
    private int failures;
    private boolean finished;
    private ScheduledFuture<?> timer;
    private final CompletableFuture<Integer> exit = new CompletableFuture<>();

    private static final class Target {
        final URI uri;
        final String href;

        Target(URI uri, String href) {
            this.uri = uri;
            this.href = href;
        }
    }

    private PeerClient() {
    }

    static void usage(String msg) {
        if (msg != null) {
            System.err.println("netty-peer client: " + msg);
        }
        System.err.println("usage: java -jar netty-peer.jar client URL... [--protocol spdy/3.1] [--concurrency N] "
                + "[--post FILE] [--expect-error URL]... [--timeout SECONDS] [--verbose]");
        System.exit(2);
    }

    private static String value(String[] argv, int i, String name) {
        if (i >= argv.length) {
            usage(name + " needs a value");
        }
        return argv[i];
    }

    /** node's URL#href for the forms used here: an empty path becomes "/". */
    static String href(URI u) {
        String s = u.toString();
        if (u.getRawPath() == null || u.getRawPath().isEmpty()) {
            String auth = u.getScheme() + "://" + u.getRawAuthority();
            s = auth + "/" + s.substring(auth.length());
        }
        return s;
    }

    private static URI parseUrl(String s) {
        try {
            URI u = new URI(s);
            if (u.getScheme() == null || u.getHost() == null) {
                usage("bad URL " + s);
            }
            String sc = u.getScheme().toLowerCase();
            if (!sc.equals("http") && !sc.equals("https")) {
                usage("URL scheme must be http or https: " + s);
            }
            return u;
        } catch (URISyntaxException e) {
            usage("bad URL " + s + ": " + e.getMessage());
            return null;
        }
    }

    private void parseArgs(String[] argv) {
        for (int i = 0; i < argv.length; i++) {
            String a = argv[i];
            switch (a) {
                case "--protocol":
                    protocol = value(argv, ++i, a);
                    break;
                case "--concurrency":
                case "-c":
                    try {
                        concurrency = Integer.parseInt(value(argv, ++i, a));
                    } catch (NumberFormatException e) {
                        usage("bad --concurrency");
                    }
                    break;
                case "--post":
                case "--data":
                    post = value(argv, ++i, a);
                    break;
                case "--expect-error":
                    expectError.add(value(argv, ++i, a));
                    break;
                case "--timeout":
                    try {
                        timeout = Double.parseDouble(value(argv, ++i, a));
                    } catch (NumberFormatException e) {
                        usage("bad --timeout");
                    }
                    break;
                case "--verbose":
                case "-v":
                    verbose = true;
                    break;
                case "--help":
                case "-h":
                    usage(null);
                    break;
                default:
                    if (a.startsWith("-")) {
                        usage("unknown argument " + a);
                    }
                    urlArgs.add(a);
            }
        }
        if (urlArgs.isEmpty()) {
            usage("no URL");
        }
        if (concurrency < 1) {
            usage("bad --concurrency");
        }
        if (!(timeout > 0)) {
            usage("bad --timeout");
        }
        if (!protocol.equals(Util.PROTOCOL)) {
            usage("--protocol " + protocol + " is not supported: this Netty peer speaks only spdy/3.1");
        }
        for (String s : urlArgs) {
            URI u = parseUrl(s);
            targets.add(new Target(u, href(u)));
        }
        URI first = targets.get(0).uri;
        secure = first.getScheme().equalsIgnoreCase("https");
        scheme = secure ? "https" : "http";
        host = first.getHost();
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        port = first.getPort() >= 0 ? first.getPort() : (secure ? 443 : 80);
        String auth = first.getRawAuthority();
        int at = auth.lastIndexOf('@');
        authority = at >= 0 ? auth.substring(at + 1) : auth;
        origin = scheme + "://" + authority;
        for (Target t : targets) {
            URI u = t.uri;
            int p = u.getPort() >= 0 ? u.getPort() : (u.getScheme().equalsIgnoreCase("https") ? 443 : 80);
            if (!u.getScheme().equalsIgnoreCase(scheme) || !u.getHost().equalsIgnoreCase(first.getHost()) || p != port) {
                usage("all URLs must have the same origin (" + t.href + ")");
            }
        }
        for (int i = 0; i < expectError.size(); i++) {
            try {
                expectError.set(i, href(new URI(expectError.get(i))));
            } catch (URISyntaxException e) {
                // compare as given
            }
        }
        if (post != null) {
            try {
                postBody = Files.readAllBytes(Paths.get(post));
            } catch (IOException e) {
                usage("cannot read --post file: " + e.getMessage());
            }
        }
    }

    static void main(String[] argv) {
        PeerClient c = new PeerClient();
        c.parseArgs(argv);
        int code;
        try {
            code = c.run();
        } catch (Exception e) {
            System.err.println("netty-peer client: " + e);
            code = 1;
        }
        Util.OUT.flush();
        System.err.flush();
        Runtime.getRuntime().halt(code);
    }

    private void log(String line) {
        if (verbose) {
            FrameLogger.log(NAME, line);
        }
    }

    private int run() throws Exception {
        SslContext ssl = null;
        if (secure) {
            ssl = SslContextBuilder.forClient()
                    .sslProvider(SslProvider.JDK)
                    .trustManager(InsecureTrustManagerFactory.INSTANCE)
                    .applicationProtocolConfig(new ApplicationProtocolConfig(
                            ApplicationProtocolConfig.Protocol.ALPN,
                            ApplicationProtocolConfig.SelectorFailureBehavior.NO_ADVERTISE,
                            ApplicationProtocolConfig.SelectedListenerFailureBehavior.ACCEPT,
                            protocol))
                    .build();
        }
        final SslContext sslCtx = ssl;
        EventLoopGroup group = new NioEventLoopGroup(1);
        loop = group.next();
        queue.addAll(targets);
        Bootstrap b = new Bootstrap()
                .group(group)
                .channel(NioSocketChannel.class)
                .option(ChannelOption.TCP_NODELAY, true)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) Math.min(Integer.MAX_VALUE, timeout * 1000))
                .handler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        if (sslCtx == null) {
                            addSpdy(ch.pipeline());
                            return;
                        }
                        boolean ip = host.matches("[0-9.]+") || host.contains(":");
                        ch.pipeline().addLast(ip ? sslCtx.newHandler(ch.alloc())
                                : sslCtx.newHandler(ch.alloc(), host, port));
                        ch.pipeline().addLast(new ApplicationProtocolNegotiationHandler("none") {
                            @Override
                            protected void configurePipeline(ChannelHandlerContext c, String proto) {
                                log("TLS up, ALPN: " + proto);
                                if (protocol.equals(proto)) {
                                    addSpdy(c.pipeline());
                                } else {
                                    failSession("ALPN negotiated " + proto + ", not " + protocol);
                                    c.close();
                                }
                            }

                            @Override
                            protected void handshakeFailure(ChannelHandlerContext c, Throwable cause) {
                                failSession("TLS handshake: " + cause.getMessage());
                                c.close();
                            }
                        });
                    }
                });
        loop.execute(() -> timer = loop.schedule(this::onTimeout, (long) (timeout * 1000), TimeUnit.MILLISECONDS));
        ChannelFuture cf = b.connect(host, port);
        cf.addListener(f -> {
            if (!f.isSuccess()) {
                Throwable t = f.cause();
                failSession("connect: " + (t.getMessage() != null ? t.getMessage() : t.toString()));
            }
        });
        int code = exit.get();
        group.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS);
        return code;
    }

    private void addSpdy(ChannelPipeline p) {
        p.addLast("spdy-codec", new SpdyFrameCodec(SpdyVersion.SPDY_3_1));
        if (verbose) {
            p.addLast("frame-logger", new FrameLogger(NAME));
        }
        p.addLast("spdy-session", new SpdySessionHandler(SpdyVersion.SPDY_3_1, false));
        p.addLast("client", new Handler());
    }

    // ------------------------------------------------------------------------------

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A request stream. */
    private final class Req {
        final int id;
        final Target target;
        final long started = System.nanoTime();
        final MessageDigest hash = sha256();
        long bytes;
        Integer status;
        boolean done;

        Req(int id, Target target) {
            this.id = id;
            this.target = target;
        }

        void fail(String msg) {
            if (done) {
                return;
            }
            done = true;
            active.remove(id);
            seenErrors.add(target.href);
            if (!expectError.contains(target.href)) {
                failures++;
            }
            Map<String, Object> o = Util.obj();
            o.put("url", target.href);
            o.put("error", msg);
            Util.emit(o);
            next();
        }

        void succeed() {
            if (done) {
                return;
            }
            done = true;
            active.remove(id);
            Map<String, Object> o = Util.obj();
            o.put("url", target.href);
            o.put("status", status);
            o.put("protocol", Util.PROTOCOL);
            o.put("bytes", bytes);
            o.put("sha256", Util.hex(hash.digest()));
            o.put("pushed", false);
            o.put("elapsed_ms", (System.nanoTime() - started) / 1_000_000L);
            Util.emit(o);
            next();
        }

        void end() {
            if (status == null) {
                fail("stream ended without a response");
            } else {
                succeed();
            }
        }
    }

    /** A pushed stream. */
    private final class Push {
        final int id;
        final int associated;
        final String url;
        final MessageDigest hash = sha256();
        long bytes;
        Integer status;
        boolean done;

        Push(int id, int associated, String url) {
            this.id = id;
            this.associated = associated;
            this.url = url;
        }

        void finish() {
            if (done) {
                return;
            }
            done = true;
            pushes.remove(id);
            Map<String, Object> o = Util.obj();
            o.put("url", url);
            o.put("status", status);
            o.put("protocol", Util.PROTOCOL);
            o.put("bytes", bytes);
            o.put("sha256", Util.hex(hash.digest()));
            o.put("pushed", true);
            o.put("associated", associated);
            Util.emit(o);
            maybeDone();
        }

        void fail(String msg) {
            if (done) {
                return;
            }
            done = true;
            pushes.remove(id);
            failures++;
            Map<String, Object> o = Util.obj();
            o.put("url", url);
            o.put("error", msg);
            o.put("pushed", true);
            Util.emit(o);
            maybeDone();
        }
    }

    private String pushUrl(String p) {
        if (p == null) {
            return origin + "/";
        }
        if (p.matches("(?i)^[a-z]+://.*")) {
            return p;
        }
        return origin + (p.startsWith("/") ? p : "/" + p);
    }

    private void failSession(String msg) {
        if (sessionError != null) {
            return;
        }
        sessionError = msg;
        log("session error: " + msg);
        for (Req r : new ArrayList<>(active.values())) {
            r.fail("session error: " + msg);
        }
        for (Push p : new ArrayList<>(pushes.values())) {
            p.fail("pushed stream error: session error: " + msg);
        }
        next();
    }

    private void next() {
        if (!sessionUp && sessionError == null) {
            return;
        }
        while (!queue.isEmpty() && active.size() < concurrency) {
            if (sessionError != null || goAway != null || timedOut) {
                Target t = queue.poll();
                failures++;
                Map<String, Object> o = Util.obj();
                o.put("url", t.href);
                o.put("error", timedOut ? "timeout: never sent"
                        : "session error: " + (sessionError != null ? sessionError : goAway));
                Util.emit(o);
                continue;
            }
            startOne(queue.poll());
        }
        maybeDone();
    }

    private void startOne(Target t) {
        int id = nextStreamId;
        nextStreamId += 2;
        Req r = new Req(id, t);
        active.put(id, r);
        DefaultSpdySynStreamFrame syn = new DefaultSpdySynStreamFrame(id, 0, (byte) 0);
        SpdyHeaders h = syn.headers();
        URI u = t.uri;
        String path = (u.getRawPath() == null || u.getRawPath().isEmpty()) ? "/" : u.getRawPath();
        if (u.getRawQuery() != null) {
            path += "?" + u.getRawQuery();
        }
        h.set(SpdyHeaders.HttpNames.METHOD, postBody == null ? "GET" : "POST");
        h.set(SpdyHeaders.HttpNames.PATH, path);
        h.set(SpdyHeaders.HttpNames.VERSION, "HTTP/1.1");
        h.set(SpdyHeaders.HttpNames.HOST, authority);
        h.set(SpdyHeaders.HttpNames.SCHEME, scheme);
        h.set("accept", "*/*");
        h.set("user-agent", "netty-spdy interop client");
        if (postBody != null) {
            h.set("content-length", Integer.toString(postBody.length));
            h.set("content-type", "application/octet-stream");
        }
        boolean noBody = postBody == null || postBody.length == 0;
        syn.setLast(noBody);
        log("stream " + id + " " + (postBody == null ? "GET" : "POST") + " " + t.href);
        ChannelFuture f = ctx.writeAndFlush(syn);
        if (f.isDone() && !f.isSuccess()) {
            r.fail("request error: SYN_STREAM refused by Netty's session handler: " + f.cause());
            return;
        }
        f.addListener(fut -> {
            if (!fut.isSuccess()) {
                r.fail("request error: " + fut.cause());
            }
        });
        if (!noBody) {
            new BodyPump(ctx, id, BodyPump.of(Unpooled.wrappedBuffer(postBody)), err -> {
                if (err != null) {
                    r.fail("request body not sent: " + err);
                } else {
                    log("stream " + id + ": request body sent (" + postBody.length + " bytes)");
                }
            }).start();
        }
    }

    private void onTimeout() {
        if (finished) {
            return;
        }
        timedOut = true; // from now on next() reports queued URLs as never sent
        for (Req r : new ArrayList<>(active.values())) {
            r.fail("timeout after " + fmt(timeout) + " s");
        }
        while (!queue.isEmpty()) {
            Target t = queue.poll();
            failures++;
            Map<String, Object> o = Util.obj();
            o.put("url", t.href);
            o.put("error", "timeout: never sent");
            Util.emit(o);
        }
        if (!pushes.isEmpty()) {
            System.err.println("netty-peer client: " + pushes.size() + " pushed stream(s) unfinished at timeout");
            failures++;
            for (Push p : pushes.values()) {
                p.done = true;
            }
            pushes.clear();
        }
        maybeDone();
    }

    private static String fmt(double d) {
        return d == Math.rint(d) ? Long.toString((long) d) : Double.toString(d);
    }

    private void maybeDone() {
        if (finished) {
            return;
        }
        if (!queue.isEmpty() || !active.isEmpty() || !pushes.isEmpty()) {
            return;
        }
        finished = true;
        for (String u : expectError) {
            if (!seenErrors.contains(u)) {
                System.err.println("netty-peer client: expected an error for " + u + " but it succeeded");
                failures++;
            }
        }
        if (timer != null) {
            timer.cancel(false);
        }
        int code = failures == 0 ? 0 : 1;
        // Close politely: Netty's SpdySessionHandler sends GOAWAY and closes the
        // connection once no stream is active; do not wait long for it.
        if (ctx != null && ctx.channel().isActive()) {
            Channel ch = ctx.channel();
            ch.close().addListener(f -> exit.complete(code));
            loop.schedule(() -> exit.complete(code), 300, TimeUnit.MILLISECONDS);
        } else {
            exit.complete(code);
        }
    }

    /** The session's frames, after SpdySessionHandler. */
    private final class Handler extends ChannelInboundHandlerAdapter {
        @Override
        public void handlerAdded(ChannelHandlerContext c) {
            if (c.channel().isActive()) {
                up(c);
            }
        }

        @Override
        public void channelActive(ChannelHandlerContext c) {
            up(c);
            c.fireChannelActive();
        }

        private void up(ChannelHandlerContext c) {
            if (sessionUp) {
                return;
            }
            ctx = c;
            sessionUp = true;
            log("session up, spdy/3.1, netty " + PeerServer.nettyVersion());
            next();
        }

        @Override
        public void channelInactive(ChannelHandlerContext c) {
            if (!finished) {
                failSession("connection closed");
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext c, Throwable cause) {
            if (cause instanceof SpdyProtocolException) {
                // SpdySessionHandler answers with GOAWAY PROTOCOL_ERROR and closes.
                System.err.println("netty-peer client: SPDY protocol error: " + cause.getMessage());
                return;
            }
            log("connection error: " + cause);
            failSession(cause.getMessage() != null ? cause.getMessage() : cause.toString());
            c.close();
        }

        @Override
        public void channelRead(ChannelHandlerContext c, Object msg) {
            try {
                read(msg);
            } finally {
                ReferenceCountUtil.release(msg);
            }
        }

        private void read(Object msg) {
            if (msg instanceof SpdyDataFrame) {
                SpdyDataFrame f = (SpdyDataFrame) msg;
                int id = f.streamId();
                Req r = active.get(id);
                if (r != null) {
                    r.bytes += f.content().readableBytes();
                    r.hash.update(f.content().nioBuffer());
                    if (f.isLast()) {
                        r.end();
                    }
                    return;
                }
                Push p = pushes.get(id);
                if (p != null) {
                    p.bytes += f.content().readableBytes();
                    p.hash.update(f.content().nioBuffer());
                    if (f.isLast()) {
                        p.finish();
                    }
                }
            } else if (msg instanceof SpdySynStreamFrame) {
                SpdySynStreamFrame f = (SpdySynStreamFrame) msg;
                SpdyHeaders h = f.headers();
                String path = h.getAsString(SpdyHeaders.HttpNames.PATH);
                Push p = new Push(f.streamId(), f.associatedStreamId(), pushUrl(path));
                p.status = Util.parseStatus(h.getAsString(SpdyHeaders.HttpNames.STATUS));
                log("push promise " + p.url + " stream " + p.id + " associated " + p.associated
                        + (f.isUnidirectional() ? "" : " (no FLAG_UNIDIRECTIONAL)"));
                if (sessionError != null || finished || timedOut) {
                    return;
                }
                pushes.put(p.id, p);
                if (f.isLast()) {
                    p.finish();
                }
            } else if (msg instanceof SpdySynReplyFrame) {
                SpdySynReplyFrame f = (SpdySynReplyFrame) msg;
                Req r = active.get(f.streamId());
                if (r == null) {
                    return;
                }
                r.status = Util.parseStatus(f.headers().getAsString(SpdyHeaders.HttpNames.STATUS));
                log("response " + f.streamId() + " " + f.headers().getAsString(SpdyHeaders.HttpNames.STATUS));
                if (f.isLast()) {
                    r.end();
                }
            } else if (msg instanceof SpdyHeadersFrame) {
                SpdyHeadersFrame f = (SpdyHeadersFrame) msg;
                Integer st = Util.parseStatus(f.headers().getAsString(SpdyHeaders.HttpNames.STATUS));
                Req r = active.get(f.streamId());
                if (r != null) {
                    if (r.status == null && st != null) {
                        r.status = st;
                    }
                    if (f.isLast()) {
                        r.end();
                    }
                    return;
                }
                Push p = pushes.get(f.streamId());
                if (p != null) {
                    if (p.status == null && st != null) {
                        p.status = st;
                    }
                    if (f.isLast()) {
                        p.finish();
                    }
                }
            } else if (msg instanceof SpdyRstStreamFrame) {
                SpdyRstStreamFrame f = (SpdyRstStreamFrame) msg;
                Req r = active.get(f.streamId());
                if (r != null) {
                    r.fail("stream reset: " + f.status());
                    return;
                }
                Push p = pushes.get(f.streamId());
                if (p != null) {
                    p.fail("pushed stream reset: " + f.status());
                }
            } else if (msg instanceof SpdyGoAwayFrame) {
                SpdyGoAwayFrame f = (SpdyGoAwayFrame) msg;
                log("GOAWAY last=" + f.lastGoodStreamId() + " status=" + f.status());
                if (finished) {
                    return;
                }
                goAway = "GOAWAY received (last " + f.lastGoodStreamId() + ", " + f.status() + ")";
                for (Req r : new ArrayList<>(active.values())) {
                    if (r.id > f.lastGoodStreamId()) {
                        r.fail("session error: " + goAway);
                    }
                }
                next();
            }
        }
    }
}
