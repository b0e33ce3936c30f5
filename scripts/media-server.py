#!/usr/bin/env python3
"""A media server for tests and demos: GET/HEAD with byte ranges from --root, and PUT into
--uploads, like an object store behind pre-signed URLs. Every request is logged as one JSON
line in --log.

    python3 scripts/media-server.py --root media/ --uploads uploads/ --log requests.jsonl --port 0

Prints "listening PORT" once ready. Behaviours for tests: --fail-put-first N (answer 500 to the
first N PUTs), --put-status CODE (answer every PUT with CODE), --redirect-get URL (answer every
GET with 302 to URL), --tls-cert PEM (https with that certificate and key), --put-rate BYTES
(read PUT bodies at most this fast, like a slow link), --get-rate BYTES (send GET bodies at
most this fast). A PUT is stored only when its whole body
arrived, written to a temporary name first and renamed, so a file in --uploads is always a
complete upload. Each PUT is logged twice: "PUT-START" when its headers arrive, "PUT" when it
ends, both with the Jobctl-Attempt header the worker sends.
"""
import argparse
import json
import os
import re
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler

from helper_server import serve


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--root", required=True)
    parser.add_argument("--uploads", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--fail-put-first", type=int, default=0)
    parser.add_argument("--put-status", type=int, default=0)
    parser.add_argument("--redirect-get")
    parser.add_argument("--tls-cert", help="serve https with this certificate (PEM, key included)")
    parser.add_argument("--put-rate", type=int, default=0, help="read PUT bodies at most this many bytes per second")
    parser.add_argument("--get-rate", type=int, default=0, help="send GET bodies at most this many bytes per second")
    args = parser.parse_args()
    lock = threading.Lock()
    state = {"puts": 0}

    def log(record):
        record["at"] = time.time()
        with lock, open(args.log, "a") as out:
            out.write(json.dumps(record) + "\n")

    def local(root, url_path):
        """The file under root for a URL path, or None if it would leave root."""
        path = urllib.parse.unquote(urllib.parse.urlsplit(url_path).path).lstrip("/")
        full = os.path.realpath(os.path.join(root, path))
        if not full.startswith(os.path.realpath(root) + os.sep):
            return None
        return full

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, *_):
            pass

        def reply(self, status, body=b"", headers=()):
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def do_HEAD(self):
            self.do_GET()

        def do_GET(self):
            if args.redirect_get:
                log({"method": self.command, "path": self.path, "status": 302})
                return self.reply(302, headers=[("Location", args.redirect_get)])
            path = local(args.root, self.path)
            if path is None or not os.path.isfile(path):
                log({"method": self.command, "path": self.path, "status": 404})
                return self.reply(404, b"not found")
            size = os.path.getsize(path)
            start, end = 0, size - 1
            status = 200
            match = re.fullmatch(r"bytes=(\d*)-(\d*)", self.headers.get("Range", ""))
            if match and (match.group(1) or match.group(2)):
                if match.group(1):
                    start = int(match.group(1))
                    end = int(match.group(2)) if match.group(2) else size - 1
                else:
                    start = max(0, size - int(match.group(2)))
                end = min(end, size - 1)
                if start >= size:
                    log({"method": self.command, "path": self.path, "status": 416})
                    return self.reply(416, headers=[("Content-Range", f"bytes */{size}")])
                status = 206
            log({"method": self.command, "path": self.path, "status": status, "range": self.headers.get("Range")})
            self.send_response(status)
            self.send_header("Content-Length", str(end - start + 1))
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Content-Type", "application/octet-stream")
            if status == 206:
                self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
            self.end_headers()
            if self.command == "HEAD":
                return
            with open(path, "rb") as source:
                source.seek(start)
                left = end - start + 1
                try:
                    while left > 0:
                        chunk = source.read(min(left, 4096 if args.get_rate else 65536))
                        if not chunk:
                            break
                        self.wfile.write(chunk)
                        left -= len(chunk)
                        if args.get_rate:
                            time.sleep(len(chunk) / args.get_rate)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True

        def read_body(self, length):
            """The body, or what arrived of it before the client went away."""
            chunks, left = [], length
            try:
                while left > 0:
                    chunk = self.rfile.read(min(left, 65536))
                    if not chunk:
                        break
                    chunks.append(chunk)
                    left -= len(chunk)
                    if args.put_rate:
                        time.sleep(len(chunk) / args.put_rate)
            except (ConnectionResetError, OSError):
                self.close_connection = True
            return b"".join(chunks)

        def do_PUT(self):
            with lock:
                state["puts"] += 1
                number = state["puts"]
            length = int(self.headers.get("Content-Length", "-1"))
            if length < 0:
                log({"method": "PUT", "path": self.path, "status": 411})
                return self.reply(411, b"length required")
            attempt = self.headers.get("Jobctl-Attempt")
            log({"method": "PUT-START", "path": self.path, "n": number, "declared": length, "attempt": attempt})
            body = self.read_body(length)
            record = {
                "method": "PUT", "path": self.path, "n": number, "bytes": len(body), "declared": length,
                "contentType": self.headers.get("Content-Type"), "attempt": attempt,
            }
            if args.put_status:
                record["status"] = args.put_status
                log(record)
                return self.reply(args.put_status, b"refused")
            if number <= args.fail_put_first:
                record["status"] = 500
                log(record)
                return self.reply(500, b"try again")
            path = local(args.uploads, self.path)
            if path is None:
                record["status"] = 403
                log(record)
                return self.reply(403, b"outside")
            if len(body) != length:
                record["status"] = 400
                log(record)
                self.close_connection = True
                try:
                    return self.reply(400, b"incomplete")
                except OSError:
                    return
            os.makedirs(os.path.dirname(path), exist_ok=True)
            partial = path + ".partial"
            with open(partial, "wb") as out:
                out.write(body)
            os.replace(partial, path)
            record["status"] = 200
            log(record)
            self.reply(200, b"stored")

    serve(Handler, args.port, tls_certificate=args.tls_cert)


if __name__ == "__main__":
    sys.exit(main())
