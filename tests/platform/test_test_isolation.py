"""The test session runs on its own broker and database, never the developer's."""

from __future__ import annotations

import os


def test_the_session_uses_its_own_broker_and_test_database(db):
    from django.conf import settings
    from django.db import connection

    from reliability_site.celery import app

    assert connection.settings_dict["NAME"] == f"test_reliability_{os.getpid()}"
    url = app.conf.broker_url
    if url.startswith("redis://"):
        assert app.conf.broker_transport_options["global_keyprefix"].startswith("test-")
    else:
        assert url == "filesystem://"
        assert str(settings.BROKER_DIR) not in app.conf.broker_transport_options["data_folder_in"]
