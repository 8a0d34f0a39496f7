"""gunicorn's sync worker turned inside out: every connection read and answered side by side, the
app given only whole requests, beside one another by size (docs/http.md#connections,
docs/security.md#idle-slow-and-greedy-connections).

A sync worker gives one connection its whole attention from accept to close: a client that
sends nothing or a byte a second held it until gunicorn's worker timeout killed it, and one that
sent a request and never read the answer held it for the answer's send timeout, every connection
queued behind waiting, the probes too. So this worker's main thread does all the socket work
through a selector, never blocking: it accepts every connection at once; reads the TLS
handshake, the head and the body, within `MXJOB_READ_TIMEOUT_SECONDS` of the accept; and sends
each answer, written whole into memory by the app, within SEND_TIMEOUT of its making. A
connection that is late, closes early, sends a head over gunicorn's limits or asks for chunked
encoding is closed; one whose declared body is over the body limit is answered at once (413, the
app's own answer) without reading it.

A request read whole is parsed by gunicorn from memory and answered by the app in a thread of
its own: the probes (`GET /healthz`, `/readyz`) at once by the main thread, a request of at most
SMALL bytes beside up to SMALL_CALLS others of its kind, a larger one alone, first come first
served. The hook's work is CPU-bound, so more at once would only share one core; but a small
request (the API server's conversion of one job, a small job's sync) no longer waits for a large
one (a list, a sync of thousands of pods) to finish, and the memory a worker needs stays that of
one large request.

Honest callers lose nothing: Metacontroller and the API server send their request as soon as they
connect, and read the answer as soon as it comes. What waiting connections may hold is bounded:
MAX_CONNECTIONS at once (a new one closes the oldest still being read or sent; with none, it is
closed itself), and as many bytes of requests and answers as two bodies at the limit (past it the
connection holding the most is closed, the oldest of equals: never a small honest one while a
large one is held).
"""

import collections
import contextlib
import enum
import errno
import os
import queue
import selectors
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from gunicorn import http, sock, util
from gunicorn.workers.sync import SyncWorker

#: Seconds a connection has to send its whole request (the handshake, the head and the body).
READ_TIMEOUT = float(os.environ.get("MXJOB_READ_TIMEOUT_SECONDS") or 5)
#: Seconds an answer may take to be sent, from its making to its last byte.
SEND_TIMEOUT = 10.0
#: Seconds a connection whose answer is sent waits for the client to close (gunicorn's
#: close_graceful: closing with unread bytes would reset the connection under the answer).
LINGER = 2.0
#: Bytes read from such a connection before it is closed anyway.
LINGER_BYTES = 64 * 1024
#: Connections a worker holds at once (read, queued or sent; not those the app is answering).
MAX_CONNECTIONS = 256
#: A request whose body is at most this runs beside a larger one.
SMALL = 256 * 1024
#: Small requests the app answers at once, beside one larger one.
SMALL_CALLS = 2
#: The probes, answered by the main thread as soon as they are read (hooks/app.py PROBES).
PROBES = frozenset({"/healthz", "/readyz"})
#: Bytes read or sent per call.
CHUNK = 256 * 1024
#: Bytes of body handed to gunicorn's readers at a time (as its socket reader receives them).
PIECE = 1024 * 1024
#: What ends an HTTP/1.1 head.
END_OF_HEAD = b"\r\n\r\n"
#: What a non-blocking call raises when it has to wait.
WOULD_BLOCK = (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError)


class Stage(enum.Enum):
    """Where a connection is: its request being read, whole and waiting for the app, being
    answered by the app, its answer being sent, waiting for the client to close."""

    READING = enum.auto()
    QUEUED = enum.auto()
    RUNNING = enum.auto()
    SENDING = enum.auto()
    CLOSING = enum.auto()


@dataclass(eq=False)
class _Connection:
    """One accepted connection and what the worker holds for it."""

    conn: socket.socket
    addr: Any
    listener: socket.socket
    tls: bool
    #: The monotonic moment it was accepted, and the one its current stage must end by.
    accepted: float
    deadline: float
    stage: Stage = Stage.READING
    handshaken: bool = False
    data: bytearray = field(default_factory=bytearray)
    #: The length of the head, and of head and body, once the head has been read.
    head: int = 0
    whole: int = -1
    #: The answer still to send, in pieces.
    answer: collections.deque[memoryview] = field(default_factory=collections.deque)
    #: Bytes of request or answer the worker holds for it.
    held: int = 0
    #: Bytes read after the answer was sent.
    drained: int = 0
    #: The monotonic moment the app took it.
    started: float = 0.0


