"""A crowd of analysts against a running product (issue 38 row 7): request latency for asks and
for plain pages, side by side in one run.

``--clients`` analysts (20), each with an account and a token of its own (made here, in the
server's database: run this beside the server, with its DATA_DIR or DATABASE_URL), ask the
demo's held-out questions through ``POST /api/questions/`` with ``wait`` seconds (10) one after
the other for ``--seconds`` (120); a 202 is polled on its ``result_url`` until answered, as a
client would. Meanwhile ``--page-clients`` (1) readers fetch plain API pages (the sources list,
the jobs list) back to back. The server's ask throttle counts per user, so 20 accounts are 20
analysts, not one.

    .venv/bin/python scripts/bench_load.py --url http://127.0.0.1:8000 [--clients 20]
        [--seconds 120] [--wait 10] [--out FILE]

Prints and stores (JSON) per kind of request: count, status codes, p50/p95/max seconds; for
asks also the time to the answer (200, or 202 then the polled answer).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from core.bench import machine  # noqa: E402  (after the path)

ACCOUNT_PREFIX = "load-analyst-"


@dataclass
class Timings:
    """Latencies and status codes of one kind of request, shared by the threads that make them."""

    seconds: list[float] = field(default_factory=list)
    codes: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, elapsed: float, code: int | str) -> None:
        with self.lock:
            self.seconds.append(elapsed)
            self.codes[str(code)] = self.codes.get(str(code), 0) + 1

    def summary(self) -> dict[str, object]:
        values = sorted(self.seconds)
        if not values:
            return {"count": 0, "codes": self.codes}

        def at(share: float) -> float:
            return round(values[min(len(values) - 1, int(share * len(values)))], 3)

        return {
            "count": len(values),
            "codes": self.codes,
            "p50_s": round(statistics.median(values), 3),
            "p95_s": at(0.95),
            "max_s": round(values[-1], 3),
        }


def accounts(count: int) -> list[str]:
    """Tokens of ``count`` analyst accounts of this benchmark (made once, then reused)."""
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reliability_site.settings")
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from rest_framework.authtoken.models import Token

    from core.roles import ANALYST

    group = Group.objects.get_or_create(name=ANALYST)[0]
    tokens = []
    for i in range(count):
        user, made = get_user_model().objects.get_or_create(username=f"{ACCOUNT_PREFIX}{i + 1}")
        if made:
            user.set_unusable_password()
            user.save()
        user.groups.add(group)
        tokens.append(Token.objects.get_or_create(user=user)[0].key)
    return tokens


def request(
    url: str, token: str, body: dict[str, object] | None = None, timeout: float = 120
) -> tuple[int | str, dict[str, object]]:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Authorization": f"Token {token}", "Accept": "application/json"}
    if data is not None:
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(url, data=data, headers=headers, method="POST" if data is not None else "GET")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            payload = json.loads(response.read() or b"{}")
            return response.status, payload if isinstance(payload, dict) else {}
    except urllib.error.HTTPError as exc:
        return exc.code, {}
    except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
        return type(exc).__name__, {}


def asker(
    base: str, token: str, questions: list[str], until: float, wait: int, asks: Timings, answers: Timings
) -> None:
    i = 0
    while time.monotonic() < until:
        question = questions[i % len(questions)]
        i += 1
        start = time.monotonic()
        code, body = request(f"{base}/api/questions/", token, {"text": question, "strategy": "ra-rag", "wait": wait})
        asks.add(time.monotonic() - start, code)
        if code == 202 and isinstance(body.get("result_url"), str):
            result = str(body["result_url"])
            while time.monotonic() < until + 120:  # an accepted question is followed to its answer
                time.sleep(1.0)
                polled, detail = request(result, token)
                if polled != 200 or detail.get("state") in ("succeeded", "failed"):
                    code = polled if detail.get("state") != "failed" else "failed"
                    break
        answers.add(time.monotonic() - start, code)
        if isinstance(code, str) or code >= 429:
            time.sleep(1.0)  # a throttled or failed client backs off, as a real one would


def reader(base: str, token: str, until: float, pages: Timings) -> None:
    paths = ("/api/sources/", "/api/jobs/")
    i = 0
    while time.monotonic() < until:
        start = time.monotonic()
        code, _ = request(f"{base}{paths[i % len(paths)]}", token)
        pages.add(time.monotonic() - start, code)
        i += 1
        time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--page-clients", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--wait", type=int, default=10)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    base = args.url.rstrip("/")
    tokens = accounts(args.clients + args.page_clients)
    questions = [q["question"] for q in json.loads((ROOT / "sources/demo_data/queries.json").read_text())["ask"]]
    asks, answers, pages = Timings(), Timings(), Timings()
    until = time.monotonic() + args.seconds
    threads = [
        threading.Thread(
            target=asker, args=(base, tokens[i], questions[i::3] or questions, until, args.wait, asks, answers)
        )
        for i in range(args.clients)
    ]
    threads += [
        threading.Thread(target=reader, args=(base, tokens[args.clients + i], until, pages))
        for i in range(args.page_clients)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    result = {
        "machine": machine.as_dict(),
        "settings": {
            "clients": args.clients,
            "page_clients": args.page_clients,
            "seconds": args.seconds,
            "wait": args.wait,
        },
        "ask_request": asks.summary(),
        "ask_to_answer": answers.summary(),
        "page_request": pages.summary(),
        "load_average_after": os.getloadavg()[0],
    }
    print(json.dumps(result, indent=2))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
