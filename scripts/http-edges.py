#!/usr/bin/env python3
"""HTTP edge cases of `jobctl serve`, over a raw socket (tests).

Usage: http-edges.py PORT API_KEY JOB_ID. The server runs with --max-watches-per-key 1. Prints
one line per case, `NAME ok` or `NAME FAIL what happened`:
  close-pipelined  a long poll with `Connection: close` and a request pipelined after it gets
                   its answer (200, the job), then the connection closes
  stream-left      an event stream whose client closed its socket gives up the key's only
                   watch slot at once: a second stream is answered 200 within 2 s, not 429
  declared-413     a body declared far over the limit is refused 413 before it is sent, and
                   the connection closes (the body is never read)
  head             HEAD on GET routes: the GET's status and Content-Length, no body
"""
import socket
import sys
import time

port, key, job = int(sys.argv[1]), sys.argv[2], sys.argv[3]


def connect():
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def request(method, path, extra=""):
    return ("%s %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n%s\r\n" % (method, path, key, extra)).encode()


def read_all(sock, seconds=10):
    sock.settimeout(seconds)
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except (socket.timeout, TimeoutError):
            return data, False
        except ConnectionError:
            return data, True
        if not chunk:
            return data, True
        data += chunk


def report(name, ok, what=""):
    print("%s %s" % (name, "ok" if ok else "FAIL " + what), flush=True)


# close-pipelined
s = connect()
s.sendall(request("GET", "/v1/jobs/%s?wait=1s" % job, "Connection: close\r\n") + request("GET", "/v1/jobs/%s" % job))
data, closed = read_all(s)
report("close-pipelined", data.startswith(b"HTTP/1.1 200") and job.encode() in data and closed, repr(data[:120]))
s.close()

# stream-left
s = connect()
s.sendall(request("GET", "/v1/jobs/%s/events" % job))
s.settimeout(5)
first = s.recv(65536)
s.close()
answered = b""
deadline = time.time() + 2
while time.time() < deadline:
    t = connect()
    t.sendall(request("GET", "/v1/jobs/%s/events" % job))
    t.settimeout(5)
    answered = t.recv(65536)
    t.close()
    if answered.startswith(b"HTTP/1.1 200"):
        break
    time.sleep(0.1)
report("stream-left", first.startswith(b"HTTP/1.1 200") and answered.startswith(b"HTTP/1.1 200"), repr(answered[:60]))

# declared-413
s = connect()
started = time.time()
s.sendall(
    request("POST", "/v1/jobs", "Content-Type: application/json\r\nContent-Length: 100000000\r\n") + b'{"input":'
)
head, closed = read_all(s, 5)
report(
    "declared-413",
    head.startswith(b"HTTP/1.1 413") and closed and time.time() - started < 4,
    "%r closed=%s after %.1f s" % (head[:80], closed, time.time() - started),
)
s.close()

# head
results = []
for path in ["/v1/jobs/%s" % job, "/v1/jobs?limit=1", "/healthz"]:
    s = connect()
    s.sendall(request("HEAD", path, "Connection: close\r\n"))
    data, _ = read_all(s, 5)
    s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    length = [line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")]
    results.append(head.startswith(b"HTTP/1.1 200") and body == b"" and length and int(length[0].split(b":")[1]) > 0)
report("head", all(results), repr(results))
