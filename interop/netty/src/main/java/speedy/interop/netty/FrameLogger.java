package speedy.interop.netty;

import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.spdy.SpdyDataFrame;
import io.netty.handler.codec.spdy.SpdyGoAwayFrame;
import io.netty.handler.codec.spdy.SpdyHeadersFrame;
import io.netty.handler.codec.spdy.SpdyPingFrame;
import io.netty.handler.codec.spdy.SpdyRstStreamFrame;
import io.netty.handler.codec.spdy.SpdySettingsFrame;
import io.netty.handler.codec.spdy.SpdySynReplyFrame;
import io.netty.handler.codec.spdy.SpdySynStreamFrame;
import io.netty.handler.codec.spdy.SpdyWindowUpdateFrame;

import java.util.Iterator;
import java.util.Map;

/**
 * --verbose: logs every SPDY frame to stderr. It sits between SpdyFrameCodec and
 * SpdySessionHandler, so it shows what is really on the wire: frames as decoded before
 * the session handler sees them, and frames as the session handler emits them (its
 * WINDOW_UPDATEs, DATA split by flow control, GOAWAY on close, RST_STREAM on errors).
 */
final class FrameLogger extends ChannelDuplexHandler {
    private final String prefix;

    FrameLogger(String prefix) {
        this.prefix = prefix;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
        log(prefix, "recv " + describe(msg));
        ctx.fireChannelRead(msg);
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) throws Exception {
        log(prefix, "send " + describe(msg));
        ctx.write(msg, promise);
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) throws Exception {
        log(prefix, "connection up " + ctx.channel().localAddress() + " <-> " + ctx.channel().remoteAddress());
        ctx.fireChannelActive();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        log(prefix, "connection closed");
        ctx.fireChannelInactive();
    }

    static void log(String prefix, String line) {
        System.err.println("[" + prefix + "] " + line);
    }

    static String describe(Object msg) {
        StringBuilder sb = new StringBuilder();
        if (msg instanceof SpdyDataFrame) {
            SpdyDataFrame f = (SpdyDataFrame) msg;
            sb.append("DATA id=").append(f.streamId()).append(" len=").append(f.content().readableBytes());
            if (f.isLast()) {
                sb.append(" fin");
            }
        } else if (msg instanceof SpdySynStreamFrame) {
            SpdySynStreamFrame f = (SpdySynStreamFrame) msg;
            sb.append("SYN_STREAM id=").append(f.streamId());
            if (f.associatedStreamId() != 0) {
                sb.append(" associated=").append(f.associatedStreamId());
            }
            sb.append(" pri=").append(f.priority());
            if (f.isLast()) {
                sb.append(" fin");
            }
            if (f.isUnidirectional()) {
                sb.append(" unidirectional");
            }
            headers(sb, f);
        } else if (msg instanceof SpdySynReplyFrame) {
            SpdySynReplyFrame f = (SpdySynReplyFrame) msg;
            sb.append("SYN_REPLY id=").append(f.streamId());
            if (f.isLast()) {
                sb.append(" fin");
            }
            headers(sb, f);
        } else if (msg instanceof SpdyHeadersFrame) {
            SpdyHeadersFrame f = (SpdyHeadersFrame) msg;
            sb.append("HEADERS id=").append(f.streamId());
            if (f.isLast()) {
                sb.append(" fin");
            }
            headers(sb, f);
        } else if (msg instanceof SpdyRstStreamFrame) {
            SpdyRstStreamFrame f = (SpdyRstStreamFrame) msg;
            sb.append("RST_STREAM id=").append(f.streamId()).append(" status=").append(f.status());
        } else if (msg instanceof SpdySettingsFrame) {
            SpdySettingsFrame f = (SpdySettingsFrame) msg;
            sb.append("SETTINGS");
            if (f.clearPreviouslyPersistedSettings()) {
                sb.append(" clear");
            }
            sb.append(" {");
            boolean first = true;
            for (Integer id : f.ids()) {
                if (!first) {
                    sb.append(", ");
                }
                first = false;
                sb.append(settingName(id)).append('=').append(f.getValue(id));
                if (f.isPersistValue(id)) {
                    sb.append("(persist-value)");
                }
                if (f.isPersisted(id)) {
                    sb.append("(persisted)");
                }
            }
            sb.append('}');
        } else if (msg instanceof SpdyWindowUpdateFrame) {
            SpdyWindowUpdateFrame f = (SpdyWindowUpdateFrame) msg;
            sb.append("WINDOW_UPDATE id=").append(f.streamId()).append(" delta=").append(f.deltaWindowSize());
        } else if (msg instanceof SpdyPingFrame) {
            sb.append("PING id=").append(((SpdyPingFrame) msg).id());
        } else if (msg instanceof SpdyGoAwayFrame) {
            SpdyGoAwayFrame f = (SpdyGoAwayFrame) msg;
            sb.append("GOAWAY last=").append(f.lastGoodStreamId()).append(" status=").append(f.status());
        } else {
            sb.append(msg.getClass().getSimpleName());
        }
        return sb.toString();
    }

    private static void headers(StringBuilder sb, SpdyHeadersFrame f) {
        if (f.isInvalid()) {
            sb.append(" INVALID");
        }
        if (f.isTruncated()) {
            sb.append(" TRUNCATED");
        }
        sb.append(" {");
        Iterator<Map.Entry<String, String>> it = f.headers().iteratorAsString();
        boolean first = true;
        while (it.hasNext()) {
            Map.Entry<String, String> e = it.next();
            if (!first) {
                sb.append(", ");
            }
            first = false;
            sb.append(e.getKey()).append(": ").append(e.getValue());
        }
        sb.append('}');
    }

    private static String settingName(int id) {
        switch (id) {
            case SpdySettingsFrame.SETTINGS_UPLOAD_BANDWIDTH: return "UPLOAD_BANDWIDTH";
            case SpdySettingsFrame.SETTINGS_DOWNLOAD_BANDWIDTH: return "DOWNLOAD_BANDWIDTH";
            case SpdySettingsFrame.SETTINGS_ROUND_TRIP_TIME: return "ROUND_TRIP_TIME";
            case SpdySettingsFrame.SETTINGS_MAX_CONCURRENT_STREAMS: return "MAX_CONCURRENT_STREAMS";
            case SpdySettingsFrame.SETTINGS_CURRENT_CWND: return "CURRENT_CWND";
            case SpdySettingsFrame.SETTINGS_DOWNLOAD_RETRANS_RATE: return "DOWNLOAD_RETRANS_RATE";
            case SpdySettingsFrame.SETTINGS_INITIAL_WINDOW_SIZE: return "INITIAL_WINDOW_SIZE";
            case SpdySettingsFrame.SETTINGS_CLIENT_CERTIFICATE_VECTOR_SIZE: return "CLIENT_CERTIFICATE_VECTOR_SIZE";
            default: return "id" + id;
        }
    }
}
