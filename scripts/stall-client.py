#!/usr/bin/env python3
"""A client that asks for large responses and stops reading (tests of `jobctl serve`).

Usage: stall-client.py PORT API_KEY COUNT WAIT. Sends COUNT pipelined `GET /v1/jobs?limit=200`
on one connection with a small receive buffer, reads nothing for WAIT seconds, then reads what
is left. Prints one line: `responses N bytes B closed yes|no`: how many responses began, and
whether the server closed the connection before all COUNT were sent.

stall-client.py PORT API_KEY slow: one such request read slowly but steadily (16 KB every
0.1 s); prints `complete yes|no`: whether the whole response came (a slow reader is not cut).
"""
import socket
import sys
import time

port, key = int(sys.argv[1]), sys.argv[2]
if sys.argv[3] == "slow":
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.sendall(("GET /v1/jobs?limit=200 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n" % key).encode())
    sock.settimeout(10)
    data = b""
    while True:
        try:
            chunk = sock.recv(16384)
        except (socket.timeout, TimeoutError, ConnectionError):
            break
        if not chunk:
            break
        data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = [l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")]
        if length and len(body) >= int(length[0].split(b":")[1]):
            break
        time.sleep(0.1)
    head, _, body = data.partition(b"\r\n\r\n")
    length = [l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")]
    done = bool(length) and len(body) == int(length[0].split(b":")[1]) and len(body) > 500000
    print("complete %s (%d bytes)" % ("yes" if done else "no", len(body)))
    sys.exit(0)
count, wait = int(sys.argv[3]), float(sys.argv[4])
sock = socket.socket()
sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
sock.connect(("127.0.0.1", port))
request = "GET /v1/jobs?limit=200 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n" % key
sock.sendall(request.encode() * count)
time.sleep(wait)
sock.settimeout(10)
data = b""
closed = False
while True:
    try:
        chunk = sock.recv(1 << 20)
    except (socket.timeout, TimeoutError):
        break
    except ConnectionError:
        closed = True
        break
    if not chunk:
        closed = True
        break
    data += chunk
responses = data.count(b"HTTP/1.1 200")
print("responses %d bytes %d closed %s" % (responses, len(data), "yes" if closed and responses < count else "no"))