class _Answer:
    """Where the app writes (gunicorn's response writes to a socket): the answer kept in memory,
    sent later by the main thread without blocking."""

    def __init__(self) -> None:
        self.pieces: list[memoryview] = []
        self.size = 0
        #: Cut short by gunicorn (an error after the head was written): not to be sent.
        self.broken = False

    def sendall(self, data: bytes) -> None:
        piece = memoryview(data if isinstance(data, bytes) else bytes(data))
        self.pieces.append(piece)
        self.size += len(piece)

    def send(self, data: bytes) -> int:
        self.sendall(data)
        return len(data)

    def gettimeout(self) -> float:
        return 0.0

    def setblocking(self, flag: bool) -> None:  # noqa: FBT001  (socket's signature)
        """Writes never block here."""

    def settimeout(self, timeout: float | None) -> None:
        """Writes never block here."""

    def recv(self, size: int) -> bytes:
        return b""

    def shutdown(self, how: int) -> None:
        self.broken = True

    def close(self) -> None:
        """The main thread closes the connection."""


@dataclass
class _Lane:
    """Requests the app answers side by side: how many at once, those waiting, those running."""

    size: int
    waiting: collections.deque[_Connection] = field(default_factory=collections.deque)
    running: int = 0


class BufferingWorker(SyncWorker):  # type: ignore[misc]  # gunicorn has no type annotations
    """A worker that reads and sends side by side and lets the app answer whole requests."""

    def run(self) -> None:
        self._selector = selectors.DefaultSelector()
        for listener in self.sockets:
            listener.setblocking(False)  # noqa: FBT003
            self._selector.register(listener, selectors.EVENT_READ)
        self._wake = os.pipe()
        os.set_blocking(self._wake[0], False)
        os.set_blocking(self._wake[1], False)
        for pipe in (self.PIPE[0], self._wake[0]):
            self._selector.register(pipe, selectors.EVENT_READ)
        self._connections: set[_Connection] = set()
        self._held = 0
        self._body_limit = int(os.environ.get("MXJOB_MAX_BODY_BYTES") or 256 * 1024 * 1024)
        self._lanes = {"small": _Lane(SMALL_CALLS), "large": _Lane(1)}
        self._answered: queue.SimpleQueue[tuple[_Connection, _Lane, _Answer]] = queue.SimpleQueue()
        try:
            while self.is_parent_alive() and (self.alive or self._busy()):
                if not self.alive:
                    self._stop_reading()
                self.notify()
                self._turn()
        finally:
            for connection in list(self._connections):
                self._drop(connection)

    def notify(self) -> None:
        """The heartbeat gunicorn's arbiter reads: now, or when the oldest call the app is still
        answering began, so that one running past the worker timeout has the worker replaced,
        as a sync worker's would."""
        now = time.monotonic()
        connections = getattr(self, "_connections", ())
        moment = min([now, *(c.started for c in connections if c.stage is Stage.RUNNING)])
        os.utime(self.tmp.fileno(), (moment, moment))

    def _busy(self) -> bool:
        """Whether a request read whole is still to be answered or its answer sent."""
        return any(c.stage is not Stage.READING for c in self._connections)

    def _stop_reading(self) -> None:
        """Stopping: no new connection, none still being read; the others are answered."""
        for listener in self.sockets:
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(listener)
        for connection in [c for c in self._connections if c.stage is Stage.READING]:
            self._drop(connection)

    def _turn(self) -> None:
        """Wait for any socket (at most a second, for the heartbeat); accept, read, send, take
        the app's answers, expire, and give the app what it can take."""
        deadlines = [c.deadline for c in self._connections if c.stage in _TIMED]
        soonest = min(deadlines, default=time.monotonic() + 1.0)
        for key, _ in self._selector.select(max(0.0, min(1.0, soonest - time.monotonic()))):
            if key.fileobj in (self.PIPE[0], self._wake[0]):
                with contextlib.suppress(BlockingIOError):
                    os.read(key.fileobj, 4096)  # type: ignore[arg-type]
            elif key.data is None:
                self._accept(key.fileobj)  # type: ignore[arg-type]
            else:
                self._serve(key.data)
        while not self._answered.empty():
            connection, lane, answer = self._answered.get()
            lane.running -= 1
            self._send_answer(connection, answer)
        now = time.monotonic()
        for connection in [c for c in self._connections if c.stage in _TIMED]:
            if connection.deadline <= now:
                self.log.debug("closed %s: %s too late", connection.addr, connection.stage.name)
                self._drop(connection)
        self._dispatch()

    def _serve(self, connection: _Connection) -> None:
        if connection.stage is Stage.READING:
            self._read(connection)
        elif connection.stage is Stage.SENDING:
            self._send(connection)
        else:
            self._drain(connection)

    def _accept(self, listener: socket.socket) -> None:
        """Every connection waiting on the listener, each read at once if it has sent already;
        with MAX_CONNECTIONS held, the oldest still read or sent makes room."""
        while True:
            try:
                conn, addr = listener.accept()
            except OSError as exc:
                if exc.errno in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                    return
                raise
            if not self._make_room():
                self.log.debug("closed %s: %d connections held", addr, MAX_CONNECTIONS)
                conn.close()
                continue
            conn.setblocking(False)  # noqa: FBT003
            util.close_on_exec(conn)
            if self.cfg.is_ssl:
                conn = sock.ssl_context(self.cfg).wrap_socket(
                    conn, server_side=True, do_handshake_on_connect=False
                )
            now = time.monotonic()
            connection = _Connection(conn, addr, listener, self.cfg.is_ssl, now, now + READ_TIMEOUT)
            self._connections.add(connection)
            self._selector.register(conn, selectors.EVENT_READ, connection)
            self._read(connection)

    def _make_room(self) -> bool:
        """Room for one more connection: False when every one held is queued for the app."""
        held = [c for c in self._connections if c.stage is not Stage.RUNNING]
        if len(held) < MAX_CONNECTIONS:
            return True
        movable = [c for c in held if c.stage is not Stage.QUEUED]
        if not movable:
            return False
        self._drop(min(movable, key=lambda c: c.accepted))
        return True

    def _read(self, connection: _Connection) -> None:
        """Read what has come; queue the request once it is whole, drop the connection if it
        cannot become one."""
        try:
            if connection.tls and not connection.handshaken:
                connection.conn.do_handshake()  # type: ignore[attr-defined]
                connection.handshaken = True
            while connection.whole < 0 or len(connection.data) < connection.whole:
                chunk = connection.conn.recv(CHUNK)
                if not chunk:
                    self._drop(connection)  # closed before the request was whole
                    return
                connection.data += chunk
                self._hold(connection, len(chunk))
                if connection not in self._connections or not self._measure(connection):
                    self._drop(connection)
                    return
        except WOULD_BLOCK:
            return  # more to come
        except OSError:
            self._drop(connection)  # reset, or a TLS handshake that failed
            return
        self._selector.unregister(connection.conn)
        if self._is_probe(connection):
            self._take(connection)
            self._send_answer(connection, self._call(connection))
        else:
            connection.stage = Stage.QUEUED
            self._lane(connection).waiting.append(connection)

    def _measure(self, connection: _Connection) -> bool:
        """Once the head is in, how long the request is; False for one this worker refuses to
        wait for (a head over the limits, chunked encoding)."""
        if connection.whole >= 0:
            return True
        data = connection.data
        end = data.find(END_OF_HEAD)
        if end < 0:
            limit = self.cfg.limit_request_line + self.cfg.limit_request_field_size * (
                self.cfg.limit_request_fields + 1
            )
            return bool(len(data) <= limit)
        head = bytes(data[:end]).lower()
        if b"\ntransfer-encoding:" in head:
            return False
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip() == b"content-length" and value.strip().isdigit():
                length = int(value.strip())
        # A body over the limit is not waited for: the app refuses it by its declared length.
        connection.head = end + len(END_OF_HEAD)
        connection.whole = connection.head + (0 if length > self._body_limit else length)
        return True

    def _is_probe(self, connection: _Connection) -> bool:
        """`GET /healthz` or `GET /readyz`, with no body."""
        line = bytes(connection.data[: connection.data.find(b"\r\n")]).split(b" ")
        target = line[1].split(b"?")[0].decode("latin-1") if len(line) == 3 else ""
        return line[0] == b"GET" and target in PROBES and connection.whole == connection.head

    def _lane(self, connection: _Connection) -> _Lane:
        body = connection.whole - connection.head
        return self._lanes["small" if body <= SMALL else "large"]

    def _dispatch(self) -> None:
        """Give the app every request waiting that a lane has room for, first come first."""
        for lane in self._lanes.values():
            while lane.waiting and lane.running < lane.size:
                connection = lane.waiting.popleft()
                self._take(connection)
                lane.running += 1
                threading.Thread(target=self._run, args=(connection, lane), daemon=True).start()

    def _take(self, connection: _Connection) -> None:
        """The app takes the request: its bytes are the app's now."""
        connection.stage = Stage.RUNNING
        connection.started = time.monotonic()
        self._hold(connection, -connection.held)

    def _run(self, connection: _Connection, lane: _Lane) -> None:
        """In a thread of its own: the app's answer, handed back to the main thread (whatever
        happens: the lane counts it until then)."""
        answer = _Answer()
        answer.broken = True
        try:
            answer = self._call(connection)
        finally:
            self._answered.put((connection, lane, answer))
        with contextlib.suppress(BlockingIOError):
            os.write(self._wake[1], b"\0")

    def _call(self, connection: _Connection) -> _Answer:
        """The whole request, parsed from memory and answered by the app as a sync worker's
        would be, into memory."""
        answer, req = _Answer(), None
        request = _pieces(connection.data, connection.head, connection.whole)
        connection.data = bytearray()
        try:
            req = next(http.get_parser(self.cfg, request, connection.addr))
            self.handle_request(connection.listener, req, answer, connection.addr)
        except (http.errors.NoMoreData, StopIteration):
            answer.broken = True
        except Exception as exc:
            self.handle_error(req, answer, connection.addr, exc)
        return answer

    def _send_answer(self, connection: _Connection, answer: _Answer) -> None:
        """Start sending what the app wrote, within SEND_TIMEOUT."""
        if answer.broken or connection not in self._connections:
            self._drop(connection)
            return
        connection.stage = Stage.SENDING
        connection.answer.extend(answer.pieces)
        connection.deadline = time.monotonic() + SEND_TIMEOUT
        self._selector.register(connection.conn, selectors.EVENT_WRITE, connection)
        self._hold(connection, answer.size)
        if connection in self._connections:
            self._send(connection)

    def _send(self, connection: _Connection) -> None:
        """Send what the socket takes now; once all is sent, wait for the client to close."""
        try:
            while connection.answer:
                # The same bytes again after a wait: TLS retries a write with the same buffer.
                sent = connection.conn.send(connection.answer[0][:CHUNK])
                self._hold(connection, -sent)
                connection.answer[0] = connection.answer[0][sent:]
                if not connection.answer[0]:
                    connection.answer.popleft()
        except ssl.SSLWantReadError:
            self._selector.modify(connection.conn, selectors.EVENT_READ, connection)
            return
        except WOULD_BLOCK:
            self._selector.modify(connection.conn, selectors.EVENT_WRITE, connection)
            return
        except OSError:
            self._drop(connection)  # the client went away
            return
        try:
            connection.conn.shutdown(socket.SHUT_WR)
        except OSError:
            self._drop(connection)
            return
        connection.stage = Stage.CLOSING
        connection.deadline = time.monotonic() + LINGER
        self._selector.modify(connection.conn, selectors.EVENT_READ, connection)

    def _drain(self, connection: _Connection) -> None:
        """The answer is sent: read until the client closes, LINGER_BYTES at most."""
        try:
            chunk = connection.conn.recv(4096)
        except WOULD_BLOCK:
            return
        except OSError:
            chunk = b""
        connection.drained += len(chunk)
        if not chunk or connection.drained > LINGER_BYTES:
            self._drop(connection)

    def _hold(self, connection: _Connection, size: int) -> None:
        """Count `size` more bytes held for the connection; past twice the body limit, close
        the connections holding the most until the rest fit."""
        connection.held += size
        self._held += size
        while self._held > 2 * self._body_limit:
            held = [c for c in self._connections if c.stage is not Stage.RUNNING]
            if not held:
                return
            largest = max(held, key=lambda c: (c.held, -c.accepted))
            self.log.debug("closed %s: holding %d bytes", largest.addr, largest.held)
            self._drop(largest)

    def _drop(self, connection: _Connection) -> None:
        if connection not in self._connections:
            return
        self._connections.discard(connection)
        self._held -= connection.held
        connection.held = 0
        if connection.stage is Stage.QUEUED:
            self._lane(connection).waiting.remove(connection)
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(connection.conn)
        with contextlib.suppress(OSError):
            connection.conn.close()


#: The stages whose end has a deadline.
_TIMED = frozenset({Stage.READING, Stage.SENDING, Stage.CLOSING})


def _pieces(data: bytearray, head: int, whole: int) -> Iterator[bytes]:
    """A request as gunicorn's socket reader would receive it: the head alone, then the body a
    PIECE at a time (handed all at once, its readers copy the whole body for every MiB the app
    reads). The buffer is let go with the last piece, before the app decodes the body."""
    view = memoryview(data)
    starts = [0, *range(head, whole, PIECE)]
    for i, start in enumerate(starts):
        piece = bytes(view[start : (head if i == 0 else min(start + PIECE, whole))])
        if i == len(starts) - 1:
            view.release()
            data.clear()
        yield piece
