"""Two real Celery worker processes share one estimation run: it is split between them
(each answers some of its batches), every (query, source) pair is answered once, no row is
stored twice, and the scores are those of the same run on one worker.

The workers are `celery -A reliability_site worker` subprocesses consuming the `gpu` and
`default` queues, as separate machines would, on a broker namespace of their own (a key
prefix on this session's Redis, or a folder for the filesystem broker) and on this
session's test database; the runs are started with `manage.py estimate`, as an operator would.
It runs on this session's broker and on the filesystem broker.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection

from core.models import EstimationRun, ReliabilityScore, RunAnswer, RunResponse
from tests.corpus import FACTS, build_corpus
from tests.helpers import Broker, database_url, must_search, responses_of, scores_of, wait_until

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.worker]
BATCH_DONE = re.compile(r"Task tasks\.generate_batch\[[^\]]+\] succeeded in [0-9.e-]+s: (\d+)")


class Workers:
    """Worker processes started by the test, each with a log file; all stopped at its end."""

    def __init__(self, folder: Path, env: dict[str, str]) -> None:
        self.folder = folder
        self.env = {**os.environ, "DJANGO_SETTINGS_MODULE": "reliability_site.settings", **env}
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def log(self, name: str) -> str:
        return (self.folder / f"{name}.log").read_text(errors="replace")

    def start(self, *names: str) -> None:
        for name in names:
            command = [sys.executable, "-m", "celery", "-A", "reliability_site", "worker", "-P", "solo"]
            command += ["-Q", "gpu,default", "-n", f"{name}-{uuid.uuid4().hex[:8]}@%h", "-l", "info"]
            with (self.folder / f"{name}.log").open("wb") as out:
                self.processes[name] = subprocess.Popen(
                    command, cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
                )
        for name in names:

            def started_or_exited(name: str = name) -> bool:
                return " ready." in self.log(name) or self.processes[name].poll() is not None

            wait_until(started_or_exited, 240, f"worker {name} to start")
            assert self.processes[name].poll() is None, self.log(name)[-3000:]

    def stop(self, name: str) -> None:
        process = self.processes[name]
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)  # a warm shutdown: it finishes what it holds
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(30)

    def stop_all(self) -> None:
        for name in self.processes:
            self.stop(name)

    def batches_answered(self, name: str) -> list[int]:
        """The responses each tasks.generate_batch of this worker answered (its logged results)."""
        return [int(n) for n in BATCH_DONE.findall(self.log(name))]

    def estimate(self, *args: str) -> tuple[int, str]:
        done = subprocess.run(
            [sys.executable, "manage.py", "estimate", *args, "--wait", "--timeout", "300"],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=420,
        )
        detail = done.stdout + done.stderr + "".join(self.log(n)[-2000:] for n in self.processes)
        assert done.returncode == 0, detail
        return int(must_search(r"Estimation run (\d+) queued", done.stdout).group(1)), detail


@pytest.fixture
def folder() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="rrag-two-"))
    yield path
    subprocess.run(["rm", "-rf", str(path)], check=False)


@pytest.mark.parametrize("broker_kind", ["session", "filesystem"])
def test_a_run_split_across_two_workers_answers_each_pair_once_and_scores_as_one_worker_does(
    transactional_db, embedder, folder, broker_kind
):
    """`session`: this session's broker (Redis when one answers, as in production);
    `filesystem`: two workers sharing one broker folder (scripts/run.sh with LLM=local)."""
    good, bad, _ = build_corpus(embedder)
    names = [s.name for s in [*good, bad]]
    n_pairs = len(FACTS) * len(names)
    broker = Broker(folder)
    if broker_kind == "filesystem":
        broker.url = ""  # a folder of its own, whatever this session's broker is
    workers = Workers(
        folder,
        {"DATABASE_URL": database_url(connection.settings_dict), "ESTIMATION_POLL_SECONDS": "0.2", **broker.env()},
    )
    try:
        workers.start("first", "second")
        # Batches of 2 pairs: 12 batches, sent at once by the coordinator, for two workers to take.
        split_id, detail = workers.estimate("--batch-size", "2", "--sources", *names)
        split = EstimationRun.objects.get(pk=split_id)
        assert split.state == EstimationRun.State.SUCCEEDED, detail

        stored = RunResponse.objects.filter(run=split)
        assert stored.count() == n_pairs == len(set(stored.values_list("query_id", "source_id")))  # no duplicates
        assert RunAnswer.objects.filter(run=split).count() == len(FACTS)
        assert ReliabilityScore.objects.filter(run=split).count() == len(names)
        first, second = workers.batches_answered("first"), workers.batches_answered("second")
        assert first and second, f"the run was not split: {first} / {second}\n{detail}"
        assert sum(first) + sum(second) == n_pairs  # each pair answered by exactly one worker, once

        # The same run on one worker alone: the same responses, the same scores.
        workers.stop("second")
        alone_id, _ = workers.estimate("--batch-size", "2", "--sources", *names)
        assert workers.batches_answered("second") == second  # the stopped worker took nothing more
        assert responses_of(split_id) == responses_of(alone_id)
        split_scores, alone_scores = scores_of(split_id), scores_of(alone_id)
        assert set(split_scores) == set(names)
        assert split_scores == pytest.approx(alone_scores, abs=1e-9)
        assert all(split_scores[s.name] > split_scores["misinformer"] for s in good)
    finally:
        workers.stop_all()
        broker.clear()
