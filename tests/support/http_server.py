#!/usr/bin/env python3
"""A small HTTP server for envlock's tests: serves one directory on 127.0.0.1.

It prints `PORT <n>` (the free port it bound) as its first line on stdout, then serves until
killed. Fault switches make the failure cases of a download reproducible:

  --root DIR              directory to serve (required)
  --fail PATH=STATUS[:N]  answer STATUS (e.g. 404, 500) for PATH; with :N only the first N requests
                          to PATH fail, later ones are served normally (PATH is the URL path,
                          e.g. /linux-64/x.conda; `*` matches every path)
  --drop PATH=BYTES[:N]   send the headers and BYTES bytes of the body of PATH, then close the
                          connection (the first N requests; default 1)
  --auth USER:PASS        require HTTP basic auth on every request (401 otherwise)
  --bearer TOKEN          require `Authorization: Bearer TOKEN` on every request (401 otherwise)
  --path-token TOKEN      serve only paths under /t/TOKEN/ (anaconda.org's token form; the
                          prefix is stripped before the file is looked up; 401 otherwise)
  --redirect PATH=URL     answer 302 with `Location: URL` for PATH (checked before auth)
  --delay PATH=SECONDS    wait SECONDS before answering each request for PATH (a stalled server)
  --drip PATH=SECONDS[:N] send the body of PATH one byte every SECONDS (a server that drips; the
                          first N requests, default every one); `GET /__bytes` counts each byte
  --no-range              ignore Range headers (always answer 200 with the whole file)
  --ignore-if-range       answer a Range with 206 even when If-Range names another version
                          (a server that does not implement RFC 9110 §13.1.5)
  --no-validators         send neither ETag nor Last-Modified
  --bare-206              send neither ETag nor Last-Modified with a 206 (the validator RFC 9110
                          §15.3.7 asks for is dropped; a 200 still has both)
  --tls CERT:KEY          serve https with this PEM certificate and key (the stats paths too)
  --log FILE              append one JSON line per request: {"path", "status", "range", "if_range"
                          (only when sent), "auth"}

Range (RFC 9110 §14: `bytes=N-` and `bytes=N-M`) is honoured with 206 / 416; every response has an
ETag (sha256 of the content, quoted) and Last-Modified, and If-None-Match gives 304; a Range with an
If-Range that matches neither gets 200 and the whole file (RFC 9110 §13.1.5).
`GET /__stats` returns {"<path>": <request count>, ...} as JSON (not counted itself);
`GET /__bytes` returns the number of body bytes sent so far (files only);
`GET /__connections` the number of connections that asked for anything but these three.
"""
import argparse
import base64
import email.utils
import hashlib
import http.server
import json
import os
import socket
import ssl
import sys
import threading
import time
import urllib.parse


def parse_rule(text, what):
    if "=" not in text:
        sys.exit(f"--{what} expects PATH=VALUE[:N], got {text!r}")
    path, value = text.rsplit("=", 1)
    count = None
    if ":" in value:
        value, n = value.split(":", 1)
        count = int(n)
    return path, int(value), count


