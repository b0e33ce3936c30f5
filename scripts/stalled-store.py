#!/usr/bin/env python3
"""An object store that answers, then stalls (tests of the worker's uploads): HEAD is 404 (no
object yet), POST ?uploads starts a multipart upload, DELETE aborts it; a PUT's headers are
read and logged, and then nothing more: its body is never read and no answer comes, as a store
behind a wedged proxy would behave. Logs every request as one JSON line; prints "listening
PORT" once ready.

    python3 scripts/stalled-store.py --log store.jsonl --port 0
"""
import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler

from helper_server import serve

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, default=0)
parser.add_argument("--log", required=True)
arguments = parser.parse_args()
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *_):
        pass

    def record(self):
        with lock, open(arguments.log, "a") as log:
            log.write(json.dumps({"method": self.command, "path": self.path}) + "\n")

    def reply(self, status, body=b""):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_HEAD(self):
        self.record()
        self.reply(404)

    def do_POST(self):
        self.record()
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if "uploads" in self.path:
            self.reply(200, b"<InitiateMultipartUploadResult><UploadId>stalled-1</UploadId></InitiateMultipartUploadResult>")
        else:
            self.reply(500)

    def do_DELETE(self):
        self.record()
        self.reply(204)

    def do_PUT(self):
        self.record()
        while True:
            time.sleep(3600)


serve(Handler, arguments.port)
