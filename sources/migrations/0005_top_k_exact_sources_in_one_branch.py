"""sources_chunk_top_k searches every source without a ready graph of its own (the small ones)
in ONE branch, a LATERAL over their ids, instead of one UNION ALL branch each: planning a
branch per source cost more than scanning them (twenty sources of about 250 chunks: 3.6 ms
for the function with twenty branches, 1.2 ms for the same rows through one LATERAL,
docs/performance.md). Sources with a graph keep a branch each: each names its own table.
The reverse restores the function of migration 0004.
"""

import importlib

from django.db import migrations

_previous = importlib.import_module("sources.migrations.0004_source_vector_index")

TOP_K = """
CREATE OR REPLACE FUNCTION sources_chunk_top_k(q vector, source_ids bigint[], candidates integer, ef_search integer)
RETURNS TABLE (source_id bigint, chunk_id bigint)
LANGUAGE plpgsql VOLATILE ROWS 100 AS $$
DECLARE
    branches text;
    exact_ids bigint[];
    previous_ef text := coalesce(current_setting('hnsw.ef_search', true), '40');
    previous_iterative text := coalesce(current_setting('hnsw.iterative_scan', true), 'off');
BEGIN
    SELECT string_agg(format('(SELECT %s::bigint, v.chunk_id FROM sources_chunkvec_%s v '
                             'ORDER BY v.embedding <=> $1 LIMIT $3)', s.id, s.id), ' UNION ALL ')
               FILTER (WHERE t.oid IS NOT NULL),
           array_agg(s.id) FILTER (WHERE t.oid IS NULL)
    INTO branches, exact_ids
    FROM (SELECT DISTINCT unnest(source_ids) AS id) s
    LEFT JOIN sources_sourcevectorindex i ON i.source_id = s.id AND i.state = 'ready'
    LEFT JOIN pg_class t ON i.source_id IS NOT NULL AND t.relname = 'sources_chunkvec_' || s.id
        AND t.relkind = 'r' AND t.relnamespace = current_schema()::regnamespace;
    IF exact_ids IS NOT NULL THEN
        -- `+ 0` keeps the planner off the all-chunks HNSW index, whose filtered walk could
        -- starve a small source: each listed source's rows are read by the source_id index.
        branches := concat_ws(' UNION ALL ', branches,
            '(SELECT e.id, x.id FROM unnest($4) e(id) CROSS JOIN LATERAL ('
            'SELECT c.id FROM sources_chunk c WHERE c.source_id = e.id '
            'ORDER BY (c.embedding <=> $2) + 0 LIMIT $3) x)');
    END IF;
    IF branches IS NULL THEN
        RETURN;
    END IF;
    PERFORM set_config('hnsw.ef_search', greatest(ef_search, candidates)::text, true);
    PERFORM set_config('hnsw.iterative_scan', 'off', true);
    RETURN QUERY EXECUTE branches USING q::halfvec, q, candidates, exact_ids;
    PERFORM set_config('hnsw.ef_search', previous_ef, true);
    PERFORM set_config('hnsw.iterative_scan', previous_iterative, true);
END
$$;
"""

PREVIOUS_TOP_K = next(
    statement
    for statement in _previous.statements(_previous.FUNCTIONS)
    if "CREATE OR REPLACE FUNCTION sources_chunk_top_k(" in statement
)


class Migration(migrations.Migration):
    dependencies = [
        ("sources", "0004_source_vector_index"),
    ]

    operations = [
        migrations.RunSQL(_previous.statements(TOP_K), [PREVIOUS_TOP_K]),
    ]
