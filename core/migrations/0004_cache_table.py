"""The database cache's table (settings.CACHES, LOCATION "django_cache"), so `migrate` is
all a fresh installation needs: the API throttles keep their counts there, shared by every
web process. Created whichever cache is configured, so switching from Redis back to the
database cache needs no manual step either."""

from django.core.management.commands.createcachetable import Command as CreateCacheTable
from django.db import migrations

TABLE = "django_cache"


def create_cache_table(apps, schema_editor):
    command = CreateCacheTable()
    command.verbosity = 0  # create_table() reads it; handle() would have set it
    command.create_table(schema_editor.connection.alias, TABLE, dry_run=False)  # skips an existing table


def drop_cache_table(apps, schema_editor):
    schema_editor.execute(f"DROP TABLE IF EXISTS {schema_editor.quote_name(TABLE)}")


class Migration(migrations.Migration):
    dependencies = [("core", "0003_question_result_parts")]

    operations = [migrations.RunPython(create_cache_table, drop_cache_table)]
