#!/usr/bin/env python3
"""Clients that are too slow for `jobctl serve --request-timeout`, over TLS (tests).

Usage: slow-client.py PORT CAFILE API_KEY. Prints three lines:
  slow-body STATUS_LINE SECONDS   a body sent a byte every half second
  silent REPR SECONDS             a connection that sends nothing (b'' once the server closes it)
  dribble CUT SECONDS             request headers a byte at a time (True once the server cuts it)
"""
import socket
import ssl
import sys
import time

port, cafile, key = int(sys.argv[1]), sys.argv[2], sys.argv[3]
context = ssl.create_default_context(cafile=cafile)


def connect():
    return context.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="127.0.0.1")


def closed_within(sock, seconds):
    """b'' when the server closed the connection, None when it is still open, else what came."""
    sock.settimeout(seconds)
    try:
        return sock.recv(4096)
    except (socket.timeout, TimeoutError):
        return None
    except (ssl.SSLError, ConnectionError):
        return b""


s = connect()
s.sendall(
    (
        "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
        "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{" % key
    ).encode()
)
started = time.time()
answer = b""
s.settimeout(0.5)
while time.time() - started < 6 and not answer:
    try:
        s.sendall(b" ")
        answer = s.recv(4096)
    except (socket.timeout, TimeoutError):
        pass
    except (ssl.SSLError, ConnectionError):
        break
print("slow-body", answer.split(b"\r\n")[0].decode(errors="replace"), round(time.time() - started, 1))

s = connect()
started = time.time()
print("silent", repr(closed_within(s, 6)), round(time.time() - started, 1))

s = connect()
started = time.time()
cut = False
for byte in b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 200:
    try:
        s.sendall(bytes([byte]))
    except (ssl.SSLError, ConnectionError, OSError):
        cut = True
        break
    if closed_within(s, 0.05) == b"":
        cut = True
        break
    if time.time() - started > 8:
        break
print("dribble", cut, round(time.time() - started, 1))
