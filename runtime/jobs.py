"""The services' view of background jobs, free of any job machinery.

A neutral module below both apps: core's services and the sources app report progress
through `Progress` and start jobs through `dispatch_job`; they never import the `tasks` app.
The tasks app installs the real dispatcher (tasks.jobs.start_job, which stores a Job and
enqueues the named Celery task once the transaction commits) in TasksConfig.ready(). Job
kinds are the values of tasks.models.Job.Kind ("ingest", "reembed", "estimate", "ask",
"demo", "other"); task names are the Celery task names ("tasks.…").
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Protocol, TypeGuard, TypeVar

from core.engine.registry import Registry
from core.engine.types import JSONObject, JSONValue
from runtime.users import Actor

logger = logging.getLogger(__name__)


class Progress(Protocol):
    """What a service may report while it works (tasks.progress.JobProgress implements it)."""

    def set_total(self, total: int, message: str | None = None) -> None: ...

    def advance(self, step: int = 1, message: str | None = None) -> None: ...

    def set_progress(self, current: int, message: str | None = None) -> None: ...

    def advance_to(self, current: int, message: str | None = None) -> None:
        """Raise the progress to `current`, never lower it: workers that share one job
        report their counts in any order."""
        ...

    def log(self, line: str) -> None: ...

    def heartbeat(self, message: str | None = None) -> bool:
        """Say the work is alive; False when the job has ended meanwhile (reaped, say)."""
        ...

    def report_parts(self, parts: Mapping[str, Mapping[str, JSONValue]]) -> None:
        """Where some parts of the work stand, by key ({"n", "label", "state", "detail"}):
        each replaces its earlier entry (an ask reports one part per source)."""
        ...


class NullProgress:
    """Progress that goes nowhere (synchronous calls: the CLI, tests)."""

    def set_total(self, total: int, message: str | None = None) -> None:
        pass

    def advance(self, step: int = 1, message: str | None = None) -> None:
        pass

    def set_progress(self, current: int, message: str | None = None) -> None:
        pass

    def advance_to(self, current: int, message: str | None = None) -> None:
        pass

    def log(self, line: str) -> None:
        pass

    def heartbeat(self, message: str | None = None) -> bool:
        return True

    def report_parts(self, parts: Mapping[str, Mapping[str, JSONValue]]) -> None:
        pass


class KeepAlive:
    """Calls `beat(message)` every `every` seconds from a thread of its own while one long
    statement or one long transaction runs, so the stale-job reaper leaves the job alone.

    A thread of its own because the work's own connection cannot speak: inside a
    transaction its heartbeat would not be seen (nor committed) until the end. The thread
    uses its own database connection (Django gives each thread one) and closes it."""

    def __init__(self, beat: Callable[[str], object] | None, message: str, *, every: float) -> None:
        self.beat, self.message, self.every = beat, message, max(0.05, float(every))
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="keep-alive", daemon=True)

    def _run(self) -> None:
        from django.db import connection as thread_connection

        try:
            while not self.stop.wait(self.every):
                if self.beat is not None:
                    self.beat(self.message)
        except Exception:
            logger.exception("heartbeat (%s) failed", self.message)
        finally:
            thread_connection.close()

    def __enter__(self) -> KeepAlive:
        if self.beat is not None:
            self.thread.start()
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join()


def heartbeat_interval() -> float:
    """How often long work says it is alive: a quarter of the reaper's stale limit, at most 30 s."""
    from django.conf import settings

    return min(30.0, max(0.05, float(settings.JOB_STALE_SECONDS) / 4))


class JobRecord(Protocol):
    """What services and wait_for use of a started job: a tasks.models.Job, whose class lives
    in the tasks app, which runtime, core.services and sources may not import
    (tests/platform/test_architecture.py). A "tasks.Job" foreign key is set by its id
    (``run.job_id = job.id``), which needs nothing of the class."""

    @property
    def pk(self) -> int: ...

    @property
    def id(self) -> int: ...

    @property
    def kind(self) -> str: ...

    @property
    def state(self) -> str: ...

    @property
    def finished(self) -> bool: ...

    @property
    def succeeded(self) -> bool: ...

    @property
    def message(self) -> str: ...

    @property
    def error(self) -> str: ...

    @property
    def params(self) -> JSONObject: ...

    @property
    def result(self) -> JSONObject: ...

    def refresh_from_db(self) -> None: ...


class Dispatcher(Protocol):
    """Store a job record of `kind` and enqueue the Celery task `task_name` for it; returns the job."""

    def __call__(
        self,
        kind: str,
        task_name: str,
        params: JSONObject,
        /,
        *,
        user: Actor | None = None,
        queue: str | None = None,
    ) -> JobRecord: ...


J = TypeVar("J", bound=JobRecord)


class NoDispatcher(RuntimeError):
    """A service tried to start a job before any dispatcher was installed."""


_dispatcher: Dispatcher | None = None


def set_dispatcher(dispatcher: Dispatcher | None) -> Dispatcher | None:
    """Install the dispatcher (the tasks app does, on start); returns the previous one."""
    global _dispatcher
    previous, _dispatcher = _dispatcher, dispatcher
    return previous


def dispatch_job(
    *, kind: str, task_name: str, params: JSONObject, user: Actor | None = None, queue: str | None = None
) -> JobRecord:
    """Start a background job through the installed dispatcher; returns the job record."""
    if _dispatcher is None:
        raise NoDispatcher("No job dispatcher is installed: is the 'tasks' app in INSTALLED_APPS?")
    return _dispatcher(kind, task_name, params, user=user, queue=queue)


def wait_for(job: J, timeout: float | None = None, poll: float = 0.5) -> J:
    """Block until a job record (a model instance with `finished`) ends or `timeout` passes;
    returns it refreshed from the database."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        job.refresh_from_db()
        if job.finished or (deadline is not None and time.monotonic() >= deadline):
            return job
        time.sleep(poll)


# --- how a job reads on the job pages ------------------------------------------------------


@dataclass(frozen=True)
class JobLink:
    label: str
    url: str


@dataclass(frozen=True)
class JobTitle:
    """What the job pages say a job was about: its title and links to what it worked on."""

    title: str
    links: tuple[JobLink, ...] = ()


JobTitles = Callable[[Sequence[JobRecord]], dict[int, JobTitle]]


def _is_job_titles(item: object) -> TypeGuard[JobTitles]:
    return callable(item)


# The app that owns a kind of job says how its jobs read, for a whole page of them at once
# (one query per kind of related object): ``@JOB_TITLES.register("ask")`` in that app, so the
# tasks app, which shows every job, needs to know none of the apps' models.
JOB_TITLES: Registry[JobTitles] = Registry("job kind", _is_job_titles)

# The line that sums one job up, from its own record alone (no query: a polled job status
# shows it), or None for the job's own message: ``@JOB_HEADLINES.register("ingest")``.
JobHeadline = Callable[[JobRecord], str | None]


def _is_job_headline(item: object) -> TypeGuard[JobHeadline]:
    return callable(item)


JOB_HEADLINES: Registry[JobHeadline] = Registry("job kind", _is_job_headline)
