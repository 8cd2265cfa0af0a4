"""Celery signals that keep Job records truthful when a worker dies or restarts, and that
ready each pool process for its work before the first task arrives."""

from __future__ import annotations

import logging
import os
import threading

from billiard.exceptions import WorkerLostError
from celery.signals import task_failure, task_postrun, task_prerun, worker_init, worker_process_init, worker_ready
from django.conf import settings

from tasks.jobs import fail_job_of_lost_process, fail_jobs_of_worker, reap_stale_jobs
from tasks.shutdown import TASK_RUNNING, install_stop_handler

logger = logging.getLogger(__name__)
POOL_PROCESSES = "RRAG_WORKER_POOL_PROCESSES"  # set by the worker for its pool processes
WORKER_PID = "RRAG_WORKER_PID"  # the worker's own process, which forks the pool processes


@worker_ready.connect
def _fail_jobs_left_running(sender: object = None, **_: object) -> None:
    """A worker starting under a node name fails the jobs still recorded as running under
    exactly that name (it went down while running them), then reaps stale jobs. A worker
    never touches another node name's jobs: a live worker's jobs stay alive."""
    fail_jobs_of_worker(
        getattr(sender, "hostname", None) or "", "The worker restarted while this job was running; run it again."
    )
    reap_stale_jobs()


@task_failure.connect
def _fail_job_of_lost_process(
    sender: object = None, exception: BaseException | None = None, kwargs: object = None, **_: object
) -> None:
    """A pool process died under its task (the OOM killer, a native crash): the worker's
    main process sends this at once, so the job fails now, not when the reaper notices; an
    estimation batch (no job of its own) is sent again at once instead."""
    if not isinstance(exception, WorkerLostError):
        return  # other failures were recorded by the task itself (tasks.runner)
    if getattr(sender, "name", None) == "tasks.generate_batch" and isinstance(kwargs, dict):
        from tasks.engine_tasks import resend_lost_batch

        if resend_lost_batch(kwargs):
            logger.warning("a pool process died answering an estimation batch: sent again (%s)", kwargs)
        return
    job_id = (kwargs or {}).get("job_id") if isinstance(kwargs, dict) else None
    if isinstance(job_id, int):
        fail_job_of_lost_process(job_id)


@worker_init.connect
def _ready_worker(sender: object = None, **_: object) -> None:
    """Before the pool processes are forked: tell them how many of them share the machine,
    and import the model libraries (torch, transformers: about 10 s of CPU) once here, so
    the processes inherit them instead of each importing them at the same moment. Nothing
    is loaded or run on torch here (a forked process must not inherit its thread pool)."""
    concurrency = getattr(sender, "concurrency", None)
    os.environ[POOL_PROCESSES] = str(concurrency if isinstance(concurrency, int) and concurrency > 0 else 1)
    os.environ[WORKER_PID] = str(os.getpid())
    try:
        import sentence_transformers  # noqa: F401
    except ImportError:  # an installation without the embedding model's libraries
        logger.warning("sentence-transformers is not installed: nothing to import before forking")


@worker_process_init.connect
def _ready_pool_process(**_: object) -> None:
    """Each forked pool process loads the embedding model (which the offline NLI, ingestion
    and retrieval all use) in the background as it starts, so its first batch or question
    does not wait for it, and gives torch its share of the CPU cores: `-c N` processes each
    running torch on every core only fight over them (far slower than one thread each);
    WORKER_TORCH_THREADS sets the share instead."""
    processes = int(os.environ.get(POOL_PROCESSES, "1") or 1)
    threads = settings.WORKER_TORCH_THREADS or max(1, (os.cpu_count() or 1) // processes)
    try:
        import torch  # imported by the worker before forking: nothing to load here

        torch.set_num_threads(threads)  # in the thread that runs the tasks, before the first one
    except ImportError:
        logger.warning("torch is not installed: the pool process keeps its default threads")
    if os.environ.get(WORKER_PID) != str(os.getpid()):
        # A forked pool process (prefork): load while idle. A solo or threads pool runs its
        # tasks in the worker's own process, where a loading thread would only compete with
        # the first task for the interpreter; that task loads the model itself.
        threading.Thread(target=_load_models, name="load-models", daemon=True).start()


def _load_models() -> None:
    try:
        from runtime.backends import configured_embedder, configured_nli

        configured_embedder()
        configured_nli()
    except Exception:
        logger.exception("loading the models in the background failed")


@task_prerun.connect
def _task_starts(**_: object) -> None:
    """In a forked pool process, a SIGTERM (a service manager's, to the whole group) now asks
    the task to stop at its next checkpoint rather than killing it mid-write
    (tasks/shutdown.py). Installed here, at each task: billiard replaces a pool process's
    signal handlers after worker_process_init. A solo or threads pool runs its tasks in the
    worker's own process, whose SIGTERM is the worker's warm shutdown: left alone."""
    if os.environ.get(WORKER_PID) != str(os.getpid()) and threading.current_thread() is threading.main_thread():
        install_stop_handler()
    TASK_RUNNING.set()


@task_postrun.connect
def _task_ends(**_: object) -> None:
    TASK_RUNNING.clear()  # a SIGTERM now stops the idle process as before
