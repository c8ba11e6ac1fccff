//! Foundation guarantees: migrations, roles, the sample generator, the
//! importer and the embedding job, against the real local PostgreSQL.

use mosaic::catalog::import;
use mosaic::db::{self, MigrateOptions};
use mosaic::embed::HashingEmbedder;
use mosaic_devtools::generator::{self, Generator};
use mosaic_integration_tests::{domain_count, forget_last_migration, texts, TestDb};
use std::io::Write;
use tokio_postgres::Client;

async fn schema_snapshot(c: &Client) -> Vec<String> {
    let rows = c
        .query(
            "SELECT 'table ' || table_schema || '.' || table_name || '.' || column_name || ' ' || data_type
               FROM information_schema.columns WHERE table_schema IN ('catalog','search','receipts','mosaic_meta')
             UNION ALL
             SELECT 'index ' || schemaname || '.' || indexname || ' ' || indexdef FROM pg_indexes
              WHERE schemaname IN ('catalog','search','receipts','mosaic_meta')
             UNION ALL
             SELECT 'extension ' || extname || ' ' || extversion FROM pg_extension
             UNION ALL
             SELECT 'grant ' || grantee || ' ' || table_schema || '.' || table_name || ' ' || privilege_type
               FROM information_schema.role_table_grants WHERE grantee = 'mosaic_runtime'
             ORDER BY 1",
            &[],
        )
        .await
        .unwrap();
    rows.iter().map(|r| r.get(0)).collect()
}

#[tokio::test]
async fn migrations_applied_twice_leave_the_schema_unchanged() {
    let db = TestDb::empty("migrate").await;
    let mut c = db.owner().await;
    let every: Vec<&str> = db::MIGRATIONS.iter().map(|m| m.name).collect();
    assert_eq!(db::pending_migrations(&c).await.unwrap(), every);
    let first = db::migrate(&mut c, &MigrateOptions::default())
        .await
        .unwrap();
    assert_eq!(first.applied.len(), db::MIGRATIONS.len());
    assert_eq!(
        db::pending_migrations(&c).await.unwrap(),
        Vec::<&str>::new()
    );
    // A database one migration behind this build names that one.
    let last = forget_last_migration(&c).await;
    assert_eq!(db::pending_migrations(&c).await.unwrap(), vec![last]);
    db::migrate(&mut c, &MigrateOptions::default())
        .await
        .unwrap();
    let before = schema_snapshot(&c).await;
    let second = db::migrate(&mut c, &MigrateOptions::default())
        .await
        .unwrap();
    assert!(second.applied.is_empty());
    assert_eq!(second.already_applied, db::MIGRATIONS.len());
    assert_eq!(before, schema_snapshot(&c).await);

    for table in [
        "catalog.products",
        "catalog.evidence",
        "search.product_projection",
        "receipts.search_events",
        "receipts.search_candidates",
        "mosaic_meta.migrations",
    ] {
        let found: Option<String> = c
            .query_one("SELECT to_regclass($1)::text", &[&table])
            .await
            .unwrap()
            .get(0);
        assert_eq!(found.as_deref(), Some(table), "missing table {table}");
    }
    let indexes = texts(
        &c,
        "SELECT indexdef FROM pg_indexes WHERE schemaname IN ('catalog','search')",
        &[],
    )
    .await;
    for (what, needle) in [
        (
            "tsvector GIN with the taxonomy",
            "product_projection USING gin (domain, category_key, brand_key, document)",
        ),
        (
            "trigram GIN with the taxonomy",
            "USING gin (domain, category_key, brand_key, identity_text gin_trgm_ops)",
        ),
        ("HNSW cosine", "USING hnsw (embedding vector_cosine_ops)"),
        ("attributes GIN", "USING gin (attributes jsonb_path_ops)"),
        ("price btree", "USING btree (price_cents)"),
        ("category btree", "USING btree (category_key)"),
        ("evidence FTS", "evidence USING gin (document)"),
    ] {
        assert!(
            indexes.iter().any(|d| d.contains(needle)),
            "missing {what} index"
        );
    }
    let vector: String = c
        .query_one(
            "SELECT extversion FROM pg_extension WHERE extname = 'vector'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    let parts: Vec<u32> = vector.split('.').map(|p| p.parse().unwrap()).collect();
    assert!(
        parts[0] > 0 || parts[1] >= 8,
        "pgvector {vector} is older than 0.8.0"
    );
    let trgm = c
        .query_opt(
            "SELECT extversion FROM pg_extension WHERE extname = 'pg_trgm'",
            &[],
        )
        .await
        .unwrap();
    assert!(trgm.is_some(), "pg_trgm is not installed");
    assert_eq!(db::embedding_dimension(&c).await.unwrap(), Some(384));
}

#[tokio::test]
async fn the_embedding_dimension_is_a_migration_parameter_and_cannot_silently_change() {
    let db = TestDb::empty("dim").await;
    let mut c = db.owner().await;
    let opts = MigrateOptions {
        embedding_dim: 1024,
        ..Default::default()
    };
    db::migrate(&mut c, &opts).await.unwrap();
    assert_eq!(db::embedding_dimension(&c).await.unwrap(), Some(1024));
    let err = db::migrate(&mut c, &MigrateOptions::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("1024"), "{err}");
}

#[tokio::test]
async fn a_local_embedder_of_another_dimension_fails_the_start_up() {
    let db = TestDb::with_sample("embedder_dimension").await;
    let settings = |embedder: &str| {
        let url = db.runtime_url();
        let embedder = embedder.to_string();
        mosaic::config::Settings::from_lookup(move |k| match k {
            "MOSAIC_DATABASE_URL" => Some(url.clone()),
            "MOSAIC_EMBEDDER" => Some(embedder.clone()),
            "MOSAIC_RERANKER" => Some("none".into()),
            _ => None,
        })
        .unwrap()
    };
    let err = mosaic::config::build_context(&settings("hashing:512"), 1)
        .await
        .err()
        .expect("512 dimensions against a 384-dimension column");
    assert!(err.contains("512") && err.contains("384"), "{err}");
    assert!(mosaic::config::build_context(&settings("hashing:384"), 1)
        .await
        .is_ok());
    // Without an embedder there is nothing to check.
    assert!(mosaic::config::build_context(&settings("none"), 1)
        .await
        .is_ok());
    // Vectors of another model of the same dimension cannot be compared
    // with the queries': the start-up fails, naming both models.
    let owner = db.owner().await;
    owner
        .batch_execute("UPDATE search.product_projection SET embedding_model = 'other-model/384'")
        .await
        .unwrap();
    let err = mosaic::config::build_context(&settings("hashing:384"), 1)
        .await
        .err()
        .expect("vectors of another model");
    assert!(
        err.contains("other-model/384") && err.contains("hashing-v1/384"),
        "{err}"
    );
    // A catalog part way through a re-embedding starts, with a warning.
    owner
        .batch_execute(
            "UPDATE search.product_projection SET embedding_model = 'hashing-v1/384'
              WHERE hashtext(product_id) & 1 = 0",
        )
        .await
        .unwrap();
    assert!(mosaic::config::build_context(&settings("hashing:384"), 1)
        .await
        .is_ok());
}

async fn denied(c: &Client, sql: &str) {
    let err = c.batch_execute(sql).await.expect_err(sql);
    assert_eq!(
        err.code(),
        Some(&tokio_postgres::error::SqlState::INSUFFICIENT_PRIVILEGE),
        "{sql}: {err}"
    );
}

#[tokio::test]
async fn the_runtime_role_cannot_change_the_catalog_or_rewrite_receipts() {
    let db = TestDb::with_sample("roles").await;
    let rt = db.runtime().await;
    let n: i64 = rt
        .query_one("SELECT count(*) FROM catalog.products", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 5_000);
    rt.query_one("SELECT count(*) FROM search.product_projection", &[])
        .await
        .unwrap();
    for sql in [
        "INSERT INTO catalog.products (product_id, sku, model, brand, title, domain, category_key, price_cents, availability, source_uri) VALUES ('x','x','x','x','x','x','x',1,'in_stock','x')",
        "UPDATE catalog.products SET price_cents = 1",
        "DELETE FROM catalog.products",
        "UPDATE catalog.evidence SET body = ''",
        "DELETE FROM catalog.evidence",
        "INSERT INTO catalog.evidence (evidence_id, product_id, kind, source_uri, title, body) VALUES ('e','P0000001','review','x','x','x')",
        "UPDATE search.product_projection SET price_cents = 1",
        "DELETE FROM search.product_projection",
        "INSERT INTO search.product_projection SELECT * FROM search.product_projection LIMIT 1",
        "TRUNCATE catalog.products",
        "SELECT search.refresh_projection(NULL)",
        "CREATE TABLE public.intruder (x int)",
    ] {
        denied(&rt, sql).await;
    }
    // Receipts: the tables are the owner's; the runtime role neither reads,
    // writes, rewrites nor deletes them directly.
    for sql in [
        "SELECT count(*) FROM receipts.search_events",
        "SELECT count(*) FROM receipts.search_candidates",
        "SELECT count(*) FROM receipts.search_events_default",
        "SELECT count(*) FROM receipts.search_candidates_default",
        "SELECT principal FROM receipts.search_events WHERE principal = 'anonymous'",
        "INSERT INTO receipts.search_events (search_event_id, principal, applied_filters, strategy, pool_size,
             result_limit, authorized_limit, served_count, rerank_status, models, arms, timings_ms, warnings, profile)
         VALUES ('00000000-0000-4000-8000-000000000001', 'anonymous', '{}', 'hybrid', 0, 10, 10, 0, 'skipped',
                 '{}', '{}', '{}', '[]', '{}')",
        "INSERT INTO receipts.search_candidates (search_event_id, product_id, pre_rerank_rank, final_rank,
             granted, match_reason, source_uri, source_revision)
         VALUES ('00000000-0000-4000-8000-000000000001', 'P0000001', 1, 1, false, 'lexical', 'x', 1)",
        "UPDATE receipts.search_events SET principal = 'someone-else'",
        "DELETE FROM receipts.search_events",
        "UPDATE receipts.search_candidates SET granted = true",
        "DELETE FROM receipts.search_candidates",
    ] {
        denied(&rt, sql).await;
    }
    // Nor any day's partition.
    let day: String = db
        .owner()
        .await
        .query_one(
            "SELECT to_char((now() AT TIME ZONE 'UTC')::date, 'YYYYMMDD')",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    for table in ["search_events", "search_candidates"] {
        denied(
            &rt,
            &format!("SELECT count(*) FROM receipts.{table}_p{day}"),
        )
        .await;
        denied(&rt, &format!("DELETE FROM receipts.{table}_p{day}")).await;
    }
}

