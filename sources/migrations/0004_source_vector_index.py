"""Per-source vector indexes (sources/vector_index.py): the registry, the triggers that keep
each source's vector table in step with sources_chunk, and the search function.

The tables themselves (``sources_chunkvec_<source id>``) are created by a build job when a
source grows past SOURCE_INDEX_MIN_CHUNKS, not by a migration: Django's migration state
never names them, so makemigrations and migrate leave them alone.

Writers of sources_chunk take a shared advisory lock per source they touch, a build's copy
takes it exclusively (SYNC_LOCK_NAMESPACE in sources/vector_index.py): a chunk written while
a table is being filled is copied either by the build or by the trigger, never by neither.
"""

import django.db.models.deletion
from django.db import migrations, models

LOCK = "(61505::bigint << 32) + sid"  # sources.vector_index.sync_lock_key

FUNCTIONS = f"""
CREATE OR REPLACE FUNCTION sources_chunkvec_after_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    sid bigint;
    vec regclass;
BEGIN
    FOR sid IN SELECT DISTINCT n.source_id FROM new_chunks n LOOP
        PERFORM pg_advisory_xact_lock_shared({LOCK});
        vec := to_regclass(format('sources_chunkvec_%s', sid));
        IF vec IS NOT NULL THEN
            EXECUTE format(
                'INSERT INTO %s (chunk_id, embedding) '
                'SELECT n.id, n.embedding::halfvec FROM new_chunks n WHERE n.source_id = $1', vec
            ) USING sid;
        END IF;
    END LOOP;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION sources_chunkvec_after_update() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    sid bigint;
    vec regclass;
BEGIN
    FOR sid IN SELECT o.source_id FROM old_chunks o UNION SELECT n.source_id FROM new_chunks n LOOP
        PERFORM pg_advisory_xact_lock_shared({LOCK});
        vec := to_regclass(format('sources_chunkvec_%s', sid));
        IF vec IS NOT NULL THEN
            -- chunks moved to another source leave this one's table
            EXECUTE format(
                'DELETE FROM %s v USING old_chunks o JOIN new_chunks n ON n.id = o.id '
                'WHERE v.chunk_id = o.id AND o.source_id = $1 AND n.source_id <> $1', vec
            ) USING sid;
            -- new or changed vectors (a re-embedding) replace the stored ones
            EXECUTE format(
                'INSERT INTO %s (chunk_id, embedding) '
                'SELECT n.id, n.embedding::halfvec FROM new_chunks n LEFT JOIN old_chunks o ON o.id = n.id '
                'WHERE n.source_id = $1 AND (o.id IS NULL OR o.source_id <> n.source_id '
                'OR o.embedding IS DISTINCT FROM n.embedding) '
                'ON CONFLICT (chunk_id) DO UPDATE SET embedding = EXCLUDED.embedding', vec
            ) USING sid;
        END IF;
    END LOOP;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION sources_chunkvec_after_delete() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    sid bigint;
    vec regclass;
BEGIN
    FOR sid IN SELECT DISTINCT o.source_id FROM old_chunks o LOOP
        PERFORM pg_advisory_xact_lock_shared({LOCK});
        vec := to_regclass(format('sources_chunkvec_%s', sid));
        IF vec IS NOT NULL THEN
            EXECUTE format(
                'DELETE FROM %s v USING old_chunks o WHERE v.chunk_id = o.id AND o.source_id = $1', vec
            ) USING sid;
        END IF;
    END LOOP;
    RETURN NULL;
END
$$;

-- TRUNCATE (a test database being flushed, say) fires no row triggers: the vector tables
-- are derived data, so they go with it. A table whose index is being built CONCURRENTLY at
-- that moment cannot be dropped (the build waits for this transaction, this DROP for the
-- build: a deadlock); it is left with a warning, and the build, finding its entry gone,
-- drops it itself (or `source_indexes --reconcile` does).
CREATE OR REPLACE FUNCTION sources_chunkvec_after_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    vec regclass;
    waited text := current_setting('lock_timeout');
BEGIN
    PERFORM set_config('lock_timeout', '5s', true);
    FOR vec IN
        SELECT c.oid::regclass FROM pg_class c
        WHERE c.relkind = 'r' AND c.relname ~ '^sources_chunkvec_[0-9]+$'
          AND c.relnamespace = current_schema()::regnamespace
    LOOP
        BEGIN
            EXECUTE format('DROP TABLE %s', vec);
        EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
            RAISE WARNING 'vector table % is busy (an index build); it is dropped when the build ends', vec;
        END;
    END LOOP;
    PERFORM set_config('lock_timeout', waited, true);
    DELETE FROM sources_sourcevectorindex;
    RETURN NULL;
END
$$;

-- A source's vector table is dropped in the transaction that deletes the source. A table
-- busy past lock_timeout, or in a deadlock with its CONCURRENTLY index build (which waits
-- for this transaction), is left for the build (it drops the table once it finds the source
-- gone) or `manage.py source_indexes --reconcile`, rather than failing the delete.
CREATE OR REPLACE FUNCTION sources_chunkvec_after_source_delete() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    vec regclass := to_regclass(format('sources_chunkvec_%s', OLD.id));
    waited text := current_setting('lock_timeout');
BEGIN
    IF vec IS NOT NULL THEN
        PERFORM set_config('lock_timeout', '5s', true);
        BEGIN
            EXECUTE format('DROP TABLE %s', vec);
        EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
            RAISE WARNING 'vector table % of deleted source % is busy; source_indexes --reconcile drops it',
                vec, OLD.id;
        END;
        PERFORM set_config('lock_timeout', waited, true);
    END IF;
    RETURN NULL;
END
$$;

-- Candidates of every listed source in ONE statement: the `candidates` nearest chunks of a
-- source with a ready vector table by its HNSW graph (halfvec distance), those of any other
-- source exactly (`+ 0` keeps the planner off the all-chunks HNSW index, whose filtered
-- walk could starve a small source). Each branch names its own table, so planning never
-- weighs one source's index against another's. sources/retrieval.py re-ranks in float.
-- A walk of a source's own graph has no filter to outrun: iterative scanning (set on the
-- connection for the filtered all-chunks searches) is switched off here, as it costs about
-- as much again per walk.
CREATE OR REPLACE FUNCTION sources_chunk_top_k(q vector, source_ids bigint[], candidates integer, ef_search integer)
RETURNS TABLE (source_id bigint, chunk_id bigint)
LANGUAGE plpgsql VOLATILE ROWS 100 AS $$
DECLARE
    branches text;
    previous_ef text := coalesce(current_setting('hnsw.ef_search', true), '40');
    previous_iterative text := coalesce(current_setting('hnsw.iterative_scan', true), 'off');
BEGIN
    SELECT string_agg(
        CASE WHEN t.oid IS NOT NULL
            THEN format('(SELECT %s::bigint, v.chunk_id FROM sources_chunkvec_%s v '
                        'ORDER BY v.embedding <=> $1 LIMIT $3)', s.id, s.id)
            ELSE format('(SELECT %s::bigint, c.id FROM sources_chunk c WHERE c.source_id = %s '
                        'ORDER BY (c.embedding <=> $2) + 0 LIMIT $3)', s.id, s.id)
        END, ' UNION ALL ')
    INTO branches
    FROM (SELECT DISTINCT unnest(source_ids) AS id) s
    LEFT JOIN sources_sourcevectorindex i ON i.source_id = s.id AND i.state = 'ready'
    LEFT JOIN pg_class t ON i.source_id IS NOT NULL AND t.relname = 'sources_chunkvec_' || s.id
        AND t.relkind = 'r' AND t.relnamespace = current_schema()::regnamespace;
    IF branches IS NULL THEN
        RETURN;
    END IF;
    PERFORM set_config('hnsw.ef_search', greatest(ef_search, candidates)::text, true);
    PERFORM set_config('hnsw.iterative_scan', 'off', true);
    RETURN QUERY EXECUTE branches USING q::halfvec, q, candidates;
    PERFORM set_config('hnsw.ef_search', previous_ef, true);
    PERFORM set_config('hnsw.iterative_scan', previous_iterative, true);
END
$$;

CREATE TRIGGER sources_chunkvec_insert AFTER INSERT ON sources_chunk
    REFERENCING NEW TABLE AS new_chunks FOR EACH STATEMENT EXECUTE FUNCTION sources_chunkvec_after_insert();
CREATE TRIGGER sources_chunkvec_update AFTER UPDATE ON sources_chunk
    REFERENCING OLD TABLE AS old_chunks NEW TABLE AS new_chunks
    FOR EACH STATEMENT EXECUTE FUNCTION sources_chunkvec_after_update();
CREATE TRIGGER sources_chunkvec_delete AFTER DELETE ON sources_chunk
    REFERENCING OLD TABLE AS old_chunks FOR EACH STATEMENT EXECUTE FUNCTION sources_chunkvec_after_delete();
CREATE TRIGGER sources_chunkvec_truncate AFTER TRUNCATE ON sources_chunk
    FOR EACH STATEMENT EXECUTE FUNCTION sources_chunkvec_after_truncate();
CREATE TRIGGER sources_chunkvec_source_delete AFTER DELETE ON sources_source
    FOR EACH ROW EXECUTE FUNCTION sources_chunkvec_after_source_delete();
"""