class State:
    def __init__(self, args):
        self.root = os.path.realpath(args.root)
        self.fail = {}
        for rule in args.fail or []:
            path, status, count = parse_rule(rule, "fail")
            self.fail[path] = [status, count]
        self.drop = {}
        for rule in args.drop or []:
            path, nbytes, count = parse_rule(rule, "drop")
            self.drop[path] = [nbytes, 1 if count is None else count]
        self.auth = args.auth
        self.bearer = args.bearer
        self.path_token = args.path_token
        self.redirect = dict(r.split("=", 1) for r in (args.redirect or []))
        self.delay = {p: float(d) for p, d in (r.rsplit("=", 1) for r in (args.delay or []))}
        self.drip = {}
        for rule in args.drip or []:
            path, value = rule.rsplit("=", 1)
            seconds, _, count = value.partition(":")
            self.drip[path] = [float(seconds), int(count) if count else None]
        self.bytes_sent = 0
        self.connections = 0
        self.no_range = args.no_range
        self.ignore_if_range = args.ignore_if_range
        self.no_validators = args.no_validators
        self.bare_206 = args.bare_206
        self.log = args.log
        self.counts = {}
        self.lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state = None  # set in main

    def log_message(self, fmt, *args):  # keep stderr quiet
        pass

    def setup(self):
        super().setup()
        # Headers and body go out in two writes: without TCP_NODELAY, Nagle's algorithm holds the
        # body until the client's delayed ACK (~40 ms a response), which a client making many
        # small requests (CEP-16 shards) would pay on every one.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.counted = False  # one handler per connection

    def _record(self, path, status):
        st = self.state
        if st.log:
            entry = {"path": path, "status": status, "range": self.headers.get("Range")}
            if self.headers.get("If-Range") is not None:
                entry["if_range"] = self.headers.get("If-Range")
            entry["auth"] = self.headers.get("Authorization") is not None
            line = json.dumps(entry)
            with st.lock, open(st.log, "a") as f:
                f.write(line + "\n")

    def _send_status(self, path, status, extra=None):
        # A 304 has no content (RFC 9110 §15.4.5): a body would be read as the start of the next
        # response on a kept-alive connection.
        body = b"" if status == 304 else f"{status}\n".encode()
        self.send_response(status)
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        if status != 304:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD" and body:
            self.wfile.write(body)
        self._record(path, status)

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        st = self.state
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        if path == "/__bytes":
            with st.lock:
                body = str(st.bytes_sent).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if path == "/__connections":
            with st.lock:
                body = str(st.connections).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if path == "/__stats":
            with st.lock:
                body = json.dumps(st.counts, sort_keys=True).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        with st.lock:
            st.counts[path] = st.counts.get(path, 0) + 1
            if not self.counted:
                self.counted = True
                st.connections += 1
            fail = st.fail.get(path) or st.fail.get("*")
            fail_status = None
            if fail is not None and (fail[1] is None or fail[1] > 0):
                fail_status = fail[0]
                if fail[1] is not None:
                    fail[1] -= 1
            drop = st.drop.get(path)
            drop_bytes = None
            if drop is not None and drop[1] > 0:
                drop_bytes = drop[0]
                drop[1] -= 1
            drip = st.drip.get(path)
            drip_seconds = None
            if drip is not None and (drip[1] is None or drip[1] > 0):
                drip_seconds = drip[0]
                if drip[1] is not None:
                    drip[1] -= 1

        if path in st.delay:
            time.sleep(st.delay[path])
        if path in st.redirect:
            self._send_status(path, 302, {"Location": st.redirect[path]})
            return
        if st.auth is not None:
            want = "Basic " + base64.b64encode(st.auth.encode()).decode()
            if self.headers.get("Authorization") != want:
                self._send_status(path, 401, {"WWW-Authenticate": 'Basic realm="envlock-test"'})
                return
        if st.bearer is not None and self.headers.get("Authorization") != "Bearer " + st.bearer:
            self._send_status(path, 401, {"WWW-Authenticate": 'Bearer realm="envlock-test"'})
            return
        if st.path_token is not None:
            prefix = "/t/" + st.path_token + "/"
            if not path.startswith(prefix):
                self._send_status(path, 401)
                return
            path = path[len(prefix) - 1:]
        if fail_status is not None:
            self._send_status(path, fail_status)
            return
        full = os.path.realpath(os.path.join(st.root, path.lstrip("/")))
        if path.endswith("/") and os.path.isfile(os.path.join(full, "index.html")):
            full = os.path.join(full, "index.html")  # a folder's index.html (a PEP 503 project page)
        if not (full == st.root or full.startswith(st.root + os.sep)) or not os.path.isfile(full):
            self._send_status(path, 404)
            return
        with open(full, "rb") as f:
            data = f.read()
        etag = '"' + hashlib.sha256(data).hexdigest() + '"'
        last_modified = email.utils.formatdate(os.path.getmtime(full), usegmt=True)
        if self.headers.get("If-None-Match") == etag:
            self._send_status(path, 304, {"ETag": etag, "Last-Modified": last_modified})
            return

        status, start, end = 200, 0, len(data)
        rng = self.headers.get("Range")
        if_range = self.headers.get("If-Range")
        if rng and if_range is not None and not st.ignore_if_range and if_range not in (etag, last_modified):
            rng = None  # another version than the client's partial: the whole file
        if rng and not st.no_range and rng.startswith("bytes="):
            first, _, last = rng[len("bytes="):].partition("-")
            start = int(first) if first else 0
            end = int(last) + 1 if last else len(data)
            if start >= len(data) or end > len(data) or start >= end:
                self._send_status(path, 416, {"Content-Range": f"bytes */{len(data)}"})
                return
            status = 206
        body = data[start:end]
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        if full.endswith(".html"):
            self.send_header("Content-Type", "text/html")  # PEP 503 pages (pip reads no other type)
        if not st.no_validators and not (st.bare_206 and status == 206):
            self.send_header("ETag", etag)
            self.send_header("Last-Modified", last_modified)
        self.send_header("Accept-Ranges", "none" if st.no_range else "bytes")
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")
        self.end_headers()
        self._record(path, status)
        if self.command == "HEAD":
            return
        if drop_bytes is not None:
            self.wfile.write(body[:drop_bytes])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if drip_seconds is not None:
            for i in range(len(body)):
                self.wfile.write(body[i:i + 1])
                self.wfile.flush()
                with st.lock:
                    st.bytes_sent += 1
                time.sleep(drip_seconds)
            return
        self.wfile.write(body)
        with st.lock:
            st.bytes_sent += len(body)


class QuietServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # Clients that hang up mid-response (a download aborted on purpose) are expected here.
        pass


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", required=True)
    ap.add_argument("--fail", action="append")
    ap.add_argument("--drop", action="append")
    ap.add_argument("--auth")
    ap.add_argument("--bearer")
    ap.add_argument("--path-token")
    ap.add_argument("--redirect", action="append")
    ap.add_argument("--delay", action="append")
    ap.add_argument("--drip", action="append")
    ap.add_argument("--no-range", action="store_true")
    ap.add_argument("--ignore-if-range", action="store_true")
    ap.add_argument("--no-validators", action="store_true")
    ap.add_argument("--bare-206", action="store_true")
    ap.add_argument("--log")
    ap.add_argument("--tls")
    args = ap.parse_args()
    Handler.state = State(args)
    server = QuietServer(("127.0.0.1", 0), Handler)
    if args.tls:
        cert, key = args.tls.split(":", 1)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    print(f"PORT {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