/// A call of `receipts.record` (the runtime role's only receipt write) for
/// `principal`, one pool member per product, the first `granted` of them
/// granted and served; `pool_size` as the event records it.
fn record_sql(principal: &str, products: &[&str], granted: usize, pool_size: usize) -> String {
    let n = products.len();
    let list = |f: &dyn Fn(usize) -> String, ty: &str| {
        let items: Vec<String> = (0..n).map(f).collect();
        format!("ARRAY[{}]::{ty}[]", items.join(","))
    };
    let nulls = |ty: &str| list(&|_| "NULL".into(), ty);
    format!(
        "SELECT receipts.record('{principal}', NULL, 'q', 'q', '{{}}', 'hybrid', NULL, NULL,
             {pool_size}, 10, {granted}, {granted}, 'skipped', '{{}}', '{{}}', '{{}}', '[]', '{{}}', NULL, NULL, NULL, NULL,
             {ids}, {ranks}, {ni}, {nf}, {ni}, {nf}, {ni}, {nf}, {nf}, {nf}, {ranks}, {served}, {granted_flags},
             {exact}, {reasons}, {uris}, {revs}, {ns}, {ns})::text",
        ids = list(&|i| format!("'{}'", products[i]), "text"),
        ranks = list(&|i| (i + 1).to_string(), "int"),
        ni = nulls("int"),
        nf = nulls("float8"),
        ns = nulls("int2"),
        served = list(
            &|i| if i < granted { (i + 1).to_string() } else { "NULL".into() },
            "int"
        ),
        granted_flags = list(&|i| (i < granted).to_string(), "bool"),
        exact = list(&|_| "false".into(), "bool"),
        reasons = list(&|_| "'lexical'".into(), "text"),
        uris = list(&|_| "'x'".into(), "text"),
        revs = list(&|_| "1".into(), "int"),
    )
}

#[tokio::test]
async fn the_runtime_role_reaches_receipts_only_through_their_functions() {
    let db = TestDb::with_sample("receipt_functions").await;
    let rt = db.runtime().await;
    let owner = db.owner().await;
    let recorded = |principal: &'static str| {
        let rt = &rt;
        async move {
            let sql = record_sql(principal, &["P0000001", "P0000002", "P0000003"], 2, 3);
            rt.query_one(&sql, &[]).await.unwrap().get::<_, String>(0)
        }
    };
    // The function draws each event's id: two writes, two events.
    let event = recorded("alice").await;
    let other = recorded("alice").await;
    assert_ne!(event, other);
    let count = |sql: String| {
        let rt = &rt;
        async move { rt.query_one(&sql, &[]).await.unwrap().get::<_, i64>(0) }
    };
    let of = |f: &str, id: &str, principal: &str| {
        format!("SELECT count(*) FROM receipts.{f}('{id}', '{principal}')")
    };
    assert_eq!(count(of("event_of", &event, "alice")).await, 1);
    assert_eq!(count(of("pool_of", &event, "alice")).await, 3);
    assert_eq!(
        count(of("pool_of", &event, "alice") + " WHERE granted").await,
        2
    );
    // Another principal, or an event never recorded, reads nothing.
    assert_eq!(count(of("event_of", &event, "bob")).await, 0);
    assert_eq!(count(of("pool_of", &event, "bob")).await, 0);
    let unknown = "00000000-0000-4000-8000-0000000000fe";
    assert_eq!(count(of("pool_of", unknown, "alice")).await, 0);
    let rows: Vec<(String, bool)> = owner
        .query(
            "SELECT product_id, granted FROM receipts.search_candidates
              WHERE search_event_id = $1::text::uuid ORDER BY product_id",
            &[&event],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(
        rows,
        [
            ("P0000001".to_string(), true),
            ("P0000002".to_string(), true),
            ("P0000003".to_string(), false)
        ]
    );

    // A pool whose arrays do not hold `pool_size` members each is refused,
    // and nothing of it is written.
    let short = record_sql("alice", &["P0000001", "P0000002"], 1, 3);
    let longer_ids = record_sql("alice", &["P0000001"], 1, 1).replacen(
        "ARRAY['P0000001']::text[]",
        "ARRAY['P0000001','P0000002']::text[]",
        1,
    );
    // Nor is a grant the event's authorization does not cover (migration
    // 0027): a member granted beyond `authorized_limit`, a served member
    // not granted within it, no authorization at all, served ranks that
    // are not 1..served_count, or a replay of another principal's event.
    let three = ["P0000001", "P0000002", "P0000003"];
    let valid = record_sql("alice", &three, 2, 3);
    // Three served, two authorized: the third is served but not granted.
    let served_three = valid.replacen("10, 2, 2,", "10, 2, 3,", 1).replacen(
        "ARRAY[1,2,NULL]::int[], ARRAY[true",
        "ARRAY[1,2,3]::int[], ARRAY[true",
        1,
    );
    let granted_beyond = served_three.replacen(
        "ARRAY[true,true,false]::bool[]",
        "ARRAY[true,true,true]::bool[]",
        1,
    );
    let within_not_granted = valid.replacen(
        "ARRAY[true,true,false]::bool[]",
        "ARRAY[true,false,false]::bool[]",
        1,
    );
    let unauthorized = valid.replacen("10, 2, 2,", "10, NULL, 2,", 1);
    let ranks_repeated = valid.replacen(
        "ARRAY[1,2,NULL]::int[], ARRAY[true",
        "ARRAY[1,1,NULL]::int[], ARRAY[true",
        1,
    );
    let count_short = valid.replacen("10, 2, 2,", "10, 2, 1,", 1);
    let bobs = recorded("bob").await;
    let replays_other = valid.replacen(
        "'{}', NULL, NULL, NULL, NULL,",
        &format!("'{{}}', '{bobs}', 'recorded', '{{}}', NULL,"),
        1,
    );
    let replays_own = valid.replacen(
        "'{}', NULL, NULL, NULL, NULL,",
        &format!("'{{}}', '{event}', 'recorded', '{{}}', NULL,"),
        1,
    );
    assert_ne!(served_three, valid);
    assert_ne!(granted_beyond, served_three);
    let refused = [
        granted_beyond,
        within_not_granted,
        unauthorized,
        ranks_repeated,
        count_short,
        replays_other,
    ];
    for sql in &refused {
        assert_ne!(sql, &valid, "each case changes the valid call");
    }
    // The valid calls and a replay of the principal's own event are taken.
    rt.batch_execute(&valid).await.unwrap();
    rt.batch_execute(&served_three).await.unwrap();
    rt.batch_execute(&replays_own).await.unwrap();
    let before: i64 = owner
        .query_one("SELECT count(*) FROM receipts.search_events", &[])
        .await
        .unwrap()
        .get(0);
    for sql in [short, longer_ids].into_iter().chain(refused) {
        let err = rt.batch_execute(&sql).await.expect_err(&sql);
        assert_eq!(
            err.code(),
            Some(&tokio_postgres::error::SqlState::INVALID_PARAMETER_VALUE),
            "{err}"
        );
    }
    let after: i64 = owner
        .query_one("SELECT count(*) FROM receipts.search_events", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(after, before);

    // The functions run as their owner with a fixed search_path, and no
    // one else may call them.
    let rows = owner
        .query(
            "SELECT p.proname, p.prosecdef, p.proconfig::text,
                    has_function_privilege('public', p.oid, 'EXECUTE')
               FROM pg_proc p WHERE p.pronamespace = 'receipts'::regnamespace
                AND p.proname IN ('record', 'event_of', 'pool_of') ORDER BY 1",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(rows.len(), 3);
    for r in rows {
        let name: String = r.get(0);
        assert!(r.get::<_, bool>(1), "{name} is SECURITY DEFINER");
        assert_eq!(
            r.get::<_, Option<String>>(2).as_deref(),
            Some("{\"search_path=pg_catalog, pg_temp\"}"),
            "{name}"
        );
        assert!(!r.get::<_, bool>(3), "PUBLIC may not call {name}");
    }
}

/// A candidate row of receipt `event` at `created_at` (SQL text), as the
/// receipt write lays it out.
fn candidate_sql(event: &str, created_at: &str, product: &str) -> String {
    format!(
        "INSERT INTO receipts.search_candidates (search_event_id, event_created_at, product_id,
             pre_rerank_rank, final_rank, granted, match_reason, source_uri, source_revision)
         SELECT '{event}'::uuid, {created_at}, '{product}', 1, 1, false, 'lexical', 'x', 1"
    )
}

#[tokio::test]
async fn a_candidate_must_name_a_recorded_event_and_an_event_keeps_its_candidates() {
    let db = TestDb::with_sample("candidate_check").await;
    // The owner writes the tables directly; the runtime role cannot.
    let rt = db.owner().await;
    let event = "00000000-0000-4000-8000-000000000002";
    rt.batch_execute(&format!(
        "INSERT INTO receipts.search_events (search_event_id, principal, applied_filters, strategy, pool_size,
             result_limit, authorized_limit, served_count, rerank_status, models, arms, timings_ms, warnings, profile)
         VALUES ('{event}', 'anonymous', '{{}}', 'hybrid', 1, 10, 10, 0, 'skipped', '{{}}', '{{}}', '{{}}', '[]', '{{}}')"
    ))
    .await
    .unwrap();
    let created = format!(
        "(SELECT created_at FROM receipts.search_events WHERE search_event_id = '{event}')"
    );
    rt.batch_execute(&candidate_sql(event, &created, "P0000001"))
        .await
        .unwrap();
    let refused = |sql: String| {
        let rt = &rt;
        async move {
            let err = rt.batch_execute(&sql).await.expect_err(&sql);
            assert_eq!(
                err.code(),
                Some(&tokio_postgres::error::SqlState::FOREIGN_KEY_VIOLATION),
                "{sql}: {err}"
            );
        }
    };
    // An event that was never recorded, and a recorded event's id at
    // another time.
    refused(candidate_sql(
        "00000000-0000-4000-8000-0000000000ff",
        "now()",
        "P0000002",
    ))
    .await;
    refused(candidate_sql(
        event,
        &format!("{created} - interval '1 second'"),
        "P0000002",
    ))
    .await;
    // One bad row refuses the whole statement.
    refused(format!(
        "{} UNION ALL SELECT '00000000-0000-4000-8000-0000000000ff'::uuid, now(), 'P0000004', 1, 1, false, 'lexical', 'x', 1",
        candidate_sql(event, &created, "P0000003")
    ))
    .await;
    let n: i64 = rt
        .query_one(
            "SELECT count(*) FROM receipts.search_candidates WHERE search_event_id = $1::text::uuid",
            &[&event],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 1, "only the first candidate was written");
    // The owner cannot delete an event before its candidates.
    let owner = db.owner().await;
    let err = owner
        .batch_execute(&format!(
            "DELETE FROM receipts.search_events WHERE search_event_id = '{event}'"
        ))
        .await
        .unwrap_err();
    assert_eq!(
        err.code(),
        Some(&tokio_postgres::error::SqlState::FOREIGN_KEY_VIOLATION),
        "{err}"
    );
    owner
        .batch_execute(&format!(
            "DELETE FROM receipts.search_candidates WHERE search_event_id = '{event}';
             DELETE FROM receipts.search_events WHERE search_event_id = '{event}'"
        ))
        .await
        .unwrap();
}