REVERSE = """
DROP TRIGGER IF EXISTS sources_chunkvec_insert ON sources_chunk;
DROP TRIGGER IF EXISTS sources_chunkvec_update ON sources_chunk;
DROP TRIGGER IF EXISTS sources_chunkvec_delete ON sources_chunk;
DROP TRIGGER IF EXISTS sources_chunkvec_truncate ON sources_chunk;
DROP TRIGGER IF EXISTS sources_chunkvec_source_delete ON sources_source;
DO $$
DECLARE
    vec regclass;
BEGIN
    FOR vec IN
        SELECT c.oid::regclass FROM pg_class c
        WHERE c.relkind = 'r' AND c.relname ~ '^sources_chunkvec_[0-9]+$'
          AND c.relnamespace = current_schema()::regnamespace
    LOOP
        EXECUTE format('DROP TABLE %s', vec);
    END LOOP;
END
$$;
DROP FUNCTION IF EXISTS sources_chunk_top_k(vector, bigint[], integer, integer);
DROP FUNCTION IF EXISTS sources_chunkvec_after_insert();
DROP FUNCTION IF EXISTS sources_chunkvec_after_update();
DROP FUNCTION IF EXISTS sources_chunkvec_after_delete();
DROP FUNCTION IF EXISTS sources_chunkvec_after_truncate();
DROP FUNCTION IF EXISTS sources_chunkvec_after_source_delete();
"""


