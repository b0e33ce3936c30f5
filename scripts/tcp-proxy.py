#!/usr/bin/env python3
"""A TCP forwarder for tests: a database that goes away and comes back.

Usage: tcp-proxy.py --port PORT --log FILE --target HOST:PORT. Prints `listening PORT` (0 picks
a free port), then forwards every connection to the target until killed; killing it closes
every connection and refuses new ones, as a database host that went down would. (`--log` is
accepted for the tests' helper interface; nothing is logged.)
"""
import argparse
import socket
import threading

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, default=0)
parser.add_argument("--log")
parser.add_argument("--target", required=True)
arguments = parser.parse_args()
listen_port = arguments.port
host, port = arguments.target.rsplit(":", 1)
port = int(port)
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", listen_port))
server.listen(64)
print("listening %d" % server.getsockname()[1], flush=True)


def pipe(source, target):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            target.sendall(data)
    except OSError:
        pass
    finally:
        for s in (source, target):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


while True:
    client, _ = server.accept()
    try:
        upstream = socket.create_connection((host, port))
    except OSError:
        client.close()
        continue
    threading.Thread(target=pipe, args=(client, upstream), daemon=True).start()
    threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()
