"""The Celery app: queues ingest (parse, chunk, embed), gpu (generation, NLI), default."""

from __future__ import annotations

import os

from celery import Celery
from django.conf import settings
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reliability_site.settings")

app = Celery("reliability_site")


def broker_settings(broker_url: str, broker_dir: os.PathLike[str] | str) -> dict[str, object]:
    """Celery options for the configured broker; unset means kombu's filesystem transport."""
    if broker_url:
        return {"broker_url": broker_url}
    # A real broker without a server: messages are files in DATA_DIR/broker, shared by
    # every process on this machine (web, worker, commands).
    queue_dir = os.path.join(os.fspath(broker_dir), "queue")
    processed_dir = os.path.join(os.fspath(broker_dir), "processed")
    os.makedirs(queue_dir, exist_ok=True)
    os.makedirs(processed_dir, exist_ok=True)
    return {
        "broker_url": "filesystem://",
        "broker_transport_options": {
            "data_folder_in": queue_dir,
            "data_folder_out": queue_dir,
            "processed_folder": processed_dir,
            "control_folder": os.path.join(os.fspath(broker_dir), "control"),
            "store_processed": False,
        },
    }


def configure(celery_app: Celery) -> None:
    celery_app.conf.update(
        broker_settings(settings.CELERY_BROKER_URL, settings.BROKER_DIR),
        task_queues=(Queue("ingest"), Queue("gpu"), Queue("default")),
        task_default_queue="default",
        task_routes={
            "tasks.ingest_files": {"queue": "ingest"},
            "tasks.reembed_source": {"queue": "ingest"},
            "tasks.generate_batch": {"queue": "gpu"},
        },
        task_acks_late=True,
        task_reject_on_worker_lost=False,
        worker_prefetch_multiplier=1,
        task_ignore_result=True,
        task_always_eager=settings.CELERY_TASK_ALWAYS_EAGER,
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
    )


@app.on_configure.connect
def _configure_from_django(sender: Celery, **_: object) -> None:
    configure(sender)


app.autodiscover_tasks(["tasks"])
