#!/usr/bin/env bash
# Install and run the product on its embedded default: PostgreSQL + pgvector (embedded),
# a Celery worker on the serverless filesystem broker, the web server, the demo data.
# Environment: PORT (default 8000), HOST (default 127.0.0.1), plus everything in README.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh requirements.txt
export DJANGO_SETTINGS_MODULE=reliability_site.settings
py=.venv/bin/python
data_dir="${DATA_DIR:-var}"
mkdir -p "$data_dir/log"

$py manage.py migrate --noinput >/dev/null
echo "Database ready."

# Every worker gets a node name of its own (random per start): a worker's restart only fails
# jobs recorded under exactly its name, so two workers must never share one (docs/operations.md).
worker_name="worker-$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')@%h"
# -B: this (single) worker also runs beat, which sends tasks.reap_stale_jobs every minute.
.venv/bin/celery -A reliability_site worker -Q ingest,gpu,default -c "${CELERY_WORKER_CONCURRENCY:-2}" \
  -n "$worker_name" -B -l info >"$data_dir/log/worker.log" 2>&1 &
worker_pid=$!
cleanup() { kill "$worker_pid" 2>/dev/null || true; wait "$worker_pid" 2>/dev/null || true; }
trap cleanup EXIT INT TERM
echo "Celery worker ${worker_name/\%h/$(hostname)} started with beat (log: $data_dir/log/worker.log)."

$py manage.py load_demo --wait
has_run='from core.models import EstimationRun as R; import sys; sys.exit(0 if R.objects.filter(state="succeeded").exists() else 1)'
if ! $py manage.py shell -c "$has_run" 2>/dev/null; then
  echo "Estimating source reliability on the demo query set..."
  $py manage.py estimate --wait || echo "The estimation run did not finish; see the Jobs page."
fi
credentials=$($py manage.py create_demo_user 2>/dev/null || true)

host="${HOST:-127.0.0.1}"
port="${PORT:-8000}"
echo
echo "================================================================"
echo " Reliability-aware RAG is running at http://$host:$port/"
[ -n "$credentials" ] && echo "$credentials"
echo " Admin: http://$host:$port/admin/   API: http://$host:$port/api/docs/"
echo " Stop with Ctrl-C."
echo "================================================================"
.venv/bin/gunicorn reliability_site.wsgi:application --bind "$host:$port" --workers 2 --threads 4 \
  --timeout 120 --access-logfile "$data_dir/log/access.log"
