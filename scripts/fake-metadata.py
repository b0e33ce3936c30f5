#!/usr/bin/env python3
"""A stand-in for the AWS credential endpoints, for tests: the EC2 instance metadata service
(IMDSv2: PUT /latest/api/token, then GETs with X-aws-ec2-metadata-token) and the container
credentials endpoint (GET /creds, checking the Authorization header). Each answer gives new
credentials (AKIDFAKE1, AKIDFAKE2, ...) that expire --lifetime seconds later (or each after its
own of --lifetimes). Logs every
request as one JSON line; prints "listening PORT" once ready.

    python3 scripts/fake-metadata.py --log metadata.jsonl --port 0 --role jobctl-worker \
        --secret SECRET --container-token TOKEN --lifetime 3600
"""
import argparse
import datetime
import json
import threading
from http.server import BaseHTTPRequestHandler

from helper_server import serve


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log", required=True)
    parser.add_argument("--role", default="jobctl-worker")
    parser.add_argument("--secret", default="fake-secret")
    parser.add_argument("--container-token", default="container-token")
    parser.add_argument("--lifetime", type=int, default=3600)
    # Lifetimes of the credentials given in turn (the last repeats): "120,-60" gives credentials
    # with two minutes left, then ones that expired a minute ago (a stale endpoint).
    parser.add_argument("--lifetimes", default=None)
    # Expiration with microseconds (2026-11-28T10:00:00.123456Z), as some endpoints write it.
    parser.add_argument("--microseconds", action="store_true")
    args = parser.parse_args()
    lock = threading.Lock()
    issued = [0]
    tokens = set()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_):
            pass

        def record(self):
            with lock, open(args.log, "a") as log:
                log.write(json.dumps({"method": self.command, "path": self.path,
                                      "headers": {k.lower(): v for k, v in self.headers.items()}}) + "\n")

        def reply(self, status, body, content_type="text/plain"):
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def credentials(self):
            with lock:
                issued[0] += 1
                number = issued[0]
            lifetimes = [int(x) for x in args.lifetimes.split(",")] if args.lifetimes else [args.lifetime]
            lifetime = lifetimes[min(number, len(lifetimes)) - 1]
            expiry = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=lifetime)
            return json.dumps({
                "Code": "Success", "Type": "AWS-HMAC",
                "AccessKeyId": f"AKIDFAKE{number}", "SecretAccessKey": args.secret,
                "Token": f"session-token-{number}", "Expiration": expiry.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if args.microseconds else "%Y-%m-%dT%H:%M:%SZ"),
            })

        def do_PUT(self):
            self.record()
            if self.path == "/latest/api/token" and self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
                token = f"imds-token-{len(tokens) + 1}"
                tokens.add(token)
                self.reply(200, token)
            else:
                self.reply(400, "bad token request")

        def do_GET(self):
            self.record()
            if self.path == "/creds":
                if self.headers.get("Authorization") != args.container_token:
                    self.reply(403, "bad authorization")
                else:
                    self.reply(200, self.credentials(), "application/json")
                return
            if self.headers.get("X-aws-ec2-metadata-token") not in tokens:
                self.reply(401, "IMDSv2 token required")
            elif self.path == "/latest/meta-data/iam/security-credentials/":
                self.reply(200, args.role)
            elif self.path == f"/latest/meta-data/iam/security-credentials/{args.role}":
                self.reply(200, self.credentials(), "application/json")
            else:
                self.reply(404, "not found")

    serve(Handler, args.port)


if __name__ == "__main__":
    main()
