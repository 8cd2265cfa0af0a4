"""Claim.tolerance: the tolerance the claim's mapping declared for its attribute ("1": a
minute for times, "0.5" or "1%" for numbers; empty: exact), read by claim runs, the claim
pages and MultiRAG (core.engine.claims.tolerance)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("sources", "0005_top_k_exact_sources_in_one_branch")]

    operations = [
        migrations.AddField(
            model_name="claim",
            name="tolerance",
            field=models.CharField(blank=True, default="", max_length=20),
        ),
    ]
