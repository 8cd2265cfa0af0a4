"""The model QuerySet is renamed QueryCollection (it shadowed Django's QuerySet).

No data moves: the table keeps its name (db_table "core_queryset", set first, so the rename
changes no table), the foreign keys (query_set_id) are untouched, the content type follows
the rename (Django's contenttypes app adds that step), and the model's permissions are
renamed to the new codenames, so users and groups keep them."""

from django.db import migrations

ACTIONS = ("add", "change", "delete", "view")


def _rename_permissions(apps, schema_editor, old: str, new: str) -> None:
    Permission = apps.get_model("auth", "Permission")
    for action in ACTIONS:
        Permission.objects.filter(content_type__app_label="core", codename=f"{action}_{old}").update(
            codename=f"{action}_{new}"
        )


def forwards(apps, schema_editor):
    _rename_permissions(apps, schema_editor, "queryset", "querycollection")


def backwards(apps, schema_editor):
    _rename_permissions(apps, schema_editor, "querycollection", "queryset")


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("core", "0011_run_calibration"),
    ]

    operations = [
        migrations.AlterModelTable(name="queryset", table="core_queryset"),
        migrations.RenameModel(old_name="QuerySet", new_name="QueryCollection"),
        migrations.AlterModelOptions(
            name="querycollection", options={"ordering": ["name"], "verbose_name": "query set"}
        ),
        migrations.RunPython(forwards, backwards),
    ]
