#!/usr/bin/env python3
"""Writes the small edge-case HARs of ../data (timings-only, base64-bodies, har11-no-pages,
bad-content, bad-date, truncated). They are committed; this script documents exactly what
is in them and remakes them byte for byte: python3 make-edge-hars.py (from this folder)."""
import base64
import gzip
import json
import os

os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data"))


def entry(url, start, timings, status=200, mime="text/html", headers=None, content_extra=None,
          pageref=None, method="GET", redirect="", size=None, body_size=None):
    t = {"blocked": -1, "dns": -1, "connect": -1, "ssl": -1, "send": 0, "wait": 0, "receive": 0}
    t.update(timings)
    # entry.time: the sum of the phases that apply (connect already includes ssl).
    time = sum(v for v in t.values() if v > 0) - (t["ssl"] if t["ssl"] > 0 else 0)
    c = {"size": size if size is not None else 0, "mimeType": mime}
    if content_extra:
        c.update(content_extra)
    e = {"startedDateTime": start, "time": round(time, 3),
         "request": {"method": method, "url": url, "httpVersion": "HTTP/1.1", "cookies": [],
                     "headers": [{"name": "User-Agent", "value": "Mozilla/5.0 (hand-written fixture)"}],
                     "queryString": [], "headersSize": -1, "bodySize": 0},
         "response": {"status": status, "statusText": "", "httpVersion": "HTTP/1.1", "cookies": [],
                      "headers": headers or [{"name": "Content-Type", "value": mime}], "content": c,
                      "redirectURL": redirect, "headersSize": -1,
                      "bodySize": body_size if body_size is not None else -1},
         "cache": {}, "timings": t}
    if pageref:
        e["pageref"] = pageref
    return e


def ts(ms):
    s = ms / 1000.0
    whole = int(s)
    frac = int(round((s - whole) * 1000))
    return "2024-05-01T10:00:%02d.%03dZ" % (whole, frac)


# 1. Timings only: no bodies, no initiators (like many WebPageTest and proxy HARs).
#    Times in ms from the page start; the comments give what the importer should infer.
E = []
P = "page_1"
# A redirect to the root: 0 → 47.
E.append(entry("http://example.test/", ts(0), {"dns": 5, "connect": 20, "wait": 22, "receive": 0}, status=301,
               headers=[{"name": "Location", "value": "https://www.example.test/"},
                        {"name": "Content-Length", "value": "0"}, {"name": "Connection", "value": "keep-alive"}],
               redirect="https://www.example.test/", pageref=P, size=0, body_size=0))
# The root: starts 50, first byte 145 (connect 40 of which ssl 20: RTT 20, wait 50: think 30), ends 245.
E.append(entry("https://www.example.test/", ts(50), {"dns": 5, "connect": 40, "ssl": 20, "wait": 50, "receive": 100},
               mime="text/html; charset=utf-8",
               headers=[{"name": "Content-Type", "value": "text/html; charset=utf-8"},
                        {"name": "Content-Encoding", "value": "gzip"}, {"name": "Content-Length", "value": "9000"},
                        {"name": "Transfer-Encoding", "value": "chunked"}, {"name": "Set-Cookie", "value": "sid=1; path=/"}],
               pageref=P, size=30000, body_size=9000))
# Requested while the root streams in (25% and 35% of its receive time): parsed from it.
E.append(entry("https://www.example.test/style.css", ts(170), {"wait": 20, "receive": 10}, mime="text/css",
               pageref=P, size=12000, body_size=12000))
E.append(entry("https://www.example.test/app.js", ts(180), {"wait": 20, "receive": 15}, mime="application/javascript",
               pageref=P, size=20000, body_size=20000))
# 5 ms after the style sheet ends (the root still streams, but HTML does not load fonts).
E.append(entry("https://www.example.test/font.woff2", ts(205), {"wait": 20, "receive": 20}, mime="font/woff2",
               pageref=P, size=25000, body_size=25000))
# 3 and 5 ms after the root ends: found at its end.
E.append(entry("https://img.example.test/hero.jpg", ts(248), {"dns": 5, "connect": 20, "wait": 25, "receive": 40},
               mime="image/jpeg", pageref=P, size=50000, body_size=50000))
E.append(entry("https://ads.example.net/ad.js", ts(250), {"dns": 10, "connect": 30, "ssl": 15, "wait": 40, "receive": 5},
               mime="text/javascript", pageref=P, size=5000, body_size=5000))
# ad.js ends 335; 65 ms later: its compute.
E.append(entry("https://ads.example.net/ad.gif", ts(400), {"wait": 35, "receive": 1}, mime="image/gif",
               pageref=P, size=43, body_size=43))
# Long after everything: the latest script (ad.js), +265.
E.append(entry("https://www.example.test/api/data.json", ts(600), {"wait": 60, "receive": 2}, mime="application/json",
               pageref=P, size=800, body_size=800))
