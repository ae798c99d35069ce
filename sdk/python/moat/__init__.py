"""Run untrusted code in moat sandboxes, through a `moat serve` server.

    import moat
    with moat.Sandbox(socket="/run/moat.sock") as sb:
        r = sb.run(["python3", "-c", "print(1)"])
        print(r.stdout, r.exit_status, r.denials, r.changes)

A Sandbox holds its own connection to the server; the server destroys the sandbox (and
kills whatever runs in it) when that connection closes, so a client that dies leaves
nothing behind. The protocol is described in moat's docs/serve.md.
"""
import base64
import json
import socket
import threading
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

__all__ = ["Client", "Sandbox", "Result", "MoatError", "AsyncSandbox"]
__version__ = "0.1.0"


class MoatError(Exception):
    """An error answer from the server: .code (e.g. "bad_request", "not_found") and text."""

    def __init__(self, code: str, message: str):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def _bytes_of(obj: Dict[str, Any], key: str) -> bytes:
    if key in obj:
        return obj[key].encode("utf-8", "surrogateescape")
    if key + "_b64" in obj:
        return base64.b64decode(obj[key + "_b64"])
    return b""


@dataclass
class Result:
    """How a command ended in a sandbox."""

    exit_status: int
    reason: str
    stdout_bytes: bytes
    stderr_bytes: bytes
    denials: List[Dict[str, Any]] = field(default_factory=list)
    changes: List[Dict[str, Any]] = field(default_factory=list)
    wall_ms: Optional[float] = None
    cpu_ms: Optional[float] = None
    peak_memory: Optional[int] = None
    raw: Dict[str, Any] = field(default_factory=dict)

    @property
    def stdout(self) -> str:
        return self.stdout_bytes.decode("utf-8", "replace")

    @property
    def stderr(self) -> str:
        return self.stderr_bytes.decode("utf-8", "replace")

    @property
    def ok(self) -> bool:
        return self.exit_status == 0

    @classmethod
    def from_json(cls, r: Dict[str, Any]) -> "Result":
        return cls(
            exit_status=r.get("exit_status", -1),
            reason=r.get("reason", "unknown"),
            stdout_bytes=_bytes_of(r, "stdout"),
            stderr_bytes=_bytes_of(r, "stderr"),
            denials=r.get("denials", []),
            changes=r.get("changes", []),
            wall_ms=r.get("wall_ms"),
            cpu_ms=r.get("cpu_ms"),
            peak_memory=r.get("peak_memory"),
            raw=r,
        )


class Client:
    """One connection to a moat server. Thread-safe: one request at a time."""

    def __init__(self, socket_path: str, timeout: Optional[float] = None):
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout)
        self._sock.connect(socket_path)
        self._file = self._sock.makefile("rwb")
        self._lock = threading.Lock()
        self._next = 0

    def close(self) -> None:
        try:
            self._file.close()
        finally:
            self._sock.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _send(self, req: Dict[str, Any]) -> int:
        self._next += 1
        req = dict(req, id=self._next)
        self._file.write(json.dumps(req).encode() + b"\n")
        self._file.flush()
        return self._next

    def _read(self) -> Dict[str, Any]:
        line = self._file.readline()
        if not line:
            raise ConnectionError("the moat server closed the connection")
        return json.loads(line)

    def request_stream(self, req: Dict[str, Any]) -> Iterator[Dict[str, Any]]:
        """Send one request; yield every line answering it, the final one last."""
        with self._lock:
            rid = self._send(req)
            while True:
                msg = self._read()
                if msg.get("id") != rid:
                    continue  # an answer to a request we no longer wait for
                if "event" in msg:
                    yield msg
                    continue
                if not msg.get("ok"):
                    err = msg.get("error", {})
                    raise MoatError(err.get("code", "error"), err.get("message", ""))
                yield msg
                return

    def request(self, req: Dict[str, Any]) -> Dict[str, Any]:
        last: Dict[str, Any] = {}
        for msg in self.request_stream(req):
            last = msg
        return last

    def ping(self) -> str:
        return self.request({"op": "ping"})["version"]


