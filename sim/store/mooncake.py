"""A Mooncake master and store client for one point: started, watched and always stopped.

The master is a child process of the point's process that dies with it: it is
started with ``PR_SET_PDEATHSIG = SIGKILL`` (a crash, ``os._exit`` or a kill of
the point takes it down too), and :meth:`MooncakeSession.close` stops it on every
normal or exceptional way out (end of the point, Ctrl-C, a watchdog). The client
lives in this process and is closed before the master goes. ``mooncake`` is
imported here only, when a point uses the real store.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sim.process.lifeline import preexec_die_with
from sim.store.model import StoreError

__all__ = ["ERROR_CODES", "MooncakeSession", "master_binary", "mooncake_missing"]

#: Return codes of the store client seen on this kind of machine (the rest print as numbers).
ERROR_CODES = {-600: "BUFFER_TOO_SMALL", -704: "OBJECT_NOT_FOUND", -900: "RPC_FAIL"}

#: Transfers in flight per peer over TCP: the defaults are too small for large batches.
TCP_ENV = {
    "MC_TCP_MAX_QUEUED_TRANSFERS_PER_PEER": "65535",
    "MC_TCP_MAX_PENDING_ADMISSIONS_PER_PEER": "65535",
}


def mooncake_missing() -> str | None:
    """None when the Mooncake store can be imported, else why not (one line)."""
    if importlib.util.find_spec("mooncake") is None:
        return (
            "the Mooncake package is not installed "
            "(pip install 'kvsim[mooncake]' or mooncake-transfer-engine-non-cuda)"
        )
    try:
        from mooncake.store import MooncakeDistributedStore  # heavy: only here  # noqa: F401
    except ImportError as exc:
        hint = " (apt-get install libibverbs1)" if "ibverbs" in str(exc) else ""
        return f"mooncake.store does not import: {exc}{hint}"
    if not master_binary().exists():
        return f"no mooncake_master binary at {master_binary()}"
    return None


def master_binary() -> Path:
    spec = importlib.util.find_spec("mooncake")
    if spec is None or spec.origin is None:
        raise StoreError("the Mooncake package is not installed")
    return Path(spec.origin).parent / "mooncake_master"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def describe(code: int) -> str:
    name = ERROR_CODES.get(code)
    return f"{code} ({name})" if name else str(code)


class MooncakeSession:
    """Master process + client of one point. Nothing starts before :meth:`start`."""

    def __init__(
        self,
        segment_bytes: int,
        local_buffer_bytes: int,
        ready_timeout_s: float,
    ) -> None:
        self._segment = segment_bytes
        self._local = local_buffer_bytes
        self._ready_timeout_s = ready_timeout_s
        self._master: subprocess.Popen[bytes] | None = None
        self._client: Any = None
        self._registered: list[int] = []
        self.port = 0

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> MooncakeSession:
        try:
            self._start_master()
            self._start_client()
        except BaseException:
            self.close()
            raise
        return self

    def _start_master(self) -> None:
        self.port = _free_port()
        cmd = [
            str(master_binary()),
            "--rpc_address=127.0.0.1",
            f"--rpc_port={self.port}",
            "--metrics_host=127.0.0.1",
            f"--metrics_port={_free_port()}",
            "--enable_http_metadata_server=false",
        ]
        # Warnings and errors only, onto this process's stderr (a point's stderr.log).
        env = {**os.environ, "GLOG_minloglevel": "1"}
        self._master = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            env=env,
            preexec_fn=preexec_die_with(os.getpid(), signal.SIGKILL),
        )
        deadline = time.monotonic() + self._ready_timeout_s
        while True:
            code = self._master.poll()
            if code is not None:
                raise StoreError(f"mooncake_master exited with code {code} while starting")
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise StoreError(
                        f"mooncake_master did not accept connections on 127.0.0.1:{self.port} "
                        f"within {self._ready_timeout_s:g} s (store.mooncake.ready_timeout_s)"
                    ) from None
                time.sleep(0.02)

    def _start_client(self) -> None:
        for k, v in TCP_ENV.items():
            os.environ.setdefault(k, v)
        # heavy: mooncake loads only when a real store starts
        from mooncake.store import MooncakeDistributedStore

        client = MooncakeDistributedStore()
        rc = client.setup(
            "127.0.0.1",
            "P2PHANDSHAKE",
            self._segment,
            self._local,
            "tcp",
            "",
            f"127.0.0.1:{self.port}",
        )
        if rc != 0:
            raise StoreError(f"mooncake client setup returned {describe(rc)}")
        self._client = client

    def register(self, ptr: int, nbytes: int) -> None:
        rc = self._client.register_buffer(ptr, nbytes)
        if rc != 0:
            raise StoreError(f"register_buffer({nbytes} bytes) returned {describe(rc)}")
        self._registered.append(ptr)

    def master_exit_code(self) -> int | None:
        """None while the master runs, else its exit code (negative: killed by a signal)."""
        return None if self._master is None else self._master.poll()

    @property
    def master_pid(self) -> int | None:
        return None if self._master is None else self._master.pid

    def close(self) -> None:
        """Close the client, then stop the master (SIGTERM, then SIGKILL). Idempotent."""
        client, self._client = self._client, None
        if client is not None:
            master_alive = self.master_exit_code() is None
            try:
                for ptr in self._registered:
                    client.unregister_buffer(ptr)
                if master_alive:  # with the master gone, close() only waits on retries
                    client.close()
            except Exception:  # the master is stopped below whatever happened here
                pass
            self._registered.clear()
        master, self._master = self._master, None
        if master is not None and master.poll() is None:
            master.terminate()
            try:
                master.wait(3.0)
            except subprocess.TimeoutExpired:
                master.kill()
                master.wait()

    def __enter__(self) -> MooncakeSession:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- data ------------------------------------------------------------------------------
    def put(
        self, keys: Sequence[str], addrs: Sequence[Sequence[int]], sizes: Sequence[Sequence[int]]
    ) -> list[int]:
        return list(self._client.batch_put_from_multi_buffers(keys, addrs, sizes))

    def put_flat(
        self, keys: Sequence[str], addrs: Sequence[int], sizes: Sequence[int]
    ) -> list[int]:
        return list(self._client.batch_put_from(keys, addrs, sizes))

    def get(
        self, keys: Sequence[str], addrs: Sequence[Sequence[int]], sizes: Sequence[Sequence[int]]
    ) -> list[int]:
        """batch_get_into_multi_buffers; releases the GIL while the bytes move."""
        return list(self._client.batch_get_into_multi_buffers(keys, addrs, sizes))

    def get_flat(
        self, keys: Sequence[str], addrs: Sequence[int], sizes: Sequence[int]
    ) -> list[int]:
        """batch_get_into: one address per key."""
        return list(self._client.batch_get_into(keys, addrs, sizes))
