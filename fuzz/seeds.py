#!/usr/bin/env python3
"""Writes the seed inputs of the fuzz targets for speedy-archive and speedy-net into
fuzz/corpus/TARGET/seed-NAME (an existing seed is left as it is). run.sh runs it.

Seeds come from the test fixtures: the HAR files and the wget WARC of
crates/speedy-archive/tests/data, the fixture site of tests/data-tools/site (as a
Mahimahi recording and a WPR archive, the way tests/recorded_site describes a
recording: a page, a gzip-encoded chunked style sheet, a script, images, a redirect, a
404), the response stream of speedy-net's http1/response.rs tests, the INIT of the SCTP
listener's tests, and short scripts for the harnesses in src/ (their byte layouts are
described there).
"""
import base64
import gzip
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "crates", "speedy-archive", "tests", "data")
SITE = os.path.join(HERE, "..", "crates", "speedy-archive", "tests", "data-tools", "site")
RECORD_SEPARATOR = b"MMRECSEP"  # src/archive.rs


def seed(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    p = os.path.join(d, "seed-" + name)
    if not os.path.exists(p):
        with open(p, "wb") as f:
            f.write(data)


def site(path):
    with open(os.path.join(SITE, path), "rb") as f:
        return f.read()


def gz(data):
    return gzip.compress(data, mtime=0)


# --- HAR ------------------------------------------------------------------------------

def har_seeds():
    for name in ["bad-content", "bad-date", "base64-bodies", "har11-no-pages",
                 "timings-only", "truncated"]:
        with open(os.path.join(DATA, name + ".har"), "rb") as f:
            seed("har_import", name, f.read())
    # Chromium's HAR of the fixture site, cut to its first page's first entries (the
    # file is 57 KB, over the target's -max_len).
    with open(os.path.join(DATA, "chromium.har"), "rb") as f:
        har = json.load(f)
    log = har["log"]
    first = log["pages"][0]["id"]
    log["pages"] = log["pages"][:1]
    log["entries"] = [e for e in log["entries"] if e.get("pageref") == first][:4]
    for e in log["entries"]:
        c = e["response"].get("content", {})
        if "text" in c:
            c["text"] = c["text"][:600]
    seed("har_import", "chromium-cut", json.dumps(har, separators=(",", ":")).encode())


# --- WARC -----------------------------------------------------------------------------

def warc_records(plain):
    """The records of a WARC: (head, block) each."""
    out, pos = [], 0
    while pos < len(plain):
        while plain[pos:pos + 1] in (b"\r", b"\n"):
            pos += 1
        if pos >= len(plain):
            break
        end = plain.index(b"\r\n\r\n", pos)
        head = plain[pos:end + 4]
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
        out.append(head + plain[end + 4:end + 4 + length] + b"\r\n\r\n")
        pos = end + 4 + length
    return out


def warc_seeds():
    with open(os.path.join(DATA, "wget.warc.gz"), "rb") as f:
        plain = gzip.decompress(f.read())
    records = warc_records(plain)
    # The records up to about 12 KB: warcinfo, then requests and responses.
    picked, size = [], 0
    for r in records:
        if size + len(r) > 12_000:
            continue
        picked.append(r)
        size += len(r)
    seed("warc_import", "plain", b"".join(picked))
    seed("warc_import", "gzip-per-record", b"".join(gz(r) for r in picked))
    seed("warc_import", "gzip-whole", gz(b"".join(picked[:6])))
    responses = [r for r in picked if b"WARC-Type: response" in r]
    if responses:
        seed("warc_import", "one-response", responses[0])


# --- The fixture site as a recording ----------------------------------------------------

def chunked(data, size):
    out = b""
    for i in range(0, len(data), size):
        c = data[i:i + size]
        ext = b";note=first" if i == 0 else b""
        out += b"%x%s\r\n%s\r\n" % (len(c), ext, c)
    return out + b"0\r\n\r\n"


def exchanges():
    """(scheme, host, ip, port, request line, status line, headers, wire body, url)."""
    css = site("css/site.css")
    return [
        ("https", "www.example.test", "10.1.0.1", 443, "GET / HTTP/1.1", "HTTP/1.1 200 OK",
         [("Content-Type", "text/html"), ("Content-Length", str(len(site("index.html"))))],
         site("index.html"), "https://www.example.test/"),
        ("https", "www.example.test", "10.1.0.1", 443, "GET /css/site.css HTTP/1.1",
         "HTTP/1.1 200 OK",
         [("Content-Type", "text/css"), ("Content-Encoding", "gzip"),
          ("Transfer-Encoding", "chunked")],
         chunked(gz(css), 40), "https://www.example.test/css/site.css"),
        ("https", "www.example.test", "10.1.0.1", 443, "GET /js/app.js HTTP/1.1",
         "HTTP/1.1 200 OK", [("Content-Type", "application/javascript")], site("js/app.js"),
         "https://www.example.test/js/app.js"),
        ("http", "img.example.test", "10.1.0.2", 80, "GET /img/logo.gif HTTP/1.1",
         "HTTP/1.1 200 OK", [("Content-Type", "image/gif")], site("img/logo.gif"),
         "http://img.example.test/img/logo.gif"),
        ("http", "example.test", "10.1.0.3", 80, "GET / HTTP/1.1",
         "HTTP/1.1 301 Moved Permanently", [("Location", "https://www.example.test/")], b"",
         "http://example.test/"),
        ("https", "www.example.test", "10.1.0.1", 443, "GET /missing.png HTTP/1.1",
         "HTTP/1.1 404 Not Found", [("Content-Length", "0")], b"",
         "https://www.example.test/missing.png"),
    ]


def varint(v):
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        if v == 0:
            return out + bytes([b])
        out += bytes([b | 0x80])


def field(number, data):
    return varint(number << 3 | 2) + varint(len(data)) + data


def vfield(number, v):
    return varint(number << 3) + varint(v)


def http_message(first, headers, body):
    m = field(1, first.encode())
    for k, v in headers:
        m += field(2, field(1, k.encode()) + field(2, v.encode()))
    return m + field(3, body)


def mahimahi_record(x):
    scheme, host, ip, port, req, status, headers, body, _ = x
    return (field(1, ip.encode()) + vfield(2, port) + vfield(3, 2 if scheme == "https" else 1)
            + field(4, http_message(req, [("Host", host)], b""))
            + field(5, http_message(status, headers, body)))


def mahimahi_seeds():
    recs = [mahimahi_record(x) for x in exchanges()]
    seed("mahimahi_import", "site", RECORD_SEPARATOR.join(recs))
    seed("mahimahi_import", "page-and-style", RECORD_SEPARATOR.join(recs[:2]))
    seed("mahimahi_import", "one-record", recs[0])
    # A BulkMessage (field 2: repeated HTTPMessage), which the importer skips.
    seed("mahimahi_import", "bulk", field(2, http_message("HTTP/1.1 200 OK", [], b"x")))


def wpr_json():
    requests, negotiated = {}, {}
    for scheme, host, _, _, req, status, headers, body, url in exchanges():
        request = ("%s\r\nHost: %s\r\n\r\n" % (req, host)).encode()
        head = status + "\r\n" + "".join("%s: %s\r\n" % h for h in headers) + "\r\n"
        requests.setdefault(host, {}).setdefault(url, []).append({
            "SerializedRequest": base64.b64encode(request).decode(),
            "SerializedResponse": base64.b64encode(head.encode() + body).decode(),
        })
        if scheme == "https":
            negotiated[host] = "h2"
    return json.dumps({"Requests": requests, "Certs": {}, "NegotiatedProtocol": negotiated},
                      separators=(",", ":")).encode()


def wpr_seeds():
    j = wpr_json()
    seed("wpr_import", "json", b"\x00" + j)
    seed("wpr_import", "json-through-gzip", b"\x01" + j)
    # Mode 2 puts the gzip magic back in front.
    seed("wpr_import", "gzip", b"\x02" + gz(j)[2:])
    seed("wpr_import", "gzip-two-members", b"\x02" + (gz(j[:40]) + gz(j[40:]))[2:])


# --- HTTP/1.1 responses -----------------------------------------------------------------

WIRE = (b"HTTP/1.1 100 Continue\r\n\r\n"
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n3;x=y\r\nabc\r\n2\nde\r\n0\r\nt: 1\r\n\r\n"
        b"HTTP/1.1 200 OK\r\ncontent-length: 99\r\n\r\n"
        b"HTTP/1.1 204 No Content\r\ncontent-length: 7\r\n\r\n"
        b"HTTP/1.0 200 OK\r\nconnection: keep-alive\r\ncontent-length: 1\r\n\r\nx"
        b"HTTP/1.1 404 Not Found\r\n\r\nrest of the stream")


def http1_seeds():
    # HEAD bits (the fourth response answers a HEAD), read size, expansion.
    seed("http1_response", "every-framing", bytes([0x04, 0x00, 0x00]) + WIRE)
    seed("http1_response", "every-framing-by-7", bytes([0x04, 0x06, 0x00]) + WIRE)
    site_wire = b""
    for x in exchanges():
        headers = x[6] + ([("Content-Length", str(len(x[7])))]
                          if not any(h[0] in ("Content-Length", "Transfer-Encoding")
                                     for h in x[6]) else [])
        site_wire += (x[5] + "\r\n" + "".join("%s: %s\r\n" % h for h in headers)
                      + "\r\n").encode() + x[7]
    seed("http1_response", "site", bytes([0x00, 0x0f, 0x00]) + site_wire)
    seed("http1_response", "long-head",
         bytes([0x00, 0x7f, 0x01]) + b"HTTP/1.1 200 OK\r\nx: " + b"\xfe" * 17 + b"\r\n\r\n")


# --- SPDY multiplexer ---------------------------------------------------------------

def mux_seeds():
    # knobs; the application's 16 manners, the streams a client opens and the bytes of
    # their headers (81 bytes in all); then the peer's script (src/mux.rs, src/lib.rs
    # `peer_frame`). Manner 0x05: reply, echo, read.
    app = bytes([0x05] * 16 + [2]) + bytes(64)
    syn = bytes([0x00, 0x00, 0x00, 0x01, 0x00])   # SYN_STREAM next id, request headers
    data = bytes([0x09, 0x02, 0x0D])               # DATA, 100 bytes, on stream 1
    data_fin = bytes([0x19, 0x01, 0x0D])           # DATA with FIN, 1 byte, stream 1
    sleep = bytes([0x0C, 0x20])
    seed("spdy_mux", "server", b"\x00" + app + syn + data + sleep + data_fin + sleep)
    seed("spdy_mux", "server-two-streams",
         b"\x00" + app + syn + syn + data + bytes([0x09, 0x03, 0x06]) + sleep + data_fin)
    # A client that opens two streams: the peer answers the first (SYN_REPLY, response
    # headers), sends data with FIN on it, resets the second.
    reply = bytes([0x02, 0x00, 0x01, 0x02])
    rst = bytes([0x03, 0x08, 0x05])
    seed("spdy_mux", "client", b"\x01" + app + sleep + reply + data_fin + rst + sleep)
    # Small windows (knob 2): initial window 1, session window 16384, 1 stream.
    seed("spdy_mux", "server-small-windows",
         b"\x02\x01\x07\x01" + app + syn + data + sleep + bytes([0x08, 0x0D, 0x01]) + data_fin)


# --- SCTP -------------------------------------------------------------------------------

def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def sealed(p):
    p = bytearray(p)
    p[8:12] = b"\0\0\0\0"
    p[8:12] = struct.pack("<I", crc32c(bytes(p)))
    return bytes(p)


def sctp_chunk(kind, flags, value):
    c = bytes([kind, flags]) + struct.pack(">H", 4 + len(value)) + value
    return c + b"\0" * (-len(c) % 4)


COMMON = b"\x13\x88\x24\xe3" + b"\0\0\0\0" + b"\0\0\0\0"
# INIT: Initiate Tag, a_rwnd, streams out and in, initial TSN (the listener's test).
INIT_FIXED = b"\x01\x02\x03\x04" + b"\x00\x00\x10\x00" + b"\x00\x0a\x00\x0a" + b"\x00\x00\x00\x01"


def sctp_seeds():
    init = sealed(COMMON + sctp_chunk(1, 0, INIT_FIXED))
    ipv4 = struct.pack(">HH", 5, 8) + bytes([10, 0, 0, 1])
    ipv6 = struct.pack(">HH", 6, 20) + bytes(range(16))
    multihomed = sealed(COMMON + sctp_chunk(1, 0, INIT_FIXED + ipv4 + ipv6 + ipv4))
    data = sealed(COMMON[:4] + b"\x01\x02\x03\x04\0\0\0\0" + sctp_chunk(
        0, 3, struct.pack(">IHHI", 7, 1, 0, 53) + b"\x80\x03\x00\x01" + bytes(8)))
    cookie = sealed(COMMON[:4] + b"\x01\x02\x03\x04\0\0\0\0" + sctp_chunk(10, 0, bytes(32)))
    seed("sctp_packet", "init", b"\x00\x03" + init)
    seed("sctp_packet", "init-multihomed", b"\x00\x03" + multihomed)
    seed("sctp_packet", "data", b"\x00\x03" + data)
    seed("sctp_packet", "cookie-and-data", b"\x01\x02" + cookie + data)
    # The bundler: rto, then a burst of an INIT, a COOKIE ECHO and a DATA packet (kind
    # bytes 1, 3, 5), a deadline, the peer heard.
    burst = b"\x00\x03"
    for kind, p in ((1, init), (3, cookie), (5, data)):
        burst += bytes([kind, len(p)]) + p
    seed("sctp_packet", "bundler", b"\x02\x0b\xb8" + burst + b"\x02\x10\x00\x03\x01")
    # The router: client, 17 streams, hold 1000; the peer's DATA on stream 1 before its
    # SYN_STREAM, then the SYN_STREAM, then a RST_STREAM; our own SYN_STREAM out.
    def incoming(stream, kind_ix, flags, id_byte, length):
        return bytes([0x02, 0x00, stream, 0x01, kind_ix, flags, id_byte, length])
    route = (b"\x00\x04\x03" + incoming(1, 0, 0, 0x06, 10) + incoming(0, 2, 0, 0x06, 10)
             + incoming(0, 4, 0, 0x06, 4) + bytes([0x00, 0x00, 0x02, 0x00, 0x09, 10]))
    seed("sctp_route", "hold-and-release", route)
    # The association: bundling on; deliver INIT, INIT ACK, COOKIE ECHO (with DATA),
    # COOKIE ACK; the client writes a frame on stream 1, then time passes.
    steps = bytes([0, 1, 0, 1, 9, 0, 1, 3, 0, 0, 1, 8, 2, 10, 1, 2, 4, 1, 0, 1])
    seed("sctp_association", "handshake-and-data", b"\x00" + steps)
    seed("sctp_association", "no-bundling", b"\x01" + steps)
    seed("sctp_association", "shutdown", b"\x00" + steps + bytes([11, 0, 1, 0, 1, 0, 1]))


def main():
    har_seeds()
    warc_seeds()
    mahimahi_seeds()
    wpr_seeds()
    http1_seeds()
    mux_seeds()
    sctp_seeds()
    return 0


if __name__ == "__main__":
    sys.exit(main())
