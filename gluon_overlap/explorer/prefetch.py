"""Pictures the explorer will likely show next, rendered ahead in a second process.

Drawing one view costs 40-400 ms of CPU on a loaded 2-core machine (``benchmarks/explorer_redraw.py``), more
than the 100 ms a click may take to show its picture.  So while a learner looks at one picture, a forked
worker process (a second core, no contention for the app's interpreter lock) renders the ones a next click
would ask for -- the neighbouring steps, the other operand, the configurations one menu change away -- with
its own :class:`~gluon_overlap.explorer.render.Renderer`: the same keys give the same bytes (a test checks).
A thread of the app receives them into the shared :class:`Pictures`.  The app never waits for the worker:
a picture that has not arrived is drawn at once in the app's own process.

The worker lives as long as the app's process and ends when the app's side of its pipe closes.  Where
``fork`` is not available (or fails) there is no worker and every picture is drawn on demand.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from gluon_overlap.explorer.render import Key, Renderer

Picture = tuple[bytes, dict[str, Any]]


class Pictures:
    """Rendered pictures by key (least recently used dropped past ``size``), shared by the app and the receiver."""

    def __init__(self, size: int = 600) -> None:
        self._items: OrderedDict[Key, Picture] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()
        self.hits = 0  # pictures shown without drawing them (prefetched, or shown before)
        self.prefetched = 0  # pictures the worker delivered

    def get(self, key: Key) -> Picture | None:
        with self._lock:
            item = self._items.get(key)
            if item is not None:
                self._items.move_to_end(key)
            return item

    def __contains__(self, key: Key) -> bool:
        with self._lock:
            return key in self._items

    def put(self, key: Key, picture: Picture) -> None:
        with self._lock:
            self._items[key] = picture
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)

    def show(self, key: Key, render: Callable[[Key], Picture]) -> Picture:
        """The picture of ``key``: from here if it is, else rendered now (and kept)."""
        item = self.get(key)
        if item is not None:
            with self._lock:
                self.hits += 1
            return item
        item = render(key)
        self.put(key, item)
        return item


#: after a new wish list the worker waits this long before drawing: the click that sent it is still being shown
#: (the app sends its pictures, the browser decodes them) and must not share the CPU with the worker
YIELD_S = 0.15


def _serve(conn: Any) -> None:
    """The worker: render each wanted key not yet sent; a newer wish list replaces the one being worked on.  It
    runs at a lower priority (``nice`` 10) than the app and the browser, whose work a learner is waiting for."""
    try:
        os.nice(10)
    except OSError:
        pass
    renderer = Renderer()
    sent: set[Key] = set()
    wanted: list[Key] = []
    while True:
        try:
            if not wanted or conn.poll():
                wanted = list(conn.recv())
                while conn.poll(YIELD_S):  # the newest list, once the app has shown the last click
                    wanted = list(conn.recv())
                continue
            key = Renderer.clamp(wanted.pop(0))
            if key in sent:
                continue
            conn.send((key, renderer.render(key)))
            sent.add(key)
        except (EOFError, OSError, KeyboardInterrupt):  # the app has gone (or stopped the worker)
            return
        except ValueError:  # a configuration plan refuses: nothing to draw
            continue


#: workers one process keeps at most: a notebook whose explorer cell runs again makes a new explorer (the old
#: one's widgets live on in ipywidgets' registry), and the oldest worker is stopped (its app draws on demand)
MAX_WORKERS = 2
_live: list[Prefetcher] = []
_live_lock = threading.RLock()


class Prefetcher:
    """A worker process rendering wish lists of keys into ``pictures``; :meth:`want` replaces the wish list."""

    def __init__(self, pictures: Pictures) -> None:
        self.pictures = pictures
        self.alive = False
        with _live_lock:
            oldest = _live[: max(0, len(_live) - MAX_WORKERS + 1)]
            _live.append(self)
        for worker in oldest:
            worker.stop()
        try:
            context = multiprocessing.get_context("fork")
            self._conn, child = context.Pipe()
            self._process = context.Process(target=_serve, args=(child,), daemon=True, name="explorer-prefetch")
            self._process.start()
            child.close()
        except (ValueError, OSError):  # no fork on this platform, or no process to be had: draw on demand
            return
        self.alive = True
        self._receiver = threading.Thread(target=self._receive, daemon=True, name="explorer-prefetch-receiver")
        self._receiver.start()

    def _receive(self) -> None:
        while True:
            try:
                key, picture = self._conn.recv()
            except (EOFError, OSError, TypeError, ValueError):  # the worker ended (or was stopped)
                self.alive = False
                return
            if key not in self.pictures:
                self.pictures.put(key, picture)
                self.pictures.prefetched += 1

    def want(self, keys: list[Key]) -> None:
        """Render these next, in this order (those already here are skipped)."""
        if not self.alive:
            return
        try:
            self._conn.send([key for key in keys if key not in self.pictures])
        except (OSError, ValueError):
            self.alive = False

    def stop(self) -> None:
        """End the worker (it also ends when this process does), then the receiver."""
        self.alive = False
        with _live_lock:
            if self in _live:
                _live.remove(self)
        if not hasattr(self, "_receiver"):  # it never started
            return
        if self._process.pid is not None and self._process.pid != os.getpid():
            self._process.terminate()
            self._process.join(timeout=5)
        self._receiver.join(timeout=5)
        try:
            self._conn.close()
        except OSError:
            pass
