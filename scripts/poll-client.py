#!/usr/bin/env python3
"""Long polls on raw sockets against `jobctl serve` (tests): what the handler that parks them
below Hummingbird must get right. The server runs with --request-timeout 1s,
--max-watches-per-key 3 and --public-metrics.

Usage: poll-client.py PORT API_KEY JOB_ID. Prints one line per case:
  pipelined STATUS1 STATUS2 SECONDS  a poll and a plain GET in one write: both answered, in order
  close STATUS CLOSED                `Connection: close`: answered, then the connection is closed
  badkey STATUS CODE                 a wrong key on a long poll: 401 at once, the API's error body
  outlives STATUS SECONDS CLOSED     a 3 s wait past the 1 s request timeout: answered at 3 s,
                                     and the connection stays open
  share S4 S1 S2 S3                  a fourth poll for a key holding three is 429; once they
                                     leave, three are admitted again
  left HELD WATCHERS                 three polls held (the watcher gauge), then forgotten once
                                     their clients have left
  keepalive STATUS1 STATUS2          a second request on the connection after an answered poll
  body STATUS SECONDS                a long poll that carries a body goes through the router's
                                     own wait: answered when its wait is over
"""
import re
import socket
import sys
import time

port, key, job = int(sys.argv[1]), sys.argv[2], sys.argv[3]


def connect():
    sock = socket.create_connection(("127.0.0.1", port))
    sock.settimeout(10)
    return sock


def get(path, extra="", auth=None):
    return (
        "GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n%s\r\n" % (path, auth or key, extra)
    ).encode()


def read_response(sock, buffer=b""):
    """One response (status, headers, body) and what followed it."""
    while b"\r\n\r\n" not in buffer:
        chunk = sock.recv(65536)
        if not chunk:
            raise EOFError("closed before a response: %r" % buffer)
        buffer += chunk
    head, rest = buffer.split(b"\r\n\r\n", 1)
    lines = head.decode().split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise EOFError("closed inside a body")
        rest += chunk
    return status, headers, rest[:length], rest[length:]


def closed(sock, seconds=3):
    sock.settimeout(seconds)
    try:
        return sock.recv(4096) == b""
    except (socket.timeout, TimeoutError):
        return False
    except ConnectionError:
        return True


# A poll, and a plain GET pipelined behind it: the GET waits for the poll's answer.
sock = connect()
started = time.time()
sock.sendall(get("/v1/jobs/%s?wait=1500ms" % job) + get("/v1/jobs/%s" % job))
first, _, body1, rest = read_response(sock)
second, _, body2, _ = read_response(sock, rest)
print("pipelined", first, second, round(time.time() - started, 1), flush=True)
sock.close()

# Connection: close.
sock = connect()
sock.sendall(get("/v1/jobs/%s?wait=500ms" % job, "Connection: close\r\n"))
status, _, _, _ = read_response(sock)
print("close", status, closed(sock, 0.5), flush=True)
sock.close()

# A wrong key.
sock = connect()
sock.sendall(get("/v1/jobs/%s?wait=30s" % job, auth="jck_wrong"))
status, _, body, _ = read_response(sock)
code = re.search(rb'"code":"([a-z_]+)"', body)
print("badkey", status, code.group(1).decode() if code else body, flush=True)
sock.close()

# A wait longer than the request timeout (1 s) is still answered when it is over.
sock = connect()
started = time.time()
sock.sendall(get("/v1/jobs/%s?wait=3s" % job))
status, headers, _, _ = read_response(sock)
print("outlives", status, round(time.time() - started, 1), closed(sock, 0.5), flush=True)
sock.close()

# The key's share of watches (3): the fourth poll is refused at once.
socks = [connect() for _ in range(4)]
for s in socks[:3]:
    s.sendall(get("/v1/jobs/%s?wait=5s" % job))
time.sleep(0.5)
socks[3].sendall(get("/v1/jobs/%s?wait=5s" % job))
fourth, _, _, _ = read_response(socks[3])
for s in socks:
    s.close()
time.sleep(1.5)
# Once those clients have left, the key has its whole share again.
socks = [connect() for _ in range(3)]
for s in socks:
    s.sendall(get("/v1/jobs/%s?wait=300ms" % job))
shares = [read_response(s)[0] for s in socks]
for s in socks:
    s.close()
print("share", fourth, *shares, flush=True)

# Clients that leave while their polls wait are forgotten: the watcher gauge goes back to 0.
def watchers():
    sock = connect()
    sock.sendall(get("/metrics"))
    _, _, body, _ = read_response(sock)
    sock.close()
    found = re.search(rb"^jobctl_api_watchers (\d+)", body, re.M)
    return int(found.group(1)) if found else None


socks = [connect() for _ in range(3)]
for s in socks:
    s.sendall(get("/v1/jobs/%s?wait=30s" % job))
time.sleep(0.5)
held = watchers()
for s in socks:
    s.close()
for _ in range(10):
    time.sleep(0.2)
    left = watchers()
    if left == 0:
        break
print("left", held, left, flush=True)

# After an answered poll the connection serves the next request.
sock = connect()
sock.sendall(get("/v1/jobs/%s?wait=200ms" % job))
first, _, _, rest = read_response(sock)
sock.sendall(get("/v1/jobs/%s" % job))
second, _, _, _ = read_response(sock, rest)
print("keepalive", first, second, flush=True)
sock.close()

# A GET with a body is not parked (its body must be read); the router waits for it.
sock = connect()
started = time.time()
sock.sendall(get("/v1/jobs/%s?wait=1s" % job, "Content-Length: 5\r\n") + b"hello")
status, _, _, _ = read_response(sock)
print("body", status, round(time.time() - started, 1), flush=True)
sock.close()