async fn catalog_digest(c: &Client) -> (i64, i64, String) {
    let row = c
        .query_one(
            "SELECT (SELECT count(*) FROM catalog.products), (SELECT count(*) FROM catalog.evidence),
                    md5((SELECT string_agg(p::text, '|' ORDER BY product_id) FROM catalog.products p) ||
                        (SELECT string_agg(e::text, '|' ORDER BY evidence_id) FROM catalog.evidence e))",
            &[],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1), row.get(2))
}

#[tokio::test]
async fn two_generator_runs_with_one_seed_give_identical_catalogs() {
    let a = TestDb::empty("gen_a").await;
    let b = TestDb::empty("gen_b").await;
    let mut digests = Vec::new();
    for db in [&a, &b] {
        let mut c = db.owner().await;
        db::migrate(&mut c, &MigrateOptions::default())
            .await
            .unwrap();
        generator::load_sample(&mut c, Generator::new(42, 5_000), &mut |_, _, _| {})
            .await
            .unwrap();
        digests.push(catalog_digest(&c).await);
        let row = c
            .query_one(
                "SELECT count(DISTINCT domain), count(DISTINCT category_key), count(DISTINCT brand),
                        count(*) FILTER (WHERE availability NOT IN ('in_stock','low_stock')),
                        (SELECT count(*) FROM catalog.evidence WHERE kind = 'specification'),
                        (SELECT count(*) FROM catalog.evidence WHERE kind = 'review'),
                        (SELECT count(*) FROM search.product_projection)
                 FROM catalog.products",
                &[],
            )
            .await
            .unwrap();
        let (domains, categories, brands): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
        assert!(
            domains >= 3 && categories >= 25 && brands >= 20,
            "{domains} {categories} {brands}"
        );
        assert!(
            row.get::<_, i64>(3) > 0,
            "some products must be unavailable"
        );
        assert_eq!(row.get::<_, i64>(4), 5_000, "one specification per product");
        assert!(row.get::<_, i64>(5) >= 10_000);
        assert_eq!(
            row.get::<_, i64>(6),
            5_000,
            "one projection row per product"
        );
    }
    assert_eq!(digests[0], digests[1]);
    assert_eq!(digests[0].0, 5_000);
    assert!(digests[0].1 >= 15_000, "{} evidence units", digests[0].1);
}

