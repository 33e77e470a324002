package speedy.interop.netty;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.spdy.DefaultSpdyDataFrame;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.function.Consumer;

/**
 * Streams a body as DATA frames through the pipeline, i.e. through Netty's
 * SpdySessionHandler, which holds frames back (and splits them) while the stream or
 * session send window is exhausted and completes a frame's write promise only once the
 * frame went out. The pump keeps at most {@link #MAX_IN_FLIGHT} frames whose promise
 * has not completed yet, so a stalled window stalls the reading of the body too.
 * Must be used from the channel's event loop.
 *
 * <p>Netty quirk: SpdySessionHandler queues a DATA frame only when the window is
 * exhausted, not when frames of the same stream are already queued, and it completes
 * the promises of queued frames synchronously while draining them on WINDOW_UPDATE.
 * Writing the next chunk from the completion listener directly therefore reorders the
 * body; the pump writes from a separate event-loop task instead.
 */
final class BodyPump {
    static final int CHUNK = 16 * 1024;
    static final int MAX_IN_FLIGHT = 4;

    /** A body source. */
    interface Source {
        long remaining();

        ByteBuf read(ChannelHandlerContext ctx, int n) throws IOException;

        void close();
    }

    static Source of(ByteBuf buf) {
        return new Source() {
            @Override
            public long remaining() {
                return buf.readableBytes();
            }

            @Override
            public ByteBuf read(ChannelHandlerContext ctx, int n) {
                return buf.readRetainedSlice(n);
            }

            @Override
            public void close() {
                if (buf.refCnt() > 0) {
                    buf.release();
                }
            }
        };
    }

    static Source of(Path file) throws IOException {
        FileChannel fc = FileChannel.open(file, StandardOpenOption.READ);
        long size = fc.size();
        return new Source() {
            long left = size;

            @Override
            public long remaining() {
                return left;
            }

            @Override
            public ByteBuf read(ChannelHandlerContext ctx, int n) throws IOException {
                ByteBuf buf = ctx.alloc().buffer(n);
                try {
                    ByteBuffer nio = buf.nioBuffer(0, n);
                    while (nio.hasRemaining()) {
                        if (fc.read(nio) < 0) {
                            throw new IOException("file shrank while reading: " + file);
                        }
                    }
                    buf.writerIndex(n);
                    left -= n;
                    return buf;
                } catch (IOException e) {
                    buf.release();
                    throw e;
                }
            }

            @Override
            public void close() {
                try {
                    fc.close();
                } catch (IOException ignored) {
                    // nothing to do
                }
            }
        };
    }

    private final ChannelHandlerContext ctx;
    private final int streamId;
    private final Source source;
    private final Consumer<Throwable> done; // null on success
    private int inFlight;
    private boolean allWritten;
    private boolean finished;
    private boolean filling;
    private boolean again;

    BodyPump(ChannelHandlerContext ctx, int streamId, Source source, Consumer<Throwable> done) {
        this.ctx = ctx;
        this.streamId = streamId;
        this.source = source;
        this.done = done;
    }

    void start() {
        fill();
    }

    private void fill() {
        if (filling) {
            again = true;
            return;
        }
        filling = true;
        try {
            do {
                again = false;
                boolean wrote = false;
                while (!finished && !allWritten && inFlight < MAX_IN_FLIGHT) {
                    long rem = source.remaining();
                    int n = (int) Math.min(CHUNK, rem);
                    ByteBuf buf;
                    try {
                        buf = n > 0 ? source.read(ctx, n) : Unpooled.EMPTY_BUFFER;
                    } catch (IOException e) {
                        finish(e);
                        break;
                    }
                    boolean last = rem - n == 0;
                    DefaultSpdyDataFrame frame = new DefaultSpdyDataFrame(streamId, buf);
                    frame.setLast(last);
                    if (last) {
                        allWritten = true;
                    }
                    inFlight++;
                    wrote = true;
                    ChannelFuture f = ctx.write(frame);
                    f.addListener(fut -> {
                        inFlight--;
                        if (!fut.isSuccess()) {
                            finish(fut.cause());
                        } else if (allWritten && inFlight == 0) {
                            finish(null);
                        } else {
                            // Not fill() right here: this listener can run inside
                            // SpdySessionHandler's drain of queued frames (a WINDOW_UPDATE
                            // arrived); a frame written now would see a positive window and
                            // overtake the frames still queued for this stream.
                            ctx.executor().execute(this::fill);
                        }
                    });
                }
                if (wrote) {
                    ctx.flush();
                }
            } while (again);
        } finally {
            filling = false;
        }
    }

    private void finish(Throwable cause) {
        if (finished) {
            return;
        }
        finished = true;
        source.close();
        if (done != null) {
            done.accept(cause);
        }
    }
}
