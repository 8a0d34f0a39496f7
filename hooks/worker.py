"""gunicorn's sync worker, given a request only once it has been read whole, within a deadline
(docs/http.md#connections, docs/security.md#idle-and-slow-connections).

A sync worker gives one connection its whole attention from accept to close: a client that
sends nothing, or a byte a second, holds it until gunicorn's worker timeout kills it, and every
connection queued behind waits; a few idle connections stop the conversion webhook's one worker
for good. gunicorn has no read timeout for sync workers, and gthread's threads block on a slow
client's head or body just the same. So this worker accepts every connection at once and reads
them all side by side through a selector: the TLS handshake, the head and the body, within
`MXJOB_READ_TIMEOUT_SECONDS` of the accept (a clock that stops while the worker answers another
request, which no client can hurry). A connection that is late, closes early, sends a head over
gunicorn's limits or asks for chunked encoding is closed; one whose declared body is over the body
limit is answered at once (413, the app's own answer) without reading it. A request read whole
is parsed by gunicorn from memory and answered as the sync worker answers, one at a time: the
hook's work is CPU-bound, so answering more at once would only share one core.

Honest callers lose nothing: Metacontroller and the API server send their request as soon as they
connect, and it is read as fast as it comes. Connections waiting for their data cost a socket and
what they sent: at most `MAX_PENDING` of them per worker (a new one closes the one nearest its
deadline), and as many bytes as two bodies at the limit (past it the connection that overflows
is closed).
"""

import contextlib
import errno
import os
import selectors
import socket
import ssl
import time
from dataclasses import dataclass, field
from typing import Any

from gunicorn import http, sock, util
from gunicorn.workers.sync import SyncWorker

#: Seconds a connection has to send its whole request (the handshake, the head and the body).
READ_TIMEOUT = float(os.environ.get("MXJOB_READ_TIMEOUT_SECONDS") or 5)
#: Seconds an answer may take to be sent (a client that does not read it is let go).
SEND_TIMEOUT = 10.0
#: Connections a worker waits on at once.
MAX_PENDING = 256
#: Bytes read per receive.
CHUNK = 256 * 1024
#: Bytes of body handed to gunicorn's readers at a time (as its socket reader receives them).
PIECE = 1024 * 1024
#: What ends an HTTP/1.1 head.
END_OF_HEAD = b"\r\n\r\n"


@dataclass
class _Pending:
    """A connection whose request is still being read."""

    conn: socket.socket
    addr: Any
    listener: socket.socket
    #: The monotonic moment it must have been read by (moved on while the worker answers).
    deadline: float
    tls: bool
    handshaken: bool = False
    data: bytearray = field(default_factory=bytearray)
    #: The length of the head, and of head and body, once the head has been read.
    head: int = 0
    whole: int | None = None


