"""The Celery app: queues ingest (parse, chunk, embed), gpu (generation, NLI), default;
and the beat schedule (the stale-job reaper), run by exactly one beat: `worker -B` in
scripts/run.sh, or a `celery beat` process of its own (docs/operations.md)."""

from __future__ import annotations

import os
from typing import Any

from celery import Celery, Task
from django.conf import settings
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reliability_site.settings")


class ProductTask(Task):  # type: ignore[type-arg]  # the base of every task of the app, whatever it returns
    """Every task's request (the worker's main process side of it): a task cut short by a stop
    of its worker goes back to the broker instead of failing (tasks/shutdown.py)."""

    Request = "tasks.shutdown:GivenBackRequest"


# Typed as a plain Celery app: its tasks are Tasks (ProductTask adds only the request class).
app: Celery[Task[Any, Any]] = Celery("reliability_site", task_cls=ProductTask)


def broker_settings(broker_url: str, broker_dir: os.PathLike[str] | str, key_prefix: str = "") -> dict[str, object]:
    """Celery options for the configured broker; unset means kombu's filesystem transport.
    `key_prefix` (Redis) namespaces every key, so several installations can share one Redis."""
    if broker_url:
        # broker_transport None: the URL's scheme picks the transport, even where these
        # options update a configuration that named the filesystem transport (the tests do).
        if key_prefix and broker_url.startswith(("redis://", "rediss://", "unix://")):
            return {
                "broker_url": broker_url,
                "broker_transport": None,
                "broker_transport_options": {"global_keyprefix": key_prefix},
            }
        return {"broker_url": broker_url, "broker_transport": None}
    # A real broker without a server: messages are files in DATA_DIR/broker, shared by
    # every process on this machine (web, worker, commands).
    queue_dir = os.path.join(os.fspath(broker_dir), "queue")
    processed_dir = os.path.join(os.fspath(broker_dir), "processed")
    os.makedirs(queue_dir, exist_ok=True)
    os.makedirs(processed_dir, exist_ok=True)
    return {
        "broker_url": "filesystem://",
        # kombu's transport with atomic message files (reliability_site/broker.py): a reader
        # never takes a message before it is whole.
        "broker_transport": "reliability_site.broker:Transport",
        "broker_transport_options": {
            "data_folder_in": queue_dir,
            "data_folder_out": queue_dir,
            "processed_folder": processed_dir,
            "control_folder": os.path.join(os.fspath(broker_dir), "control"),
            "store_processed": False,
            # How long a worker sleeps when every queue it reads is empty (kombu's default is
            # 1 s): each hop of an estimation run (coordinator, batches) waited up to that.
            "polling_interval": 0.2,
        },
    }


def reap_interval(stale_seconds: float) -> float:
    """How often beat sends `tasks.reap_stale_jobs`: a quarter of JOB_STALE_SECONDS, 5 to 60 s."""
    return max(5.0, min(60.0, stale_seconds / 4))


def beat_schedule(stale_seconds: float) -> dict[str, dict[str, object]]:
    every = reap_interval(stale_seconds)
    return {
        "reap-stale-jobs": {
            "task": "tasks.reap_stale_jobs",
            "schedule": every,
            "options": {"expires": every},  # a reap that waited a whole interval is superseded
        }
    }


def django_config() -> dict[str, object]:
    """The app's configuration, from the Django settings."""
    return dict(
        broker_settings(settings.CELERY_BROKER_URL, settings.BROKER_DIR, settings.CELERY_BROKER_KEY_PREFIX),
        beat_schedule=beat_schedule(settings.JOB_STALE_SECONDS),
        beat_schedule_filename=os.path.join(os.fspath(settings.DATA_DIR), "celerybeat-schedule"),
        task_queues=(Queue("ingest"), Queue("gpu"), Queue("default")),
        task_default_queue="default",
        task_routes={
            "tasks.ingest_files": {"queue": "ingest"},
            "tasks.reembed_source": {"queue": "ingest"},
            "tasks.load_claims": {"queue": "ingest"},
            "tasks.embed_claim_keys": {"queue": "ingest"},
            "tasks.generate_batch": {"queue": "gpu"},
            "tasks.extract_text_claims": {"queue": "gpu"},
        },
        task_acks_late=True,
        task_reject_on_worker_lost=False,
        worker_prefetch_multiplier=1,
        # A pool process forked to replace one that died must say it is up within this time or
        # Celery kills it and forks another (default 4 s): the bulk worker runs at nice 19, and
        # on cores kept busy by questions a new process can take longer than 4 s to get there,
        # and then be killed and forked again and again.
        worker_proc_alive_timeout=60.0,
        task_ignore_result=True,
        task_always_eager=settings.CELERY_TASK_ALWAYS_EAGER,
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
    )


def configure(celery_app: Celery) -> None:
    celery_app.conf.update(django_config())


# Loaded lazily, the first time the configuration is needed: reading the settings at import
# time would import them while this package is still importing, and updating `app.conf` from
# an on_configure handler re-enters the configuration (RecursionError when `app.amqp` is
# touched first, as `send_task` does).
app.add_defaults(django_config)


app.autodiscover_tasks(["tasks"])