def statements(script: str) -> list[str]:
    """The statements of a script: each ends with ';' at the end of a line outside a $$ body."""
    found, current, inside = [], [], False
    for line in script.strip().splitlines():
        current.append(line)
        inside ^= line.count("$$") % 2 == 1
        if not inside and line.rstrip().endswith(";"):
            found.append("\n".join(current).strip())
            current = []
    assert not "".join(current).strip(), "a statement without its ';'"
    return found


class Migration(migrations.Migration):
    dependencies = [
        ("sources", "0003_claimkey_claim"),
    ]

    operations = [
        migrations.CreateModel(
            name="SourceVectorIndex",
            fields=[
                (
                    "source",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="vector_index",
                        serialize=False,
                        to="sources.source",
                    ),
                ),
                (
                    "state",
                    models.CharField(
                        choices=[
                            ("queued", "Queued"),
                            ("building", "Building"),
                            ("ready", "Ready"),
                            ("failed", "Failed"),
                        ],
                        default="queued",
                        max_length=10,
                    ),
                ),
                ("chunks", models.PositiveIntegerField(default=0)),
                ("build_seconds", models.FloatField(blank=True, null=True)),
                ("size_bytes", models.BigIntegerField(blank=True, null=True)),
                ("error", models.TextField(blank=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
            ],
        ),
        # Lists of whole statements: a string would be split by sqlparse, which need not
        # understand dollar-quoted bodies.
        migrations.RunSQL(statements(FUNCTIONS), statements(REVERSE)),
    ]
