"""The parts of scripts/bench_scale.py: corpus synthesis (corpus), the scratch database
(database), measurement (measure), and the report and plot (report)."""