class Sandbox:
    """A sandbox on a moat server, destroyed when closed (or when the connection ends)."""

    def __init__(
        self,
        socket: str,
        policy: Optional[str] = None,
        profile: Optional[str] = None,
        workspace: Optional[str] = None,
        env: Optional[Dict[str, str]] = None,
        limits: Optional[Dict[str, Union[int, float, str]]] = None,
        mode: Optional[str] = None,
        allow_net: Optional[Sequence[str]] = None,
        cow: bool = False,
    ):
        self.client = Client(socket)
        req: Dict[str, Any] = {"op": "create"}
        if cow:
            req["cow"] = True
        for key, val in (("policy", policy), ("profile", profile), ("workspace", workspace),
                         ("env", env), ("limits", limits), ("mode", mode)):
            if val is not None:
                req[key] = val
        if allow_net is not None:
            req["allow_net"] = list(allow_net)
        try:
            r = self.client.request(req)
        except BaseException:
            self.client.close()
            raise
        self.id: str = r["sandbox"]
        self.workspace: str = r["workspace"]

    def close(self) -> None:
        try:
            self.client.request({"op": "destroy", "sandbox": self.id})
        except (MoatError, OSError):
            pass
        finally:
            self.client.close()

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _exec_req(self, argv: Sequence[str], stdin: Optional[Union[str, bytes]],
                  timeout: Optional[float], stream: bool) -> Dict[str, Any]:
        req: Dict[str, Any] = {"op": "exec", "sandbox": self.id, "argv": list(argv),
                               "stream": stream}
        if stdin is not None:
            req["stdin"] = stdin.decode("utf-8", "surrogateescape") if isinstance(stdin, bytes) else stdin
        if timeout is not None:
            req["timeout"] = timeout
        return req

    def run(self, argv: Sequence[str], stdin: Optional[Union[str, bytes]] = None,
            timeout: Optional[float] = None) -> Result:
        """Run argv to its end; the result carries output, status, denials and changes."""
        r = self.client.request(self._exec_req(argv, stdin, timeout, False))
        return Result.from_json(r["result"])

    def stream(self, argv: Sequence[str], stdin: Optional[Union[str, bytes]] = None,
               timeout: Optional[float] = None) -> Iterator[Union[Dict[str, Any], Result]]:
        """Run argv, yielding events as they happen ("stdout", "stderr", "denial", ...)
        and the Result last."""
        for msg in self.client.request_stream(self._exec_req(argv, stdin, timeout, True)):
            if "event" in msg:
                yield msg
            else:
                yield Result.from_json(msg["result"])

    def put(self, path: str, data: Union[str, bytes], mode: int = 0o644) -> None:
        """Write a file in the workspace (path relative to it; no symlinks followed)."""
        req: Dict[str, Any] = {"op": "put", "sandbox": self.id, "path": path, "mode": mode}
        if isinstance(data, bytes):
            req["data_b64"] = base64.b64encode(data).decode()
        else:
            req["data"] = data
        self.client.request(req)

    def get(self, path: str) -> bytes:
        """Read a file of the workspace (path relative to it; no symlinks followed)."""
        return _bytes_of(self.client.request({"op": "get", "sandbox": self.id, "path": path}), "data")

    def commit(self) -> Dict[str, Any]:
        """A copy-on-write sandbox (cow=True): apply its changes to the workspace on the
        host. Returns {"changes": [...], "bytes": N, "failed": N}."""
        return self.client.request({"op": "commit", "sandbox": self.id})

    def discard(self) -> None:
        """A copy-on-write sandbox: drop its changes; the workspace is the host's again."""
        self.client.request({"op": "discard", "sandbox": self.id})

    def export(self, path: str) -> Dict[str, Any]:
        """A copy-on-write sandbox: write its changes as a tar at path (absolute, on the
        server's host) and their sha256 list at path + ".sha256"; changes are kept."""
        return self.client.request({"op": "export", "sandbox": self.id, "path": path})


class AsyncSandbox:
    """The same as Sandbox for asyncio programs: `async with AsyncSandbox(...) as sb`."""

    def __init__(self, socket: str, **create: Any):
        self._socket = socket
        self._create = {k: v for k, v in create.items() if v is not None}
        self._next = 0
        self.id = ""
        self.workspace = ""

    async def __aenter__(self) -> "AsyncSandbox":
        import asyncio

        self._reader, self._writer = await asyncio.open_unix_connection(self._socket)
        self._lock = asyncio.Lock()
        r = await self._request(dict(self._create, op="create"))
        self.id, self.workspace = r["sandbox"], r["workspace"]
        return self

    async def __aexit__(self, *exc) -> None:
        try:
            await self._request({"op": "destroy", "sandbox": self.id})
        except (MoatError, OSError, ConnectionError):
            pass
        self._writer.close()

    async def _request(self, req: Dict[str, Any]) -> Dict[str, Any]:
        async with self._lock:
            self._next += 1
            rid = self._next
            self._writer.write(json.dumps(dict(req, id=rid)).encode() + b"\n")
            await self._writer.drain()
            while True:
                line = await self._reader.readline()
                if not line:
                    raise ConnectionError("the moat server closed the connection")
                msg = json.loads(line)
                if msg.get("id") != rid or "event" in msg:
                    continue
                if not msg.get("ok"):
                    err = msg.get("error", {})
                    raise MoatError(err.get("code", "error"), err.get("message", ""))
                return msg

    async def run(self, argv: Sequence[str], stdin: Optional[str] = None,
                  timeout: Optional[float] = None) -> Result:
        req: Dict[str, Any] = {"op": "exec", "sandbox": self.id, "argv": list(argv)}
        if stdin is not None:
            req["stdin"] = stdin
        if timeout is not None:
            req["timeout"] = timeout
        return Result.from_json((await self._request(req))["result"])