/// The catalog's term statistics differ from a recount over every
/// projection row: lexemes (recounted with `ts_stat`), vocabulary words
/// (recounted with the words' definition of migration 0014) and the
/// catalog row. Returns what differs, empty when nothing does.
async fn terms_against_a_recount(c: &tokio_postgres::Client) -> Vec<String> {
    let lexemes: i64 = c
        .query_one(
            "SELECT count(*)
             FROM (SELECT word, ndoc FROM ts_stat('SELECT document FROM search.product_projection')) t
             FULL JOIN search.lexeme_stats s ON s.lexeme = t.word
             WHERE s.docs IS DISTINCT FROM t.ndoc",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    let words: i64 = c
        .query_one(
            "SELECT count(*)
             FROM (SELECT w.word, count(DISTINCT pp.product_id)::integer AS products
                   FROM search.product_projection pp
                   CROSS JOIN LATERAL regexp_split_to_table(
                       lower(pp.identity_text || ' ' || pp.embedding_text), '[^[:alnum:]]+') AS w (word)
                   WHERE w.word ~ '^[[:alpha:]]+$' AND length(w.word) <= 64
                   GROUP BY w.word) t
             FULL JOIN search.vocabulary v USING (word)
             WHERE v.products IS DISTINCT FROM t.products",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    let catalog: bool = c
        .query_one(
            "WITH w AS (
                 SELECT count(*) FILTER (WHERE wt = 'A') AS a, count(*) FILTER (WHERE wt = 'B') AS b,
                        count(*) FILTER (WHERE wt = 'C') AS c, count(*) FILTER (WHERE wt = 'D') AS d
                 FROM search.product_projection pp, unnest(pp.document) u, unnest(u.weights) AS wt
                 GROUP BY pp.product_id)
             SELECT s.products = (SELECT count(*) FROM search.product_projection)
                    AND abs(s.avg_identity - (SELECT avg(a) FROM w)) < 1e-9
                    AND abs(s.avg_title - (SELECT avg(b) FROM w)) < 1e-9
                    AND abs(s.avg_facets - (SELECT avg(c) FROM w)) < 1e-9
                    AND abs(s.avg_description - (SELECT avg(d) FROM w)) < 1e-9
             FROM search.catalog_stats s",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    let mut differ = Vec::new();
    if lexemes > 0 {
        differ.push(format!("{lexemes} lexeme counts"));
    }
    if words > 0 {
        differ.push(format!("{words} vocabulary counts"));
    }
    if !catalog {
        differ.push("the catalog row".to_string());
    }
    differ
}

fn write_file(dir: &std::path::Path, name: &str, lines: &[String]) -> std::path::PathBuf {
    let path = dir.join(name);
    let mut f = std::fs::File::create(&path).unwrap();
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
    path
}

fn product_line(id: &str, sku: &str, price: serde_json::Value) -> String {
    serde_json::json!({
        "product_id": id, "sku": sku, "model": format!("M-{sku}"), "brand": "Testbrand",
        "title": format!("Testbrand {sku} Kettle"), "domain": "home_kitchen", "category_key": "kettles",
        "price_cents": price, "availability": "in_stock", "rating": 4.5,
        "attributes": {"capacity_ml": 1700, "body": "glass"}, "aliases": ["tb kettle"]
    })
    .to_string()
}

#[tokio::test]
async fn the_importer_is_all_or_nothing_and_names_the_bad_row() {
    let db = TestDb::with_sample("import").await;
    let mut c = db.owner().await;
    let before = catalog_digest(&c).await;
    let dir = std::env::temp_dir().join(format!("mosaic-import-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();

    // One bad row among good ones: nothing is written.
    let bad = write_file(
        &dir,
        "bad.jsonl",
        &[
            product_line("T1", "TB-1", 1999.into()),
            product_line("T2", "TB-2", 2999.into()),
            product_line("T3", "TB-3", "cheap".into()),
            product_line("T4", "TB-4", 999.into()),
        ],
    );
    let err = import::import(&mut c, Some(&bad), None, &mut |_, _, _| {})
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("bad.jsonl:3") && msg.contains("price_cents"),
        "{msg}"
    );
    assert_eq!(catalog_digest(&c).await, before);

    // Evidence naming an unknown product: nothing is written either.
    let good = write_file(
        &dir,
        "good.jsonl",
        &[
            product_line("T1", "TB-1", 1999.into()),
            product_line("T2", "TB-2", 2999.into()),
        ],
    );
    let orphan = write_file(
        &dir,
        "orphan.jsonl",
        &[
            serde_json::json!({"evidence_id": "T1-spec", "product_id": "T1", "kind": "specification",
                "source_uri": "https://example.test/T1", "title": "T1 spec", "body": "Capacity 1.7 l."}).to_string(),
            serde_json::json!({"evidence_id": "X-r1", "product_id": "NOPE", "kind": "review",
                "source_uri": "https://example.test/x", "title": "x", "body": "x", "rating": 4}).to_string(),
        ],
    );
    let err = import::import(&mut c, Some(&good), Some(&orphan), &mut |_, _, _| {})
        .await
        .unwrap_err();
    assert!(err.to_string().contains("orphan.jsonl:2"), "{err}");
    assert_eq!(catalog_digest(&c).await, before);

    // A CSV row with a bad availability names the line and the field.
    let csv = dir.join("bad.csv");
    std::fs::write(
        &csv,
        "product_id,sku,model,brand,title,domain,category_key,price_cents,availability,attributes,aliases\n\
         C1,CSV-1,C-1,Csvbrand,Csvbrand C-1 Lamp,office,desk_lamps,2599,in_stock,\"{\"\"lumens\"\": 800}\",lamp|light\n\
         C2,CSV-2,C-2,Csvbrand,Csvbrand C-2 Lamp,office,desk_lamps,2599,sometimes,{},\n",
    )
    .unwrap();
    let err = import::import(&mut c, Some(&csv), None, &mut |_, _, _| {})
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("bad.csv:3") && err.to_string().contains("availability"),
        "{err}"
    );
    assert_eq!(catalog_digest(&c).await, before);

    // Values a filter could never match, or the database cannot hold, name
    // their line and field; nothing is written.
    let line = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut v: serde_json::Value =
            serde_json::from_str(&product_line("T9", "TB-9", 999.into())).unwrap();
        f(&mut v);
        v.to_string()
    };
    for (field, bad) in [
        ("brand", line(&|v| v["brand"] = " Testbrand".into())),
        (
            "domain",
            line(&|v| v["domain"] = "home\u{202E}kitchen".into()),
        ),
        (
            "category_key",
            line(&|v| v["category_key"] = "kettles\t".into()),
        ),
        // Invisible characters alone: the request validator reads such a
        // filter as no filter at all.
        ("brand", line(&|v| v["brand"] = "\u{200B}\u{2060}".into())),
        ("domain", line(&|v| v["domain"] = "\u{FEFF}".into())),
        (
            "category_key",
            line(&|v| v["category_key"] = "\u{00AD}\u{200B}".into()),
        ),
        (
            "description",
            line(&|v| v["description"] = "nul \u{0} here".into()),
        ),
        (
            "attributes",
            line(&|v| v["attributes"]["body"] = "gl\u{0}ass".into()),
        ),
        (
            "price_cents",
            line(&|v| v["price_cents"] = 2_000_000_000_000i64.into()),
        ),
        (
            "revision",
            line(&|v| v["revision"] = i64::from(i32::MAX).into()),
        ),
    ] {
        let path = write_file(
            &dir,
            "refused.jsonl",
            &[product_line("T8", "TB-8", 999.into()), bad],
        );
        let err = refused(&mut c, &path).await;
        assert!(
            err.contains("refused.jsonl:2") && err.contains(field),
            "{field}: {err}"
        );
        assert_eq!(catalog_digest(&c).await, before, "{field}");
    }

    // A good import loads fully, projection included.
    let evidence = write_file(
        &dir,
        "evidence.jsonl",
        &[serde_json::json!({"evidence_id": "T1-spec", "product_id": "T1", "kind": "specification",
            "source_uri": "https://example.test/T1", "title": "T1 spec", "body": "Capacity 1.7 l."})
        .to_string()],
    );
    let mut stages: Vec<String> = Vec::new();
    let report = import::import(&mut c, Some(&good), Some(&evidence), &mut |stage, _, _| {
        if stages.last().map(String::as_str) != Some(stage) {
            stages.push(stage.to_string());
        }
    })
    .await
    .unwrap();
    // Every step of a long import says where it is.
    assert_eq!(
        stages,
        ["checked", "products", "evidence", "upsert", "projection"],
        "{stages:?}"
    );
    assert_eq!(
        (report.products, report.evidence, report.projection_rows),
        (2, 1, 2)
    );
    let after = catalog_digest(&c).await;
    assert_eq!((after.0, after.1), (before.0 + 2, before.1 + 1));
    let keys: Vec<String> = c
        .query_one(
            "SELECT identifier_keys FROM search.product_projection WHERE product_id = 'T1'",
            &[],
        )
        .await
        .unwrap()
        .get::<_, Vec<String>>(0);
    assert_eq!(keys, vec!["tb1".to_string(), "mtb1".to_string()]);
    // Two products in 5,002: their terms were counted by difference, and
    // the counts are those of a full recount.
    assert_eq!(terms_against_a_recount(&c).await, Vec::<String>::new());

    // Both get vectors; a re-import that changes a product's text takes
    // its vector away until it is embedded again (migration 0028), one that
    // changes only its price keeps it.
    let hashing = HashingEmbedder::new(384);
    mosaic::embed_job::embed_pending(&c, &hashing, 64, 1, &mut |_, _, _| {})
        .await
        .unwrap();
    assert!(has_vector(&c, "T1").await && has_vector(&c, "T2").await);
    // Re-importing a changed product bumps its revision; its old SKU's
    // terms leave the counts, the new one's enter them.
    let changed = write_file(
        &dir,
        "changed.jsonl",
        &[product_line("T1", "TB-1", 1499.into()).replace("TB-1 Kettle", "TB-1 Zorbulax Kettle")],
    );
    import::import(&mut c, Some(&changed), None, &mut |_, _, _| {})
        .await
        .unwrap();
    assert_eq!(terms_against_a_recount(&c).await, Vec::<String>::new());
    let holders: i32 = c
        .query_one(
            "SELECT products FROM search.vocabulary WHERE word = 'zorbulax'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(holders, 1);
    let rev: i32 = c
        .query_one(
            "SELECT revision FROM catalog.products WHERE product_id = 'T1'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(rev, 2);
    // The refresh itself cleared the vector: no row serves a vector of a
    // text it no longer holds, whatever its hashes say.
    assert!(vector_cleared(&c, "T1").await, "T1's text changed");
    let repriced = write_file(
        &dir,
        "repriced.jsonl",
        &[product_line("T2", "TB-2", 2599.into())],
    );
    import::import(&mut c, Some(&repriced), None, &mut |_, _, _| {})
        .await
        .unwrap();
    assert!(has_vector(&c, "T2").await, "T2's text is the same");
    // `mosaic embed` gives T1 a vector of its new text.
    let again = mosaic::embed_job::embed_pending(&c, &hashing, 64, 1, &mut |_, _, _| {})
        .await
        .unwrap();
    assert_eq!(again.embedded, 1);
    assert!(has_vector(&c, "T1").await);
    std::fs::remove_dir_all(&dir).ok();
}

/// A CSV rating of `NaN` or `inf`, a CSV header naming a column twice and a
/// SKU another product keeps are refused with their file, line and field,
/// and nothing is written; unnamed CSV columns are no repeat, and SKUs that
/// change hands within the import pass in any order of its rows.
#[tokio::test]
async fn the_importer_refuses_what_would_be_lost_or_cannot_be_written_and_names_the_row() {
    let db = TestDb::with_sample("import_refuses").await;
    let mut c = db.owner().await;
    let before = catalog_digest(&c).await;
    let dir = std::env::temp_dir().join(format!("mosaic-import-refuses-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let header =
        "product_id,sku,model,brand,title,domain,category_key,price_cents,availability,rating";
    let row = |id: &str, rating: &str| {
        format!("{id},CSV-{id},M-{id},Csvbrand,Csvbrand {id} Lamp,office,desk_lamps,2599,in_stock,{rating}")
    };

    // `NaN` and `inf` parse as floating-point numbers, but are no rating
    // (JSON has none of them: they would be read as no rating at all).
    for rating in ["NaN", "nan", "inf", "-inf", "+infinity", "Infinity"] {
        let csv = dir.join("ratings.csv");
        let text = format!("{header}\n{}\n{}\n", row("C1", "4.5"), row("C2", rating));
        std::fs::write(&csv, text).unwrap();
        let err = refused(&mut c, &csv).await;
        assert_eq!(
            err, "ratings.csv:3: field `rating`: must be a number",
            "{rating}"
        );
        assert_eq!(catalog_digest(&c).await, before, "{rating}");
    }

    // A file with Windows line ends (spreadsheets, Python's `csv`) names
    // the same lines, the header's included; a line break inside a quoted
    // cell is one line more.
    let crlf = dir.join("crlf.csv");
    let text = format!(
        "{header}\r\n{}\r\n{}\r\n{}\r\n",
        row("C1", "4.5"),
        row("C2", "4.5").replace("Csvbrand C2 Lamp", "\"Csvbrand C2\r\nLamp\""),
        row("C3", "NaN")
    );
    std::fs::write(&crlf, text).unwrap();
    assert_eq!(
        refused(&mut c, &crlf).await,
        "crlf.csv:5: field `rating`: must be a number"
    );
    std::fs::write(&crlf, format!("{header}\r\n{}\r\n", row("C1", "NaN"))).unwrap();
    assert_eq!(
        refused(&mut c, &crlf).await,
        "crlf.csv:2: field `rating`: must be a number"
    );
    std::fs::write(
        &crlf,
        format!(
            "{header},title\r\n{},Csvbrand C1 Desk Lamp\r\n",
            row("C1", "4.5")
        ),
    )
    .unwrap();
    assert_eq!(
        refused(&mut c, &crlf).await,
        "crlf.csv:1: field `title`: column `title` appears twice in the header"
    );
    // Its last column reads without the `\r`, a quoted cell's break as `\n`.
    std::fs::write(
        &crlf,
        format!(
            "{header}\r\n{}\r\n",
            row("C1", "4.5").replace("Csvbrand C1 Lamp", "\"Csvbrand C1\r\nLamp\"")
        ),
    )
    .unwrap();
    let rows = import::read_products(&crlf).unwrap();
    assert_eq!(rows[0].1.rating, Some(4.5));
    assert_eq!(rows[0].1.title, "Csvbrand C1\nLamp");
    assert_eq!(catalog_digest(&c).await, before);

    // A column named twice: its later cell would overwrite the earlier one.
    let csv = dir.join("twice.csv");
    std::fs::write(
        &csv,
        format!(
            "{header},title\n{},Csvbrand C1 Desk Lamp\n",
            row("C1", "4.5")
        ),
    )
    .unwrap();
    let err = refused(&mut c, &csv).await;
    assert_eq!(
        err, "twice.csv:1: field `title`: column `title` appears twice in the header",
        "{err}"
    );
    assert_eq!(catalog_digest(&c).await, before);
    // Unnamed columns (a spreadsheet's trailing empty ones) are no repeat.
    let trailing = dir.join("trailing.csv");
    std::fs::write(&trailing, format!("{header},,\n{},,\n", row("C1", "4.5"))).unwrap();
    let rows = import::read_products(&trailing).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].1.product_id, "C1");

    // A SKU held by a product outside the import names the row, the SKU and
    // its holder (not the database's unique violation).
    let held = first_products(&c, 2).await;
    let [(p1, sku1), (p2, sku2)] = [held[0].clone(), held[1].clone()];
    let taken = write_file(
        &dir,
        "taken.jsonl",
        &[
            product_line("N1", "TB-N1", 1999.into()),
            product_line("N2", &sku1, 2999.into()),
        ],
    );
    let err = refused(&mut c, &taken).await;
    assert_eq!(
        err,
        format!(
            "taken.jsonl:2: field `sku`: SKU `{sku1}` is held by product `{p1}`, which is not in \
             this import"
        )
    );
    assert_eq!(catalog_digest(&c).await, before);

    // A product that keeps its SKU in the import keeps it from another.
    let kept = write_file(
        &dir,
        "kept.jsonl",
        &[
            product_line(&p1, &sku1, 1999.into()),
            product_line(&p2, &sku1, 2999.into()),
        ],
    );
    let err = refused(&mut c, &kept).await;
    assert!(
        err.starts_with("kept.jsonl:2: field `sku`: duplicate value"),
        "{err}"
    );
    assert_eq!(catalog_digest(&c).await, before);

    // SKUs that change hands within the import pass in any order of the
    // rows: two products swapping theirs, then a SKU given up by one
    // product (listed after the one taking it) and taken by the other.
    let ids = vec![p1.clone(), p2.clone()];
    let swap = write_file(
        &dir,
        "swap.jsonl",
        &[
            product_line(&p1, &sku2, 1999.into()),
            product_line(&p2, &sku1, 2999.into()),
        ],
    );
    import::import(&mut c, Some(&swap), None, &mut |_, _, _| {})
        .await
        .unwrap();
    assert_eq!(skus_of(&c, &ids).await, [sku2.clone(), sku1.clone()]);
    let moved = write_file(
        &dir,
        "moved.jsonl",
        &[
            product_line(&p2, &sku2, 2999.into()),
            product_line(&p1, "TB-FREED", 1999.into()),
        ],
    );
    import::import(&mut c, Some(&moved), None, &mut |_, _, _| {})
        .await
        .unwrap();
    assert_eq!(
        skus_of(&c, &ids).await,
        ["TB-FREED".to_string(), sku2.clone()]
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// What an import of `path` that must be refused says.
#[tokio::test]
async fn a_replacing_import_removes_what_its_file_does_not_name_and_recounts_the_terms() {
    let db = TestDb::with_sample("import_replace").await;
    let mut c = db.owner().await;
    let dir = std::env::temp_dir().join(format!("mosaic-import-replace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let first = first_products(&c, 4).await;
    let before: i64 = c
        .query_one("SELECT count(*) FROM catalog.products", &[])
        .await
        .unwrap()
        .get(0);
    let kept_ids: Vec<String> = first[..3].iter().map(|(id, _)| id.clone()).collect();
    let kept_evidence: i64 = c
        .query_one(
            "SELECT count(*) FROM catalog.evidence WHERE product_id = ANY ($1)",
            &[&kept_ids],
        )
        .await
        .unwrap()
        .get(0);
    assert!(kept_evidence > 0, "the kept products have evidence");

    // A file of three of the catalog's products and a new one, which takes
    // the SKU of a product the file does not name.
    let (gone, gone_sku) = &first[3];
    let mut lines: Vec<String> = first[..3]
        .iter()
        .map(|(id, sku)| product_line(id, sku, serde_json::json!(2599)))
        .collect();
    lines.push(product_line("NEW-1", gone_sku, serde_json::json!(1999)));
    let file = write_file(&dir, "whole.jsonl", &lines);
    // Without --replace the SKU is still held: nothing changes.
    let err = refused(&mut c, &file).await;
    assert!(err.contains(&format!("held by product `{gone}`")), "{err}");

    let report = import::import_with(
        &mut c,
        Some(&file),
        None,
        import::ImportOptions { replace: true },
        &mut |_, _, _| {},
    )
    .await
    .unwrap();
    assert_eq!(report.removed as i64, before - 3);
    let mut want = kept_ids.clone();
    want.push("NEW-1".into());
    want.sort();
    let ids = texts(
        &c,
        "SELECT product_id FROM catalog.products ORDER BY 1",
        &[],
    )
    .await;
    assert_eq!(ids, want);
    let projected = texts(
        &c,
        "SELECT product_id FROM search.product_projection ORDER BY 1",
        &[],
    )
    .await;
    assert_eq!(projected, want);
    // The removed products' evidence went with them; the kept products' stayed.
    let evidence: i64 = c
        .query_one("SELECT count(*) FROM catalog.evidence", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(evidence, kept_evidence);
    // The term statistics are those of the four products left.
    assert_eq!(terms_against_a_recount(&c).await, Vec::<String>::new());
    assert_eq!(domain_count(&c).await, 1);

    // A search finds only what is left.
    let ctx = mosaic_integration_tests::ctx(&db, mosaic::RetrievalProfile::default());
    let found = mosaic::search::search(
        &ctx,
        &mosaic::Principal::anonymous(),
        mosaic::search::SearchRequest::from_json(
            &serde_json::json!({"query": "kettle", "limit": 50}),
            mosaic::search::Shape::Nested,
            &ctx.profile,
        )
        .unwrap(),
    )
    .await
    .unwrap();
    let served: Vec<String> = found.results.iter().map(|r| r.product_id.clone()).collect();
    assert!(
        !served.is_empty() && served.iter().all(|id| want.contains(id)),
        "{served:?}"
    );

    // A replacing import needs products, and a file that holds some.
    let empty = write_file(&dir, "empty.jsonl", &[]);
    for path in [Some(empty.as_path()), None] {
        let err = import::import_with(
            &mut c,
            path,
            None,
            import::ImportOptions { replace: true },
            &mut |_, _, _| {},
        )
        .await
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("empty the catalog") || err.contains("needs a products file"),
            "{err}"
        );
    }
    assert_eq!(
        texts(
            &c,
            "SELECT product_id FROM catalog.products ORDER BY 1",
            &[]
        )
        .await,
        want
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// The ids and SKUs of the catalog's first `n` products by id.
async fn first_products(c: &Client, n: i64) -> Vec<(String, String)> {
    c.query(
        "SELECT product_id, sku FROM catalog.products ORDER BY product_id LIMIT $1",
        &[&n],
    )
    .await
    .unwrap()
    .iter()
    .map(|r| (r.get(0), r.get(1)))
    .collect()
}

async fn refused(c: &mut Client, path: &std::path::Path) -> String {
    import::import(c, Some(path), None, &mut |_, _, _| {})
        .await
        .unwrap_err()
        .to_string()
}

/// The SKUs of `ids`, in the order of their product ids.
async fn skus_of(c: &Client, ids: &[String]) -> Vec<String> {
    c.query(
        "SELECT sku FROM catalog.products WHERE product_id = ANY ($1) ORDER BY product_id",
        &[&ids],
    )
    .await
    .unwrap()
    .iter()
    .map(|r| r.get(0))
    .collect()
}

/// Distinct lowercase words, all of three letters, then of four, ...:
/// joined in hyphenated pairs (`aaa-aab aac-aad ...`), the costliest text
/// for a full-text document found (each pair and both its words are
/// lexemes: over 3 bytes of document a byte), padded with spaces to exactly
/// `bytes` bytes.
fn costly_text(bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 16);
    let mut n = 0u64;
    let mut word = || {
        let (mut len, mut first) = (3u32, 0u64);
        while n - first >= 26u64.pow(len) {
            first += 26u64.pow(len);
            len += 1;
        }
        let mut k = n - first;
        n += 1;
        let mut w = vec![b'a'; len as usize];
        for at in (0..len as usize).rev() {
            w[at] = b'a' + (k % 26) as u8;
            k /= 26;
        }
        String::from_utf8(w).unwrap()
    };
    while text.len() < bytes {
        let pair = format!("{}-{} ", word(), word());
        if text.len() + pair.len() > bytes {
            break;
        }
        text.push_str(&pair);
    }
    while text.len() < bytes {
        text.push(' ');
    }
    text
}

/// A product whose full-text document passes PostgreSQL's limit on a
/// tsvector (1,048,575 bytes of lexemes and positions; the projection's
/// refresh fails on it) is refused by its line and the field that holds
/// most of its text, whatever field that is, and nothing is written. A
/// longer text whose document fits imports, and so does one at
/// `import::DOCUMENT_TEXT_MAX_BYTES` (below which no text can pass the
/// limit) of the costliest text found, through the real projection. The
/// bytes that bound counts are at least those the projection reads.
#[tokio::test]
async fn the_importer_names_a_product_whose_document_passes_the_full_text_limit() {
    let db = TestDb::with_sample("import_text").await;
    let mut c = db.owner().await;
    let before = catalog_digest(&c).await;
    let dir = std::env::temp_dir().join(format!("mosaic-import-text-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let max = import::DOCUMENT_TEXT_MAX_BYTES;
    let with = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut v: serde_json::Value =
            serde_json::from_str(&product_line("BIG", "TB-BIG", 999.into())).unwrap();
        f(&mut v);
        v.to_string()
    };
    // The bytes of the product's other texts.
    let bare = write_file(&dir, "bare.jsonl", &[with(&|_| {})]);
    let rest = import::document_text(&import::read_products(&bare).unwrap()[0].1).total;
    assert!(rest > 0 && rest < 200, "{rest}");

    // Texts whose document PostgreSQL refuses ("string is too long for
    // tsvector"): the import names the product's line and the field that
    // holds most of its text.
    let pairs_of_aliases: Vec<String> = costly_text(400_000)
        .split_whitespace()
        .collect::<Vec<_>>()
        .chunks(8)
        .map(|c| c.join(" "))
        .collect();
    for (field, line) in [
        (
            "description",
            with(&|v| v["description"] = costly_text(400_000).into()),
        ),
        (
            "aliases",
            with(&|v| v["aliases"] = pairs_of_aliases.clone().into()),
        ),
        (
            "attributes",
            with(&|v| v["attributes"]["notes"] = costly_text(400_000).into()),
        ),
    ] {
        let path = write_file(
            &dir,
            "long.jsonl",
            &[product_line("T8", "TB-8", 999.into()), line],
        );
        let err = refused(&mut c, &path).await;
        assert!(
            err.starts_with(&format!("long.jsonl:2: field `{field}`: is too long"))
                && err.contains("string is too long for tsvector"),
            "{field}: {err}"
        );
        assert_eq!(catalog_digest(&c).await, before, "{field}");
    }

    // Past the bound but of ordinary prose (its document is a fraction of
    // the limit): imported.
    let prose =
        "A quiet kettle with a glass body that boils a litre in three minutes. ".repeat(5_000);
    assert!(prose.len() > 2 * max);
    let long_prose = write_file(
        &dir,
        "prose.jsonl",
        &[with(&|v| {
            v["product_id"] = "PROSE".into();
            v["sku"] = "TB-PROSE".into();
            v["description"] = prose.clone().into();
        })],
    );
    import::import(&mut c, Some(&long_prose), None, &mut |_, _, _| {})
        .await
        .unwrap();

    // The bytes counted are at least those the projection reads, numbers
    // and lists among the attributes included.
    let varied = write_file(
        &dir,
        "varied.jsonl",
        &[with(&|v| {
            v["product_id"] = "VARIED".into();
            v["sku"] = "TB-VARIED".into();
            v["description"] = "Brews fast. Glass body; 1.7 l.".into();
            v["aliases"] = serde_json::json!(["tb kettle", "glass kettle", ""]);
            v["attributes"] = serde_json::json!({
                "capacity_ml": 1700, "watts": 2.2e3, "tiny": 1.5e-7, "huge": 1e300,
                "body": "glass", "colors": ["red", "matte black", 3, 2.5e10, true, false],
                "keep_warm": true, "cordless": false, "empty": []
            });
        })],
    );
    let counted = import::document_text(&import::read_products(&varied).unwrap()[0].1).total;
    import::import(&mut c, Some(&varied), None, &mut |_, _, _| {})
        .await
        .unwrap();
    let read: i32 = c
        .query_one(
            "SELECT octet_length(concat_ws(' ', p.brand, p.model, p.sku,
                                           array_to_string(p.aliases, ' ')))
                    + octet_length(p.title)
                    + octet_length(concat_ws(' ', replace(p.category_key, '_', ' '),
                          (SELECT coalesce(string_agg(
                                      CASE jsonb_typeof(value)
                                          WHEN 'boolean' THEN CASE WHEN value = 'true'
                                                                   THEN replace(key, '_', ' ') END
                                          ELSE search.attribute_text(value) END,
                                      ' ' ORDER BY key), '')
                           FROM jsonb_each(p.attributes))))
                    + octet_length(p.description)
             FROM catalog.products p WHERE product_id = 'VARIED'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    let read = read as usize;
    assert!(
        read > 300 && counted >= read && counted <= read + 40,
        "{counted} {read}"
    );

    // At the bound, of the costliest text found: accepted, and its document
    // holds every word.
    let description = costly_text(max - rest);
    let at = write_file(
        &dir,
        "at.jsonl",
        &[with(&|v| v["description"] = description.clone().into())],
    );
    assert_eq!(
        import::document_text(&import::read_products(&at).unwrap()[0].1).total,
        max
    );
    import::import(&mut c, Some(&at), None, &mut |_, _, _| {})
        .await
        .unwrap();
    let row = c
        .query_one(
            "SELECT length(document), pg_column_size(document) - 8 - 4 * length(document)
             FROM search.product_projection WHERE product_id = 'BIG'",
            &[],
        )
        .await
        .unwrap();
    let (lexemes, bytes): (i32, i32) = (row.get(0), row.get(1));
    assert!(lexemes > 40_000 && bytes > 450_000, "{lexemes} {bytes}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Whether `product`'s projection row holds a vector of its current text.
async fn has_vector(c: &tokio_postgres::Client, product: &str) -> bool {
    c.query_one(
        "SELECT embedding IS NOT NULL AND embedded_text_hash = embedding_text_hash
           FROM search.product_projection WHERE product_id = $1",
        &[&product],
    )
    .await
    .unwrap()
    .get(0)
}

/// Whether `product`'s projection row holds no vector, no model and no
/// embedded text hash.
async fn vector_cleared(c: &tokio_postgres::Client, product: &str) -> bool {
    c.query_one(
        "SELECT embedding IS NULL AND embedding_model IS NULL AND embedded_text_hash IS NULL
           FROM search.product_projection WHERE product_id = $1",
        &[&product],
    )
    .await
    .unwrap()
    .get(0)
}

/// A new database, migrated, holding the first `products` of the sample
/// catalog (seed 9), and an owner connection to it.
async fn migrated_sample(name: &str, products: u64) -> (TestDb, tokio_postgres::Client) {
    let db = TestDb::empty(name).await;
    let mut c = db.owner().await;
    db::migrate(&mut c, &MigrateOptions::default())
        .await
        .unwrap();
    generator::load_sample(&mut c, Generator::new(9, products), &mut |_, _, _| {})
        .await
        .unwrap();
    (db, c)
}

#[tokio::test]
async fn migration_0029_clears_vectors_of_a_text_the_row_no_longer_holds() {
    let (_db, mut c) = migrated_sample("stale_vectors", 20).await;
    let e = HashingEmbedder::new(384);
    mosaic::embed_job::embed_pending(&c, &e, 64, 1, &mut |_, _, _| {})
        .await
        .unwrap();
    // A row as an import before 0028 left it: a new text, the old text's
    // vector, model and hash.
    c.batch_execute(
        "UPDATE search.product_projection
            SET embedding_text = embedding_text || ' (renamed)',
                embedding_text_hash = md5(embedding_text || ' (renamed)')
          WHERE product_id = 'P0000003'",
    )
    .await
    .unwrap();
    assert!(!vector_cleared(&c, "P0000003").await);
    // A database that has not run 0029 yet runs it, and only it.
    c.execute("DELETE FROM mosaic_meta.migrations WHERE version = 29", &[])
        .await
        .unwrap();
    let report = db::migrate(&mut c, &MigrateOptions::default())
        .await
        .unwrap();
    assert_eq!(report.applied, ["0029_stale_vectors_cleared.sql"]);
    assert!(vector_cleared(&c, "P0000003").await);
    // Every other row keeps the vector of the text it holds.
    let kept: i64 = c
        .query_one(
            "SELECT count(*) FROM search.product_projection
              WHERE embedding IS NOT NULL AND embedded_text_hash = embedding_text_hash",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(kept, 19);
    let again = mosaic::embed_job::embed_pending(&c, &e, 64, 1, &mut |_, _, _| {})
        .await
        .unwrap();
    assert_eq!(again.embedded, 1);
    assert!(has_vector(&c, "P0000003").await);
}

/// An embedder that changes one product's text (as an import would) the
/// first time it is called, between the embed job's read of a batch and its
/// write.
struct RenamingEmbedder {
    inner: HashingEmbedder,
    owner: Client,
    product: &'static str,
    renamed: std::sync::atomic::AtomicBool,
}

#[async_trait::async_trait]
impl mosaic::embed::Embedder for RenamingEmbedder {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }

    fn dimension(&self) -> usize {
        self.inner.dimension()
    }

    async fn embed(
        &self,
        texts: &[String],
        kind: mosaic::embed::EmbedKind,
    ) -> Result<Vec<Vec<f32>>, mosaic::embed::EmbedError> {
        if !self.renamed.swap(true, std::sync::atomic::Ordering::SeqCst) {
            self.owner
                .batch_execute(&format!(
                    "UPDATE catalog.products SET title = title || ' (renamed)'
                      WHERE product_id = '{0}';
                     SELECT search.refresh_projection(ARRAY['{0}'])",
                    self.product
                ))
                .await
                .unwrap();
        }
        self.inner.embed(texts, kind).await
    }
}

#[tokio::test]
async fn a_text_changed_while_it_is_embedded_does_not_get_the_old_texts_vector() {
    let (db, c) = migrated_sample("embed_race", 20).await;
    let e = RenamingEmbedder {
        inner: HashingEmbedder::new(384),
        owner: db.owner().await,
        product: "P0000005",
        renamed: false.into(),
    };
    // One batch: P0000005 is read with its old text, renamed while that
    // text is embedded, and its vector is not written.
    let first = mosaic::embed_job::embed_pending(&c, &e, 64, 1, &mut |_, _, _| {})
        .await
        .unwrap();
    assert_eq!((first.embedded, first.skipped), (19, 1));
    assert!(first
        .skipped_note()
        .unwrap()
        .contains("run `mosaic embed` again"));
    assert!(vector_cleared(&c, "P0000005").await);
    // The next run gives it a vector of its new text.
    let second = mosaic::embed_job::embed_pending(&c, &e, 64, 1, &mut |_, _, _| {})
        .await
        .unwrap();
    assert_eq!((second.embedded, second.skipped), (1, 0));
    assert!(has_vector(&c, "P0000005").await);
    let text: String = c
        .query_one(
            "SELECT embedding_text FROM search.product_projection WHERE product_id = 'P0000005'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(text.contains("(renamed)"), "{text}");
}

#[tokio::test]
async fn a_load_waits_for_an_import_instead_of_deadlocking_with_it() {
    let (db, mut c) = migrated_sample("load_import", 20).await;
    // An import's first steps: the projection's lock, then a read of the
    // products (`import::import`).
    let importer = db.owner().await;
    importer
        .batch_execute("BEGIN; LOCK TABLE search.product_projection IN SHARE ROW EXCLUSIVE MODE")
        .await
        .unwrap();
    let mut quiet = |_: &str, _: u64, _: u64| {};
    let load = generator::load_sample(&mut c, Generator::new(9, 30), &mut quiet);
    let import = async {
        // Once the load waits for the projection, the import still reads
        // the products: the load holds no lock on them yet.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let waiting: i64 = importer
                .query_one(
                    "SELECT count(*) FROM pg_locks
                      WHERE database = (SELECT oid FROM pg_database
                                         WHERE datname = current_database())
                        AND relation = 'search.product_projection'::regclass AND NOT granted",
                    &[],
                )
                .await
                .unwrap()
                .get(0);
            if waiting > 0 {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the load never waited"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let products: i64 = importer
            .query_one("SELECT count(*) FROM catalog.products", &[])
            .await
            .unwrap()
            .get(0);
        importer.batch_execute("COMMIT").await.unwrap();
        products
    };
    let (loaded, products) = tokio::join!(load, import);
    assert_eq!(products, 20);
    assert_eq!(loaded.unwrap().products, 30);
}

#[tokio::test]
async fn embedding_twice_embeds_nothing_the_second_time() {
    let (_db, c) = migrated_sample("embed", 300).await;
    let e = HashingEmbedder::new(384);
    let first = mosaic::embed_job::embed_pending(&c, &e, 64, 2, &mut |_, _, _| {})
        .await
        .unwrap();
    assert_eq!(first.embedded, 300);
    // The vectors live in the projection rows, not in TOAST (migration 0008):
    // the exact route reads them without a TOAST lookup per row.
    let toast: i64 = c
        .query_one(
            "SELECT pg_relation_size(reltoastrelid) FROM pg_class
             WHERE oid = 'search.product_projection'::regclass",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(toast, 0, "projection rows were moved to TOAST");
    let second = mosaic::embed_job::embed_pending(&c, &e, 64, 2, &mut |_, _, _| {})
        .await
        .unwrap();
    assert_eq!(second.embedded, 0);

    // A changed product text is picked up, and only that row.
    c.batch_execute(
        "UPDATE catalog.products SET title = title || ' (2026 edition)' WHERE product_id = 'P0000007';
         SELECT search.refresh_projection(ARRAY['P0000007'])",
    )
    .await
    .unwrap();
    let third = mosaic::embed_job::embed_pending(&c, &e, 64, 2, &mut |_, _, _| {})
        .await
        .unwrap();
    assert_eq!(third.embedded, 1);

    // A model of another dimension is refused before anything is written.
    let wrong = HashingEmbedder::new(128);
    let err = mosaic::embed_job::embed_pending(&c, &wrong, 64, 2, &mut |_, _, _| {})
        .await
        .unwrap_err();
    assert!(err.to_string().contains("384"), "{err}");
}

/// The foreign evaluation catalog, as its publisher ships it.
fn foreign_fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../eval/foreign")
        .join(name)
}

#[tokio::test]
async fn a_real_feed_imports_as_it_is_and_list_attributes_filter_in_every_arm() {
    use mosaic::search::arms::{self, Eligibility};
    use mosaic::search::Filters;
    use mosaic::RetrievalProfile;

    let db = TestDb::empty("feed").await;
    let mut c = db.owner().await;
    db::migrate(&mut c, &MigrateOptions::default())
        .await
        .unwrap();
    // Gzip-compressed JSON Lines with list-valued attributes and dates as
    // evidence revisions, unchanged.
    let report = import::import(
        &mut c,
        Some(&foreign_fixture("products.jsonl.gz")),
        Some(&foreign_fixture("evidence.jsonl.gz")),
        &mut |_, _, _| {},
    )
    .await
    .unwrap();
    assert_eq!((report.products, report.evidence), (5_000, 20_000));
    let revision: String = c
        .query_one(
            "SELECT source_revision FROM catalog.evidence WHERE evidence_id = 'spec-1'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(revision, "2026-07-15");
    let embedder = HashingEmbedder::new(384);
    mosaic::embed_job::embed_pending(&c, &embedder, 500, 1, &mut |_, _, _| {})
        .await
        .unwrap();
    c.batch_execute("ANALYZE").await.unwrap();
    let stats: i64 = c
        .query_one("SELECT products FROM search.catalog_stats", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(stats, 5_000, "the lexeme statistics count the catalog");
    assert_eq!(terms_against_a_recount(&c).await, Vec::<String>::new());

    // Which products hold "3.5mm" in their connectivity list, decided in Rust.
    let ctx = mosaic_integration_tests::ctx(&db, RetrievalProfile::default());
    let rows = mosaic_devtools::eval::load_catalog(&ctx).await.unwrap();
    let want = serde_json::json!("3.5mm");
    let holds = |id: &String| {
        rows[id]
            .attributes
            .get("connectivity")
            .is_some_and(|v| mosaic::catalog::attribute::matches(v, &want))
    };
    let listed = rows.keys().filter(|id| holds(id)).count();
    assert!(listed > 100, "{listed} products list 3.5mm");

    let filters = Filters {
        attributes: Some(serde_json::Map::from_iter([(
            "connectivity".to_string(),
            want.clone(),
        )])),
        ..Filters::default()
    };
    let profile = RetrievalProfile::default();
    let elig = Eligibility::new(&filters);
    let mut rt = db.runtime().await;
    let tx = rt.transaction().await.unwrap();
    arms::apply_settings(&tx, &profile).await.unwrap();
    let q = "wired headphones";
    let lexical = arms::lexical(&tx, &elig, q, &profile).await.unwrap();
    let trigram = arms::trigram(&tx, &elig, "headphones", (false, None), &profile)
        .await
        .unwrap();
    let vector = pgvector::Vector::from(embedder.embed_one(q));
    let semantic = arms::semantic(&tx, &elig, q, &vector, &profile)
        .await
        .unwrap();
    let count = arms::metadata_only(&tx, &elig, 10_000).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(
        count.len(),
        listed,
        "the filter admits exactly the lists holding the value"
    );
    for (name, arm) in [
        ("lexical", &lexical),
        ("trigram", &trigram),
        ("semantic", &semantic),
    ] {
        assert!(!arm.candidates.is_empty(), "{name} found nothing");
        for (id, _) in &arm.candidates {
            assert!(
                holds(id),
                "{name} admitted {id}, whose connectivity lacks 3.5mm"
            );
        }
    }
    // A scalar value still matches as before, and a value no list holds
    // matches nothing.
    let scalar = Filters {
        attributes: Some(serde_json::Map::from_iter([(
            "form_factor".to_string(),
            serde_json::json!("over-ear"),
        )])),
        ..Filters::default()
    };
    let none = Filters {
        attributes: Some(serde_json::Map::from_iter([(
            "connectivity".to_string(),
            serde_json::json!("Bluetooth"),
        )])),
        ..Filters::default()
    };
    let tx = rt.transaction().await.unwrap();
    let over_ear = arms::metadata_only(&tx, &Eligibility::new(&scalar), 10_000)
        .await
        .unwrap();
    let bluetooth = arms::metadata_only(&tx, &Eligibility::new(&none), 10_000)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let expect = |f: &Filters| {
        let m = match serde_json::to_value(f).unwrap() {
            serde_json::Value::Object(m) => m,
            _ => unreachable!(),
        };
        rows.values()
            .filter(|r| mosaic_devtools::eval::satisfies(r, &m).unwrap())
            .count()
    };
    assert_eq!(over_ear.len(), expect(&scalar));
    assert!(!over_ear.is_empty());
    assert_eq!(bluetooth.len(), expect(&none));
}

/// An import may not leave the catalog with more than `MAX_DOMAINS`
/// domains (each its own vector graph): the first row that brings one too
/// many is named, and nothing is written. Up to the bound it imports, and
/// rows within the catalog's domains always do.
#[tokio::test]
async fn an_import_that_would_pass_the_domains_bound_is_refused() {
    let db = TestDb::with_sample("import_domains").await;
    let mut c = db.owner().await;
    let held = domain_count(&c).await;
    let room = import::MAX_DOMAINS - held as usize;
    let dir = std::env::temp_dir().join(format!("mosaic-import-domains-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = |name: &str, domains: usize| {
        let mut text = String::from(
            "product_id,sku,model,brand,title,domain,category_key,price_cents,availability\n",
        );
        // A row in a domain the catalog holds, then one a new domain.
        text.push_str("D0,DOM-0,M-0,Dombrand,Dombrand Lamp,office,desk_lamps,2599,in_stock\n");
        for i in 1..=domains {
            text.push_str(&format!(
                "D{i},DOM-{i},M-{i},Dombrand,Dombrand Lamp {i},vertical_{i:03},lamps,2599,in_stock\n"
            ));
        }
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    };

    let before = catalog_digest(&c).await;
    let over = file("over.csv", room + 1);
    let err = refused(&mut c, &over).await;
    assert!(
        err.starts_with(&format!(
            "over.csv:3: field `domain`: the catalog would hold {} domains, at most {} are \
             accepted (new here: `vertical_001`, `vertical_002`",
            import::MAX_DOMAINS + 1,
            import::MAX_DOMAINS
        )),
        "{err}"
    );
    assert!(err.contains("`category_key`"), "{err}");
    assert_eq!(catalog_digest(&c).await, before);

    // Up to the bound the import goes through, and so does a later one
    // within the catalog's domains.
    let at = file("at.csv", room);
    let report = import::import(&mut c, Some(&at), None, &mut |_, _, _| {})
        .await
        .unwrap();
    assert_eq!(report.products, room as u64 + 1);
    let domains = domain_count(&c).await;
    assert_eq!(domains as usize, import::MAX_DOMAINS);
    let again = file("again.csv", room);
    import::import(&mut c, Some(&again), None, &mut |_, _, _| {})
        .await
        .unwrap();
    // At the bound, an import that moves every product of a domain to a new
    // one leaves as many domains as before: it goes through.
    let renamed = dir.join("renamed.csv");
    std::fs::write(
        &renamed,
        "product_id,sku,model,brand,title,domain,category_key,price_cents,availability\n\
         D1,DOM-1,M-1,Dombrand,Dombrand Lamp 1,vertical_renamed,lamps,2599,in_stock\n",
    )
    .unwrap();
    import::import(&mut c, Some(&renamed), None, &mut |_, _, _| {})
        .await
        .unwrap();
    let domains = domain_count(&c).await;
    assert_eq!(domains as usize, import::MAX_DOMAINS);
    std::fs::remove_dir_all(&dir).ok();
}
