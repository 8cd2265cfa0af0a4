from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0010_run_identification"),
    ]

    operations = [
        migrations.AddField(
            model_name="estimationrun",
            name="calibration",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
