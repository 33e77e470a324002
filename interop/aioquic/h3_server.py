"""An HTTP/3 server on aioquic (an independent QUIC and HTTP/3 stack, in Python) for
speedy's interop test (crates/speedy/tests/interop_aioquic.rs).

    h3_server.py CERT KEY [PORT]

Listens on 127.0.0.1:PORT (0: any free port) and prints `listening 127.0.0.1:PORT` once
bound. Answers:
  GET  /bytes/N   N bytes: 0, 1, ..., 250, 0, 1, ... (content-length N)
  POST /echo      the request body back
  anything else   404
Every response carries `server: aioquic`.
"""

import asyncio
import sys

from aioquic.asyncio import QuicConnectionProtocol, serve
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ProtocolNegotiated

PATTERN = bytes(range(251))


def pattern(n):
    return (PATTERN * (n // len(PATTERN) + 1))[:n]


class H3Server(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = None
        self.requests = {}

    def quic_event_received(self, event):
        if isinstance(event, ProtocolNegotiated) and event.alpn_protocol in H3_ALPN:
            self.h3 = H3Connection(self._quic)
        if self.h3 is None:
            return
        for e in self.h3.handle_event(event):
            if isinstance(e, HeadersReceived):
                self.requests[e.stream_id] = (dict(e.headers), bytearray())
                if e.stream_ended:
                    self.respond(e.stream_id)
            elif isinstance(e, DataReceived) and e.stream_id in self.requests:
                self.requests[e.stream_id][1].extend(e.data)
                if e.stream_ended:
                    self.respond(e.stream_id)

    def respond(self, stream_id):
        headers, body = self.requests.pop(stream_id)
        method = headers.get(b":method", b"")
        path = headers.get(b":path", b"").decode("latin-1")
        status, out = 404, b"not found\n"
        if method == b"POST" and path == "/echo":
            status, out = 200, bytes(body)
        elif method == b"GET" and path.startswith("/bytes/") and path[7:].isdigit():
            status, out = 200, pattern(int(path[7:]))
        self.h3.send_headers(
            stream_id,
            [
                (b":status", str(status).encode()),
                (b"content-length", str(len(out)).encode()),
                (b"server", b"aioquic"),
            ],
        )
        self.h3.send_data(stream_id, out, end_stream=True)
        self.transmit()


async def main():
    cert, key = sys.argv[1], sys.argv[2]
    port = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    config = QuicConfiguration(is_client=False, alpn_protocols=H3_ALPN)
    config.load_cert_chain(cert, key)
    server = await serve("127.0.0.1", port, configuration=config, create_protocol=H3Server)
    bound = server._transport.get_extra_info("sockname")[1]
    print(f"listening 127.0.0.1:{bound}", flush=True)
    await asyncio.Future()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
