#!/usr/bin/env python3
"""A webhook receiver for demos and tests: verifies Standard Webhooks signatures on its own
(hmac/hashlib/base64, not jobctl's code) and logs every request as one JSON line.

    python3 scripts/webhook-receiver.py --secret "$JOBCTL_WEBHOOK_SECRET" --log hooks.jsonl --port 0

Prints "listening PORT" once ready. Behaviours for tests: --fail-first N (answer 500 to the
first N requests), --status CODE, --redirect URL (answer 301), --delay SECONDS (with
--delay-first N: only the first N requests), --retry-after SECONDS (with --fail-first).
"""
import argparse
import base64
import hashlib
import hmac
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler

from helper_server import serve


def verify(secrets, msg_id, timestamp, body, header):
    """True if any v1 signature in the header matches HMAC-SHA256 under any secret."""
    signed = f"{msg_id}.{timestamp}.".encode() + body
    for secret in secrets:
        key = base64.b64decode(secret.removeprefix("whsec_"))
        expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
        for part in header.split():
            version, _, signature = part.partition(",")
            if version == "v1" and hmac.compare_digest(signature, expected):
                return True
    return False


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--secret", action="append", default=[])
    parser.add_argument("--log", required=True)
    parser.add_argument("--fail-first", type=int, default=0)
    parser.add_argument("--status", type=int, default=200)
    parser.add_argument("--redirect")
    parser.add_argument("--delay", type=float, default=0)
    parser.add_argument("--delay-first", type=int, default=0, help="delay only the first N requests (default: all)")
    parser.add_argument("--retry-after")
    args = parser.parse_args()
    lock = threading.Lock()
    state = {"count": 0}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: senders may reuse connections
        disable_nagle_algorithm = True  # headers and body are separate writes: no 40 ms delayed-ACK stalls

        def log_message(self, *_):
            pass

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with lock:
                state["count"] += 1
                number = state["count"]
            msg_id = self.headers.get("webhook-id", "")
            timestamp = self.headers.get("webhook-timestamp", "")
            try:
                payload = json.loads(body)
            except ValueError:
                payload = None
            record = {
                "n": number, "path": self.path, "receivedAt": time.time(), "id": msg_id, "timestamp": timestamp,
                "valid": verify(args.secret, msg_id, timestamp, body, self.headers.get("webhook-signature", "")),
                "authorization": self.headers.get("Authorization"),
                "type": (payload or {}).get("type"), "jobStatus": ((payload or {}).get("data") or {}).get("status"),
                "jobId": ((payload or {}).get("data") or {}).get("id"), "body": body.decode(errors="replace"),
            }
            with lock, open(args.log, "a") as log:
                log.write(json.dumps(record) + "\n")
            if args.delay and (args.delay_first == 0 or number <= args.delay_first):
                time.sleep(args.delay)
            if args.redirect:
                self.send_response(301)
                self.send_header("Location", args.redirect)
            elif number <= args.fail_first:
                self.send_response(500)
                if args.retry_after:
                    self.send_header("Retry-After", args.retry_after)
            else:
                self.send_response(args.status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

    serve(Handler, args.port)


if __name__ == "__main__":
    sys.exit(main())