har = {"log": {"version": "1.2", "creator": {"name": "hand-written", "version": "1"},
               "pages": [{"startedDateTime": ts(0), "id": P, "title": "https://www.example.test/",
                          "pageTimings": {"onContentLoad": 260, "onLoad": 700}}],
               "entries": E}}
json.dump(har, open("timings-only.har", "w"), indent=1)

# 2. Bodies in base64, one given content-encoded (kept) and one decoded (re-encoded).
gif = open("../data-tools/site/img/logo.gif", "rb").read()
css = b"body{color:#333}\n.logo{background:url(logo.gif)}\n"
css_gz = gzip.compress(css, mtime=0)
js = "document.title='base64 fixture';\n"
html = ('<!doctype html><html><head><link rel="stylesheet" href="style.css"><script src="app.js"></script>'
        '</head><body><img src="/logo.gif"></body></html>\n')
P = "p1"
E = []
E.append(entry("http://b64.example/", ts(0), {"wait": 10, "receive": 1}, pageref=P, size=len(html),
               content_extra={"text": html}))
E.append(entry("http://b64.example/style.css", ts(20), {"wait": 10, "receive": 1}, mime="text/css",
               headers=[{"name": "Content-Type", "value": "text/css"}, {"name": "Content-Encoding", "value": "gzip"}],
               pageref=P, size=len(css), body_size=len(css_gz),
               content_extra={"text": base64.b64encode(css_gz).decode(), "encoding": "base64"}))
E.append(entry("http://b64.example/app.js", ts(21), {"wait": 10, "receive": 1}, mime="application/javascript",
               headers=[{"name": "Content-Type", "value": "application/javascript"},
                        {"name": "Content-Encoding", "value": "gzip"}],
               pageref=P, size=len(js), body_size=40, content_extra={"text": js}))
E.append(entry("http://b64.example/logo.gif", ts(40), {"wait": 10, "receive": 1}, mime="image/gif", pageref=P,
               size=len(gif), content_extra={"text": base64.b64encode(gif).decode(), "encoding": "base64"}))
har = {"log": {"version": "1.2", "creator": {"name": "hand-written", "version": "1"},
               "pages": [{"startedDateTime": ts(0), "id": P, "title": "base64",
                          "pageTimings": {"onContentLoad": 50, "onLoad": 60}}], "entries": E}}
json.dump(har, open("base64-bodies.har", "w"), indent=1)

# 3. HAR 1.1 without pages: two navigations 3 s apart, an iframe, a data: URL and an
#    aborted request (status 0).
E = []
a_html = '<html><head><link rel=stylesheet href=a.css></head><body><iframe src="frame.html"></iframe></body></html>'
E.append(entry("http://old.example/a.html", ts(0), {"wait": 10, "receive": 5}, size=len(a_html),
               content_extra={"text": a_html}))
E.append(entry("http://old.example/a.css", ts(16), {"wait": 10, "receive": 1}, mime="text/css", size=10,
               content_extra={"text": "p{margin:0}"}))
E.append(entry("http://old.example/frame.html", ts(17), {"wait": 10, "receive": 1}, size=20,
               content_extra={"text": "<p>frame</p>"}))
E.append(entry("data:image/gif;base64,R0lGODlhAQABAAAAACw=", ts(18), {"wait": 0, "receive": 0}, mime="image/gif", size=14))
E.append(entry("http://old.example/aborted.gif", ts(19), {"wait": -1, "receive": -1}, status=0, mime="", size=0))
b_html = '<html><body><img src="b.png"></body></html>'
E.append(entry("http://old.example/b.html", ts(3000), {"wait": 10, "receive": 5}, size=len(b_html),
               content_extra={"text": b_html}))
E.append(entry("http://old.example/b.png", ts(3016), {"wait": 10, "receive": 2}, mime="image/png", size=300))
har = {"log": {"version": "1.1", "creator": {"name": "hand-written", "version": "1"}, "entries": E}}
json.dump(har, open("har11-no-pages.har", "w"), indent=1)

# 4. Malformed: entries[2].response.content is a string; entries[1].startedDateTime is not
#    a date; a HAR cut in the middle.
bad = {"log": {"version": "1.2", "creator": {"name": "hand-written", "version": "1"}, "entries": [
    entry("http://bad.example/", ts(0), {"wait": 1, "receive": 1}, size=1, content_extra={"text": "x"}),
    entry("http://bad.example/a.css", ts(5), {"wait": 1, "receive": 1}, mime="text/css", size=1,
          content_extra={"text": "y"}),
    entry("http://bad.example/b.gif", ts(6), {"wait": 1, "receive": 1}, mime="image/gif")]}}
bad["log"]["entries"][2]["response"]["content"] = "oops"
json.dump(bad, open("bad-content.har", "w"), indent=1)
bad["log"]["entries"][2]["response"]["content"] = {"size": 3, "mimeType": "image/gif"}
bad["log"]["entries"][1]["startedDateTime"] = "yesterday"
json.dump(bad, open("bad-date.har", "w"), indent=1)
full = json.dumps(har)
open("truncated.har", "w").write(full[:len(full) // 2])
