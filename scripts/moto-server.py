"""moto's S3 server for the tests, with writes serialised.

moto answers each request on a thread of its own, and its conditional
writes (`If-None-Match: *`, `If-Match`) check and then write without a
lock: two concurrent creates of one key can both succeed, which real S3
never allows. One lock around every write makes the stand-in as atomic as
S3, so the conformance suite's race tests measure planshare, not moto.
Reads stay concurrent. Usage: python moto-server.py HOST PORT
"""

import signal
import sys
import threading

from werkzeug.serving import run_simple
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)

WRITES = {"PUT", "POST", "DELETE", "PATCH"}


def serialised_writes(app):
    lock = threading.Lock()

    def wrapped(environ, start_response):
        if environ.get("REQUEST_METHOD") not in WRITES:
            return app(environ, start_response)
        with lock:
            # The whole answer is produced under the lock.
            return list(app(environ, start_response))

    return wrapped


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(
        host,
        port,
        serialised_writes(app),
        threaded=True,
        request_handler=MotoRequestHandler,
    )


if __name__ == "__main__":
    main()
