"""Fetches dataset chunks in forked processes, for DatasetWriter.

multiprocessing.Pool is not used: terminate() kills a worker while it is
writing a result into the shared result pipe, and the pool's result thread
then waits forever for the rest of that message; and a worker killed by the
OOM killer loses its task, so get() waits forever too. Here each process has
its own pipe: a dead process is an EOF on that pipe, and stopping early kills
the processes and closes the pipes, whatever is half-written in them.

Items are pickled with protocol 5: contiguous arrays (the pixels of an image,
once the writer's prepare step has turned a PIL image into one) travel out of
band, over a socket of their own, from the array straight into the parent's
buffer. In band, a chunk of images is copied five more times (into a growing
pickle, through the pipe into chunks, into a buffer of them, into the PIL
image and into an array), and the parent's copies become the writer's
bottleneck; multiprocessing's recv_bytes_into still makes two of them.
"""
import io
import pickle
import signal
import socket
import traceback
from collections import deque
from multiprocessing.reduction import ForkingPickler

import numpy as np

from .utils import _get_item


class _RemoteTraceback(Exception):
    """The traceback of an exception raised in a fetch process."""

    def __str__(self):
        return self.args[0]


def _send(conn, sock, obj):
    """Sends obj: the sizes of its pickle's out-of-band buffers and the
    pickle as messages on conn, then the buffers' bytes on sock."""
    bufs = []
    f = io.BytesIO()
    # ForkingPickler's reducers (torch shares tensors through shared memory)
    # on a pickler that takes a buffer_callback, which ForkingPickler cannot.
    p = pickle.Pickler(f, 5, buffer_callback=bufs.append)
    p.dispatch_table = ForkingPickler(io.BytesIO()).dispatch_table
    p.dump(obj)
    views = [b.raw() for b in bufs]
    conn.send([v.nbytes for v in views])
    conn.send_bytes(f.getbuffer())
    for v in views:
        sock.sendall(v)


def _recv(conn, sock):
    """The object _send sent; EOFError if the sender died."""
    sizes = conn.recv()
    data = conn.recv_bytes()
    bufs = []
    for n in sizes:
        b = np.empty(n, np.uint8)  # not zeroed, unlike a bytearray
        view, got = memoryview(b), 0
        while got < n:
            k = sock.recv_into(view[got:])
            if k == 0:
                raise EOFError
            got += k
        bufs.append(b)
    return pickle.loads(data, buffers=bufs)


def _serve(conn, sock, dataset, chunks, prepare):
    # Go's handlers are inherited but its threads are not: a Go handler run
    # here can block forever. Ctrl-C is the parent's to handle; it kills us.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        try:
            k = conn.recv()
        except EOFError:  # the writer is gone
            return
        if k is None:
            return
        try:
            out = ("ok", [prepare(_get_item(dataset, i)) for i in chunks[k]])
        except BaseException as e:
            out = ("error", e, traceback.format_exc())
        try:
            _send(conn, sock, out)
        except Exception as e:  # the items or the exception do not pickle
            if out[0] == "ok":
                desc = f"items {chunks[k][0]}..{chunks[k][-1]} cannot be sent to the writer: {e!r}"
            else:
                desc = f"{type(out[1]).__name__}: {out[1]} (not picklable: {e!r})"
            _send(conn, sock, ("error", RuntimeError(desc), out[2] if out[0] == "error" else ""))


def fetch(dataset, chunks, workers, depth, prepare=None):
    """Yields the items of each chunk (a list of indices), in order. Chunk k is
    fetched by process k % workers, at most depth chunks ahead per process;
    the process passes each item through prepare (when given) first."""
    prepare = prepare or _same
    import multiprocessing
    ctx = multiprocessing.get_context("fork")
    workers = max(1, min(workers, len(chunks)))
    procs, conns, socks = [], [], []
    try:
        for _ in range(workers):
            parent, child = ctx.Pipe()
            sock, child_sock = socket.socketpair()
            conns.append(parent)
            socks.append(sock)
            try:
                p = ctx.Process(target=_serve, args=(child, child_sock, dataset, chunks, prepare), daemon=True,
                                name="ffcv_go-fetch")
                p.start()
            finally:
                child.close()  # so the parent sees EOF when the process dies
                child_sock.close()
            procs.append(p)
        pending = deque()
        sent = 0
        while sent < len(chunks) and sent < workers * depth:
            conns[sent % workers].send(sent)
            pending.append(sent)
            sent += 1
        while pending:
            k = pending.popleft()
            w = k % workers
            try:
                reply = _recv(conns[w], socks[w])
            except EOFError:
                procs[w].join(1)
                raise RuntimeError(f"fetch process {procs[w].pid} died ({_how(procs[w].exitcode)}) while "
                                   f"fetching dataset items {chunks[k][0]}..{chunks[k][-1]}") from None
            if reply[0] == "error":
                err = reply[1]
                err.__cause__ = _RemoteTraceback(f'\n"""\n{reply[2]}"""') if reply[2] else None
                raise err
            if sent < len(chunks):
                conns[sent % workers].send(sent)
                pending.append(sent)
                sent += 1
            yield from reply[1]
        for c in conns:
            c.send(None)
        for p in procs:
            p.join()
        procs = []
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.join()
        for c in conns + socks:
            c.close()


def _same(item):
    return item


def _how(exitcode):
    if exitcode is None:
        return "still running"
    if exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit status {exitcode}"