class BufferingWorker(SyncWorker):  # type: ignore[misc]  # gunicorn has no type annotations
    """A sync worker that reads requests side by side and answers them one at a time."""

    def run(self) -> None:
        self._selector = selectors.DefaultSelector()
        for listener in self.sockets:
            listener.setblocking(False)  # noqa: FBT003
            self._selector.register(listener, selectors.EVENT_READ)
        self._selector.register(self.PIPE[0], selectors.EVENT_READ)
        self._pending: dict[int, _Pending] = {}
        self._buffered = 0
        self._body_limit = int(os.environ.get("MXJOB_MAX_BODY_BYTES") or 256 * 1024 * 1024)
        try:
            while self.alive and self.is_parent_alive():
                self.notify()
                self._turn()
        finally:
            for pending in list(self._pending.values()):
                self._drop(pending)

    def _turn(self) -> None:
        """Wait for any socket (at most a second, for the heartbeat); accept, read, expire."""
        soonest = min((p.deadline for p in self._pending.values()), default=None)
        wait = 1.0 if soonest is None else max(0.0, min(1.0, soonest - time.monotonic()))
        for key, _ in self._selector.select(wait):
            if key.fileobj == self.PIPE[0]:
                os.read(self.PIPE[0], 1)
            elif key.data is None:
                self._accept(key.fileobj)  # type: ignore[arg-type]
            else:
                self._read(key.data)
        now = time.monotonic()
        for pending in [p for p in self._pending.values() if p.deadline <= now]:
            self.log.debug("closed %s: no whole request within %g s", pending.addr, READ_TIMEOUT)
            self._drop(pending)

    def _accept(self, listener: socket.socket) -> None:
        """Every connection waiting on the listener, each read at once if it has sent already;
        with MAX_PENDING waiting already, the one closest to its deadline makes room."""
        while True:
            try:
                conn, addr = listener.accept()
            except OSError as exc:
                if exc.errno in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                    return
                raise
            if len(self._pending) >= MAX_PENDING:
                self._drop(min(self._pending.values(), key=lambda p: p.deadline))
            conn.setblocking(False)  # noqa: FBT003
            util.close_on_exec(conn)
            if self.cfg.is_ssl:
                conn = sock.ssl_context(self.cfg).wrap_socket(
                    conn, server_side=True, do_handshake_on_connect=False
                )
            pending = _Pending(
                conn, addr, listener, time.monotonic() + READ_TIMEOUT, self.cfg.is_ssl
            )
            self._pending[conn.fileno()] = pending
            self._selector.register(conn, selectors.EVENT_READ, pending)
            self._read(pending)

    def _read(self, pending: _Pending) -> None:
        """Read what has come; answer the request once it is whole, drop the connection if it
        cannot become one."""
        try:
            if pending.tls and not pending.handshaken:
                pending.conn.do_handshake()  # type: ignore[attr-defined]
                pending.handshaken = True
            while pending.whole is None or len(pending.data) < pending.whole:
                chunk = pending.conn.recv(CHUNK)
                if not chunk:
                    self._drop(pending)  # closed before the request was whole
                    return
                self._buffered += len(chunk)
                pending.data += chunk
                if self._buffered > 2 * self._body_limit or not self._measure(pending):
                    self._drop(pending)
                    return
        except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
            return  # more to come
        except OSError:
            self._drop(pending)  # reset, or a TLS handshake that failed
            return
        self._answer(pending)

    def _measure(self, pending: _Pending) -> bool:
        """Once the head is in, how long the request is; False for one this worker refuses to
        wait for (a head over the limits, chunked encoding)."""
        if pending.whole is not None:
            return True
        end = pending.data.find(END_OF_HEAD)
        if end < 0:
            limit = self.cfg.limit_request_line + self.cfg.limit_request_field_size * (
                self.cfg.limit_request_fields + 1
            )
            return bool(len(pending.data) <= limit)
        head = bytes(pending.data[:end]).lower()
        if b"\ntransfer-encoding:" in head:
            return False
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip() == b"content-length" and value.strip().isdigit():
                length = int(value.strip())
        # A body over the limit is not waited for: the app refuses it by its declared length.
        pending.head = end + len(END_OF_HEAD)
        pending.whole = pending.head + (0 if length > self._body_limit else length)
        return True

    def _answer(self, pending: _Pending) -> None:
        """The whole request, parsed from memory and answered as a sync worker answers; the
        time it takes is given back to every connection still being read."""
        started = time.monotonic()
        self._forget(pending)
        # The head alone, then the body in pieces of a socket's read: gunicorn parses the head
        # from the first, and its readers keep what they hold to one piece (given the body at
        # once, they copy all of it for every MiB the app reads).
        # The buffer is let go as soon as the app has read the body (before it decodes it).
        whole, pending.data = memoryview(pending.data)[: pending.whole], bytearray()
        request = (
            bytes(whole[start : start + (PIECE if start else pending.head)])
            for start in (0, *range(pending.head, pending.whole or 0, PIECE))
        )
        conn, req = pending.conn, None
        try:
            conn.settimeout(SEND_TIMEOUT)  # blocking, within a time
            req = next(http.get_parser(self.cfg, request, pending.addr))
            self.handle_request(pending.listener, req, conn, pending.addr)
        except (http.errors.NoMoreData, StopIteration):
            pass
        except OSError as exc:
            if exc.errno not in (errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN, None):
                self.log.exception("Socket error processing request.")
        except Exception as exc:
            self.handle_error(req, conn, pending.addr, exc)
        finally:
            util.close_graceful(conn)
        spent = time.monotonic() - started
        for other in self._pending.values():
            other.deadline += spent

    def _forget(self, pending: _Pending) -> None:
        self._selector.unregister(pending.conn)
        del self._pending[pending.conn.fileno()]
        self._buffered -= len(pending.data)

    def _drop(self, pending: _Pending) -> None:
        self._forget(pending)
        with contextlib.suppress(OSError):
            pending.conn.close()
