"""A Redis server that ministream starts itself: on 127.0.0.1, its data in a temporary directory, stopped at exit.

The external-store backend (``state/redis_store.py``) needs a Redis server. ministream does not expect one to be
running: it starts Debian's ``redis-server`` (installed by ``make setup``) on a free port of the loopback
interface, with persistence off and its working directory in a new temporary directory, and stops it (and
removes the directory) when the process exits, or when :meth:`RedisServer.stop` is called. One server is
shared by every run of a process (:func:`shared_server`); each run's state lives under its own key prefix.

When ``redis-server`` is missing, the error says what to install.
"""

from __future__ import annotations

import atexit
import contextlib
import shutil
import socket
import subprocess
import tempfile
import time

import redis

from ministream.errors import PipelineError

INSTALL_HINT = (
    "the Redis state backend needs Debian's redis-server, which `make setup` installs: run `make setup`, or "
    "`sudo apt-get install -y redis-server` (any Redis 6 or newer on the PATH will do)"
)
START_TIMEOUT_S = 10.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class RedisServer:
    """A ``redis-server`` process on 127.0.0.1 that this process started, and a client connected to it."""

    def __init__(self, executable: str | None = None):
        found = executable or shutil.which("redis-server")
        if found is None:
            raise PipelineError(INSTALL_HINT)
        self.directory = tempfile.mkdtemp(prefix="ministream-redis-")
        self.port = _free_port()
        # persistence off: the state lives in memory only, as an external store's cache would; the directory
        # holds what Redis writes anyway (nothing, unless asked to SAVE)
        self.process = subprocess.Popen(
            [found, "--bind", "127.0.0.1", "--port", str(self.port), "--dir", self.directory, "--save", ""]
            + ["--appendonly", "no", "--protected-mode", "yes", "--daemonize", "no", "--loglevel", "warning"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self.client = redis.Redis(host="127.0.0.1", port=self.port)
        self._wait_until_ready()

    def _wait_until_ready(self) -> None:
        """Wait (at most ``START_TIMEOUT_S``) until the server answers a PING."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self.process.poll() is not None:
                error = self.process.stderr.read().decode(errors="replace") if self.process.stderr else ""
                self._remove_directory()
                raise PipelineError(f"redis-server exited at once (code {self.process.returncode}): {error.strip()}")
            try:
                self.client.ping()
                return
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise PipelineError(
                        f"redis-server did not answer on 127.0.0.1:{self.port} within {START_TIMEOUT_S} s"
                    ) from None
                time.sleep(0.02)

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def memory_bytes(self) -> int:
        """The bytes the server uses for its data (``INFO memory``'s ``used_memory``)."""
        return int(self.client.info("memory")["used_memory"])

    def stop(self) -> None:
        """Stop the server (it saves nothing) and remove its directory."""
        if self.process.poll() is None:
            with contextlib.suppress(redis.ConnectionError):  # the server closes the connection as it shuts down
                self.client.shutdown(nosave=True)
            try:
                self.process.wait(timeout=START_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.client.close()
        if self.process.stderr:
            self.process.stderr.close()
        self._remove_directory()

    def _remove_directory(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


_shared: list[RedisServer] = []


def shared_server() -> RedisServer:
    """The process's Redis server, started on first use and stopped when the process exits."""
    if not _shared or not _shared[0].running:
        _shared[:] = [RedisServer()]
        atexit.register(_shared[0].stop)
    return _shared[0]
