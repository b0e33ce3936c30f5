"""What the helper servers in scripts/ share: serve on loopback, say the port, and never
outlive the process that started them (a test run, a demo)."""
import os
import ssl
import sys
import threading
import time
from http.server import ThreadingHTTPServer


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # Clients that close a connection mid-body (FFmpeg seeking, a timed-out sender) are
        # not worth a traceback.
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)


def serve(handler, port, tls_certificate=None):
    """Serves `handler` on 127.0.0.1:`port` (0: any free port), printing "listening PORT";
    over TLS with `tls_certificate` (a PEM file holding the certificate and its key)."""
    server = Server(("127.0.0.1", port), handler)
    if tls_certificate:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(tls_certificate)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    print(f"listening {server.server_address[1]}", flush=True)
    parent = os.getppid()

    def watch_parent():
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch_parent, daemon=True).start()
    server.serve_forever()
