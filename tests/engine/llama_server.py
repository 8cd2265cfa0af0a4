"""llama.cpp's OpenAI-compatible server (the xllamacpp wheel) serving one GGUF on loopback,
as a process of its own so a test can kill it like a server that dies:

    python -m tests.engine.llama_server MODEL.gguf PORT ALIAS

It serves until it receives SIGTERM or SIGINT.
"""

from __future__ import annotations

import signal
import sys
import threading


def main(argv: list[str]) -> int:
    import xllamacpp

    gguf, port, alias = argv
    params = xllamacpp.CommonParams()
    params.model.path = gguf
    params.model_alias = {alias}  # a set of names (a str would become a set of its letters)
    params.port = int(port)
    params.n_ctx = 4096  # the answer prompt is about 650 tokens
    params.n_parallel = 1
    params.cpuparams.n_threads = 2
    params.cpuparams_batch.n_threads = 2
    server = xllamacpp.Server(params)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    del server
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
