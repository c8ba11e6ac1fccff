//! `mosaic bench`: latency per stage, the service against its own SQL
//! ("floor"), semantic completeness and recall, filters-only searches and
//! HTTP throughput, on
//! dedicated databases holding the sample catalog: `mosaic_bench_<size>`
//! embedded with the hashing embedder (not a language model, fast enough for
//! any size), or `mosaic_bench_<size>_minilm` embedded with the local model
//! (`--embedder local`, about 30 products/s on two cores).

use anyhow::{Context, Result};
use clap::Args;
use mosaic::embed::Embedder;
use mosaic::search::arms::{ArmMode, Eligibility, Verdict};
use mosaic::search::fusion::Arm;
use mosaic::search::{SearchRequest, Shape};
use mosaic::{db, Ctx, Principal, RetrievalProfile};
use mosaic_devtools::bench::{self, BenchQuery, ShapeBuilder, Summary, SHAPES};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// Stages reported from the service's `timings_ms`.
const STAGES: [&str; 11] = [
    "understand",
    "embed",
    "lexical",
    "trigram",
    "semantic",
    "arms",
    "fusion",
    "hydrate",
    "rerank",
    "receipt",
    "total",
];
/// Stages broken down by query kind (model number, typo, ...).
const KIND_STAGES: [&str; 4] = ["lexical", "trigram", "semantic", "total"];
const DIM: usize = 384;
const CATALOG_SEED: u64 = 42;
const QUERY_SEED: u64 = 7;
/// How long each warm-up search may take (statement timeout and request
/// deadline): a cold cache at a million products needs seconds, not the
/// profile's 5.
const WARM_UP_TIMEOUT_MS: u64 = 120_000;

#[derive(Args, Clone, Debug)]
pub struct BenchArgs {
    /// Catalog sizes (1000000 only when asked for explicitly).
    #[arg(long, value_delimiter = ',', default_values_t = [10_000u64, 100_000])]
    sizes: Vec<u64>,
    /// Queries per filter shape in the warm run.
    #[arg(long, default_value_t = 200)]
    queries: usize,
    /// Queries per shape that also get an exact-scan ground truth (recall).
    #[arg(long, default_value_t = 100)]
    recall_queries: usize,
    /// HTTP requests per concurrency level.
    #[arg(long, default_value_t = 300)]
    requests: usize,
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 8, 32])]
    concurrency: Vec<usize>,
    /// Skip the HTTP throughput phase.
    #[arg(long)]
    no_throughput: bool,
    /// Also run the load check: searches under concurrency with random
    /// grants, filters-only searches mixed in and database backends
    /// terminated at random; every 200 is checked against its receipt.
    #[arg(long)]
    load: bool,
    /// Load check: searches.
    #[arg(long, default_value_t = 2000)]
    load_requests: usize,
    /// Load check: client threads.
    #[arg(long, default_value_t = 64)]
    load_concurrency: usize,
    /// Load check: a runtime backend is terminated this often.
    #[arg(long, default_value_t = 250)]
    kill_every_ms: u64,
    /// Also sweep profile values with direct arm calls: `semantic`
    /// (hnsw_ef_search, semantic_overfetch, semantic_domain_walk_ef,
    /// semantic_exact_threshold), `walks` (the walks together: ef_search /
    /// domain walk ef_search / domain walk tuples / overfetch), `far`
    /// (semantic_far_domain_overfetch), `family`
    /// (semantic_identifier_family, the brand off), `brand`
    /// (semantic_identifier_brand), `lexical`
    /// (lexical_scan_budget), `rank` (lexical_rank_budget against ranking
    /// every match, interleaved query by query), `trigram`
    /// (trigram_scan_budget against an unbounded cascade), `perfect`
    /// (trigram_perfect_first off and on, interleaved query by query);
    /// several with commas; alone, all nine.
    #[arg(long, value_delimiter = ',', num_args = 0.., value_parser = ["semantic", "walks", "far", "family", "brand", "lexical", "rank", "trigram", "perfect"])]
    sweep: Option<Vec<String>>,
    /// Embeddings of the catalog and the queries: `hashing` (feature
    /// hashing, not a language model) or `local` (all-MiniLM-L6-v2; its
    /// query embedding runs inside the search and shows in `embed`).
    #[arg(long, default_value = "hashing", value_parser = ["hashing", "local"])]
    embedder: String,
    /// The rerank stage: `none` (the setting the targets are stated in) or
    /// `local` (the local reranker, as `mosaic serve` runs by default; its
    /// time shows in `rerank`, and hydration then also reads the pool's
    /// lexical documents and the query's term statistics).
    #[arg(long, default_value = "none", value_parser = ["none", "local"])]
    reranker: String,
    /// Write the raw numbers as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Put this much delay (milliseconds, each way) between the service and
    /// the database, through a local relay: the service's and the floor's
    /// connections then wait for every round trip as a deployed function
    /// does (about 0.5 each way, a millisecond per round trip, for Lambda to
    /// Aurora through RDS Proxy). Set-up statements go direct. 0: direct.
    #[arg(long, default_value_t = 0.0)]
    network_delay_ms: f64,
    /// Owner-role URL of any database of the cluster (the bench databases
    /// are created beside it).
    #[arg(long, env = "MOSAIC_DATABASE_URL", default_value_t = db::local_owner_url(), hide_env_values = true)]
    database_url: String,
    #[arg(long = "runtime-database-url", env = "MOSAIC_RUNTIME_DATABASE_URL",
          default_value_t = db::local_runtime_url(), hide_env_values = true)]
    runtime_url: String,
}

fn with_db(url: &str, name: &str) -> Result<String> {
    let (base, rest) = url
        .split_once('?')
        .map_or((url, None), |(b, r)| (b, Some(r)));
    let (server, _) = base
        .rsplit_once('/')
        .context("database URL without a database name")?;
    Ok(match rest {
        Some(r) => format!("{server}/{name}?{r}"),
        None => format!("{server}/{name}"),
    })
}

pub async fn run(args: BenchArgs) -> Result<()> {
    let profile = RetrievalProfile::from_env().map_err(anyhow::Error::msg)?;
    let embedder = crate::embedder::EmbedderArgs {
        kind: Some(args.embedder.clone()),
        embedding_dim: Some(DIM),
    }
    .build()?;
    let mut out = Vec::new();
    for &size in &args.sizes {
        out.push(bench_size(&args, size, &profile, embedder.clone()).await?);
    }
    if let Some(path) = &args.json {
        let v = json!({ "profile": profile.snapshot(), "runs": out });
        std::fs::write(path, serde_json::to_string_pretty(&v)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

/// What the bench says about its embedder in headings and JSON.
fn describe(embedder: &dyn Embedder) -> String {
    match embedder.model_id().starts_with("hashing") {
        true => format!(
            "{} (feature hashing, NOT a language model)",
            embedder.model_id()
        ),
        false => format!("{} (language model)", embedder.model_id()),
    }
}

/// Creates or reuses the size's bench database; returns the owner and
/// runtime URLs.
async fn prepare(
    args: &BenchArgs,
    size: u64,
    embedder: &dyn Embedder,
) -> Result<(String, String, Value)> {
    let name = match args.embedder.as_str() {
        "local" => format!("mosaic_bench_{size}_minilm"),
        _ => format!("mosaic_bench_{size}"),
    };
    let admin = db::connect_plain(&args.database_url)
        .await
        .context("cannot connect as the owner role; start the database (`mosaic db start`)")?;
    let exists = admin
        .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&name])
        .await?
        .is_some();
    if !exists {
        eprintln!("creating database {name}");
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await?;
    }
    let owner_url = with_db(&args.database_url, &name)?;
    let runtime_url = with_db(&args.runtime_url, &name)?;
    let mut client = db::connect_plain(&owner_url).await?;
    for w in db::migrate(&mut client, &db::MigrateOptions::default())
        .await?
        .warnings
    {
        eprintln!("migrations: warning: {w}");
    }
    let model = embedder.model_id().to_string();
    let products: i64 = client
        .query_one("SELECT count(*) FROM catalog.products", &[])
        .await?
        .get(0);
    let mut prep = json!({"database": name, "reused": true});
    let mut dirty = false;
    if products != size as i64 {
        eprintln!("loading {size} sample products (seed {CATALOG_SEED}) into {name}");
        let mut progress = crate::load_cmd::progress_line;
        let r = mosaic_devtools::generator::load_sample(
            &mut client,
            mosaic_devtools::generator::Generator::new(CATALOG_SEED, size),
            &mut progress,
        )
        .await?;
        prep["load_seconds"] = json!(r.seconds);
        dirty = true;
    }
    let embedded: i64 = client
        .query_one(
            "SELECT count(*) FROM search.product_projection WHERE embedding_model = $1",
            &[&model],
        )
        .await?
        .get(0);
    if embedded != size as i64 {
        eprintln!("embedding {name} with {}", describe(embedder));
        let mut last = Instant::now();
        let mut progress = |done: u64, total: i64, secs: f64| {
            if last.elapsed().as_secs() >= 30 {
                let rate = done as f64 / secs.max(1e-9);
                eprintln!("  embedded {done}/{total} ({rate:.0}/s)");
                last = Instant::now();
            }
        };
        let r = if embedded == 0 {
            embed_rebuilding_indexes(&client, embedder, &mut progress, &mut prep).await?
        } else {
            mosaic::embed_job::embed_pending(&client, embedder, 256, 2, &mut progress).await?
        };
        prep["embed_seconds"] = json!(r.seconds);
        dirty = true;
    }
    if dirty {
        let t = Instant::now();
        // One statement per call: VACUUM cannot run in a transaction block.
        for table in ["catalog.products", "search.product_projection"] {
            client
                .batch_execute(&format!("VACUUM ANALYZE {table}"))
                .await?;
        }
        prep["vacuum_seconds"] = json!(t.elapsed().as_secs_f64());
        prep["reused"] = json!(false);
    }
    Ok((owner_url, runtime_url, prep))
}

/// The first embedding of a bench catalog, in one transaction: the
/// projection's secondary indexes (those not backing a constraint) are
/// dropped, every row is embedded, the table is rewritten without the dead
/// row versions the UPDATE left (`CLUSTER` on the primary key), and the
/// indexes are built again from their saved definitions. Building an HNSW
/// graph once is much cheaper than inserting a million vectors into it one
/// by one. A failure rolls everything back, indexes included.
async fn embed_rebuilding_indexes(
    client: &tokio_postgres::Client,
    embedder: &dyn Embedder,
    progress: &mut dyn FnMut(u64, i64, f64),
    prep: &mut Value,
) -> Result<mosaic::embed_job::EmbedReport> {
    client.batch_execute("BEGIN").await?;
    let defs: Vec<(String, String)> = client
        .query(
            "SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid)
             FROM pg_index i
             WHERE i.indrelid = 'search.product_projection'::regclass
               AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)
             ORDER BY 1",
            &[],
        )
        .await?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    for (name, _) in &defs {
        client.batch_execute(&format!("DROP INDEX {name}")).await?;
    }
    eprintln!(
        "  {} secondary indexes of the projection dropped until the vectors are in",
        defs.len()
    );
    let report = mosaic::embed_job::embed_pending(client, embedder, 256, 2, progress).await?;
    let t = Instant::now();
    eprintln!("  rewriting the projection without dead row versions");
    client
        .batch_execute("CLUSTER search.product_projection USING product_projection_pkey")
        .await?;
    prep["cluster_seconds"] = json!(t.elapsed().as_secs_f64());
    // An HNSW graph over a million 384-dimensional vectors needs about 2 GB
    // to be built in memory; beyond maintenance_work_mem it is built far
    // more slowly on disk.
    client
        .batch_execute("SET LOCAL maintenance_work_mem = '4GB'")
        .await?;
    let mut built = Vec::new();
    for (name, def) in &defs {
        let t = Instant::now();
        client.batch_execute(def).await?;
        let secs = t.elapsed().as_secs_f64();
        eprintln!("  built {name} in {secs:.1} s");
        built.push(json!({"index": name, "seconds": secs}));
    }
    client.batch_execute("COMMIT").await?;
    prep["index_builds"] = json!(built);
    Ok(report)
}

#[derive(Default)]
struct ShapeStats {
    stages: BTreeMap<&'static str, Vec<f64>>,
    /// Query kind -> stage -> values, for the stages in [`KIND_STAGES`].
    by_kind: BTreeMap<&'static str, BTreeMap<&'static str, Vec<f64>>>,
    floor: Vec<f64>,
    floor_arm_sum: Vec<f64>,
    routes: BTreeMap<String, usize>,
    semantic_filled: usize,
    semantic_short: usize,
    semantic_returned: Vec<f64>,
    recall: Vec<f64>,
    recall_ties: Vec<f64>,
    /// Every recall query whose recall@10 is below 1: what it missed.
    recall_misses: Vec<Value>,
    /// Every search's total and what it did, for the slowest few.
    searches: Vec<(f64, Value)>,
    recall_by_route: BTreeMap<String, Vec<f64>>,
    /// Query kind -> recall@10 of its recall queries.
    recall_by_kind: BTreeMap<&'static str, Vec<f64>>,
    eligible: Vec<f64>,
    lexical_budget_cut: usize,
    strategies: BTreeMap<String, usize>,
}

/// What a run stopped at: the step, the query and the filter shape, and
/// the settings that bound a search's time, so the one query can be rerun
/// (`mosaic search`) or given more room.
fn failed(step: &str, query: &str, shape: &str) -> String {
    format!(
        "{step} for {query:?} (filter shape {shape}) failed; a statement or request deadline \
         is MOSAIC_STATEMENT_TIMEOUT_MS / MOSAIC_REQUEST_DEADLINE_MS"
    )
}

fn s(v: &[f64]) -> Summary {
    bench::summarize(v)
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        f64::NAN
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::NAN, f64::min)
}

fn body(q: &BenchQuery, f: &mosaic::search::Filters) -> Value {
    json!({"query": q.text, "filters": bench::filters_json(f), "limit": 10,
           "include_diagnostics": true})
}

/// The normalised query text and eligibility of query `q` under `shape`,
/// as the service would build them, for the direct arm calls.
fn direct_input(
    shapes: &ShapeBuilder,
    shape: &str,
    q: &BenchQuery,
    profile: &RetrievalProfile,
) -> Result<(String, Eligibility)> {
    let req =
        SearchRequest::from_json(&body(q, &shapes.filters(shape, q)), Shape::Nested, profile)?;
    let text = req.normalized_query.clone().unwrap_or_default();
    let elig = Eligibility::with_query(&req.filters, Some(&text));
    Ok((text, elig))
}

async fn bench_size(
    args: &BenchArgs,
    size: u64,
    profile: &RetrievalProfile,
    embedder: Arc<dyn Embedder>,
) -> Result<Value> {
    println!(
        "\n=== catalog {size} products, embedder {} ===",
        describe(&*embedder)
    );
    let (owner_url, runtime_url, prep) = prepare(args, size, &*embedder).await?;
    let owner = db::connect_plain(&owner_url).await?;
    let runtime_url = match args.network_delay_ms > 0.0 {
        true => {
            let delay = std::time::Duration::from_secs_f64(args.network_delay_ms / 1000.0);
            let port =
                crate::bench_relay::start(crate::bench_relay::target_of(&runtime_url)?, delay)?;
            println!(
                "service and floor connections through a relay adding {} ms each way",
                args.network_delay_ms
            );
            crate::bench_relay::through(&runtime_url, port)?
        }
        false => runtime_url,
    };
    let mut direct_client = db::connect_plain(&runtime_url).await?;
    let shapes = ShapeBuilder::new(&owner).await?;
    let queries = bench::queries(CATALOG_SEED, size, args.queries, QUERY_SEED);
    let ctx = Ctx::from_url(&runtime_url, 8, profile.clone())
        .map_err(anyhow::Error::msg)?
        .with_embedder(embedder.clone());
    let ctx = match args.reranker.as_str() {
        "local" => ctx.with_reranker(std::sync::Arc::new(
            mosaic::rerank::local::LocalReranker::new(),
        )),
        _ => ctx,
    };
    let principal = Principal("bench".into());

    // Warm-up (not measured): caches, connections, prepared statements. On a
    // cold cache (right after the database started) the first searches read
    // the graphs and text indexes from disk, which at a million products
    // outlasts the profile's statement timeout; the warm-up exists to pay
    // that once, so its searches may take up to WARM_UP_TIMEOUT_MS.
    let warm = Ctx {
        profile: RetrievalProfile {
            statement_timeout_ms: profile.statement_timeout_ms.max(WARM_UP_TIMEOUT_MS),
            request_deadline_ms: profile.request_deadline_ms.max(WARM_UP_TIMEOUT_MS),
            ..profile.clone()
        },
        ..ctx.clone()
    };
    let warm_started = Instant::now();
    let warm_up = &queries[..queries.len().min(30)];
    println!(
        "warm-up: {} queries x {} shapes, not measured (each search may take up to {} s on a cold cache)",
        warm_up.len(),
        SHAPES.len(),
        WARM_UP_TIMEOUT_MS / 1000
    );
    for q in warm_up {
        for shape in SHAPES {
            let b = body(q, &shapes.filters(shape, q));
            let req = SearchRequest::from_json(&b, Shape::Nested, profile)?;
            mosaic::search::search(&warm, &principal, req)
                .await
                .with_context(|| failed("warm-up search", &q.text, shape))?;
        }
    }
    println!(
        "warm-up done in {:.1} s",
        warm_started.elapsed().as_secs_f64()
    );

    let mut stats: BTreeMap<&'static str, ShapeStats> = BTreeMap::new();
    let mut truth: HashMap<(usize, usize), Vec<(String, f64)>> = HashMap::new();
    for (si, shape) in SHAPES.iter().enumerate() {
        let st = stats.entry(shape).or_default();
        for (qi, q) in queries.iter().enumerate() {
            let f = shapes.filters(shape, q);
            let req = SearchRequest::from_json(&body(q, &f), Shape::Nested, profile)?;
            let text = req.normalized_query.clone().unwrap_or_default();
            let resp = mosaic::search::search(&ctx, &principal, req.clone())
                .await
                .with_context(|| failed("search", &q.text, shape))?;
            let d = resp.diagnostics.context("diagnostics were requested")?;
            let timing = |stage: &str| d.timings_ms.get(stage).copied().unwrap_or(0.0);
            for stage in STAGES {
                st.stages.entry(stage).or_default().push(timing(stage));
            }
            st.searches.push((
                timing("total"),
                json!({"query": q.text, "kind": q.kind, "timings_ms": d.timings_ms,
                       "arms": d.arms, "understanding": d.query_understanding}),
            ));
            let kind = st.by_kind.entry(q.kind).or_default();
            for stage in KIND_STAGES {
                kind.entry(stage).or_default().push(timing(stage));
            }
            *st.strategies.entry(d.strategy.as_str().into()).or_default() += 1;
            let sem = &d.arms[Arm::Semantic];
            let route = sem.mode.map(|m| m.to_string()).unwrap_or_default();
            *st.routes.entry(route.clone()).or_default() += 1;
            let enough = sem.eligible_estimate.unwrap_or(0).min(sem.limit);
            if sem.returned as i64 >= enough {
                st.semantic_filled += 1;
            } else {
                st.semantic_short += 1;
            }
            st.semantic_returned.push(sem.returned as f64);
            if d.arms[Arm::Lexical].verdict == Verdict::BudgetCut {
                st.lexical_budget_cut += 1;
            }

            // The floor: the same arm SQL, one connection, back to back.
            let elig = Eligibility::with_query(&req.filters, Some(&text));
            let v = bench::query_vector(&*embedder, &text).await?;
            let run = bench::direct(
                &mut direct_client,
                &ctx.price_stats,
                &elig,
                &text,
                &v,
                profile,
            )
            .await
            .with_context(|| failed("floor run (the arms' SQL back to back)", &q.text, shape))?;
            st.floor.push(run.floor_ms);
            st.floor_arm_sum
                .push(run.exact_identifier_ms + run.lexical.ms + run.trigram.ms + run.semantic.ms);
            if qi < args.recall_queries {
                let scored = bench::exact_top_scored(&direct_client, &elig, &v, 10).await?;
                let top: Vec<String> = scored.iter().map(|(id, _)| id.clone()).collect();
                let r = bench::recall_at(&run.semantic.candidates, &top, 10);
                st.recall_ties.push(bench::recall_at_score(
                    &run.semantic.candidates,
                    &scored,
                    10,
                ));
                if r < 1.0 {
                    let got: Vec<&str> = run
                        .semantic
                        .candidates
                        .iter()
                        .take(10)
                        .map(|(id, _)| id.as_str())
                        .collect();
                    let missed: Vec<_> = scored
                        .iter()
                        .filter(|(id, _)| !got.contains(&id.as_str()))
                        .collect();
                    st.recall_misses.push(json!({
                        "query": q.text, "kind": q.kind, "recall": r,
                        "route": run.semantic.mode.map(|m| m.to_string()),
                        "missed": missed,
                        "got_tenth": run.semantic.candidates.get(9),
                    }));
                }
                st.recall.push(r);
                st.recall_by_kind.entry(q.kind).or_default().push(r);
                st.recall_by_route
                    .entry(run.semantic.mode.map(|m| m.to_string()).unwrap_or_default())
                    .or_default()
                    .push(r);
                st.eligible
                    .push(bench::eligible_count(&direct_client, &elig).await? as f64);
                truth.insert((si, qi), scored);
            }
        }
        eprintln!("  {shape}: {} queries done", queries.len());
    }

    print_stage_tables(&stats, &reranker_label(args));
    print_kind_table(&stats);
    print_summary(&stats, profile, shapes.total());
    print_recall_kind_table(&stats);
    let filters_only = filters_only(&ctx, &principal, &shapes, &queries, profile).await?;

    let sweep = if args.sweep.is_some() {
        let client = &mut direct_client;
        Some(sweep(args, client, &*embedder, &shapes, &queries, &truth, profile).await?)
    } else {
        None
    };
    let throughput = if args.no_throughput {
        None
    } else {
        Some(throughput(args, &ctx, &owner, &shapes, &queries).await?)
    };
    let load = if args.load {
        let opts = crate::bench_load::LoadOptions {
            requests: args.load_requests,
            concurrency: args.load_concurrency,
            kill_every_ms: args.kill_every_ms,
        };
        Some(crate::bench_load::run(&ctx, &owner, &runtime_url, &shapes, &queries, &opts).await?)
    } else {
        None
    };

    let mut shapes_json = serde_json::Map::new();
    for (shape, st) in &stats {
        let stages: BTreeMap<&str, Summary> = st.stages.iter().map(|(k, v)| (*k, s(v))).collect();
        let by_kind: BTreeMap<&str, BTreeMap<&str, Summary>> = st
            .by_kind
            .iter()
            .map(|(kind, v)| (*kind, v.iter().map(|(k, x)| (*k, s(x))).collect()))
            .collect();
        let total = s(&st.stages["total"]);
        let floor = s(&st.floor);
        shapes_json.insert(
            shape.to_string(),
            json!({
                "stages_ms": stages,
                "by_query_kind_ms": by_kind,
                "floor_ms": floor,
                "floor_arm_sum_ms": s(&st.floor_arm_sum),
                "service_over_floor_p50": total.p50 / floor.p50,
                "semantic_routes": st.routes,
                "semantic_filled": st.semantic_filled,
                "semantic_short": st.semantic_short,
                "semantic_returned_mean": mean(&st.semantic_returned),
                "semantic_requested": profile.semantic_limit,
                "recall_at_10_mean": mean(&st.recall),
                "recall_at_10_min": min(&st.recall),
                "recall_at_10_tie_aware_mean": mean(&st.recall_ties),
                "recall_misses": st.recall_misses,
                "slowest_searches": slowest(&st.searches, 10),
                "recall_at_10_by_route": st.recall_by_route.iter()
                    .map(|(k, v)| (k.clone(), json!({"n": v.len(), "mean": mean(v), "min": min(v)})))
                    .collect::<serde_json::Map<String, Value>>(),
                "recall_at_10_by_kind": recall_by_kind(&st.recall_by_kind),
                "eligible_mean": mean(&st.eligible),
                "eligible_min": min(&st.eligible),
                "lexical_budget_cut": st.lexical_budget_cut,
                "strategies": st.strategies,
            }),
        );
    }
    Ok(json!({
        "size": size,
        "embedder": describe(&*embedder),
        "reranker": reranker_label(args),
        "queries_per_shape": queries.len(),
        "network_delay_ms_each_way": args.network_delay_ms,
        "recall_queries_per_shape": args.recall_queries.min(queries.len()),
        "prepare": prep,
        "shapes": shapes_json,
        "filters_only": filters_only,
        "sweep": sweep,
        "throughput": throughput,
        "load": load,
    }))
}

/// Searches without a query (strategy `metadata_only`): every filtered
/// shape's filters of every bench query, served in the filters-only order.
async fn filters_only(
    ctx: &Ctx,
    principal: &Principal,
    shapes: &ShapeBuilder,
    queries: &[BenchQuery],
    profile: &RetrievalProfile,
) -> Result<Value> {
    println!("\nfilters-only searches (no query: strategy metadata_only), ms (service, in-process, warm)");
    println!(
        "{:<16} {:>8} {:>8} {:>8} {:>8} {:>8}  strategies",
        "shape", "stage", "p50", "p95", "p99", "mean"
    );
    let mut out = serde_json::Map::new();
    for shape in SHAPES.iter().filter(|s| **s != "none") {
        let (mut metadata, mut total) = (Vec::new(), Vec::new());
        let mut strategies: BTreeMap<String, usize> = BTreeMap::new();
        for q in queries {
            let b = json!({"filters": bench::filters_json(&shapes.filters(shape, q)),
                           "limit": 10, "include_diagnostics": true});
            let req = SearchRequest::from_json(&b, Shape::Nested, profile)?;
            let resp = mosaic::search::search(ctx, principal, req)
                .await
                .with_context(|| failed("filters-only search", &q.text, shape))?;
            let d = resp.diagnostics.context("diagnostics were requested")?;
            *strategies.entry(d.strategy.as_str().into()).or_default() += 1;
            metadata.push(d.timings_ms.get("metadata").copied().unwrap_or(0.0));
            total.push(d.timings_ms.get("total").copied().unwrap_or(0.0));
        }
        let names: Vec<String> = strategies.iter().map(|(k, n)| format!("{k}:{n}")).collect();
        for (stage, v) in [("metadata", &metadata), ("total", &total)] {
            let x = s(v);
            println!(
                "{:<16} {:>8} {:>8.2} {:>8.2} {:>8.2} {:>8.2}  {}",
                shape,
                stage,
                x.p50,
                x.p95,
                x.p99,
                x.mean,
                names.join(" ")
            );
        }
        out.insert(
            shape.to_string(),
            json!({"metadata_ms": s(&metadata), "total_ms": s(&total), "strategies": strategies}),
        );
    }
    Ok(Value::Object(out))
}

/// What the bench's searches rerank with, for its tables and JSON.
fn reranker_label(args: &BenchArgs) -> String {
    match args.reranker.as_str() {
        "local" => format!("local ({})", mosaic::rerank::local::MODEL_ID),
        _ => "none (reranker off)".to_string(),
    }
}

fn print_stage_tables(stats: &BTreeMap<&'static str, ShapeStats>, reranker: &str) {
    println!("\nper-stage latency, ms (service, in-process, warm; reranker: {reranker})");
    println!(
        "{:<16} {:<9} {:>8} {:>8} {:>8} {:>8}",
        "shape", "stage", "p50", "p95", "p99", "mean"
    );
    for shape in SHAPES {
        let st = &stats[shape];
        for stage in STAGES {
            let x = s(&st.stages[stage]);
            println!(
                "{:<16} {:<9} {:>8.2} {:>8.2} {:>8.2} {:>8.2}",
                shape, stage, x.p50, x.p95, x.p99, x.mean
            );
        }
        let x = s(&st.floor);
        println!(
            "{:<16} {:<9} {:>8.2} {:>8.2} {:>8.2} {:>8.2}",
            shape, "FLOOR", x.p50, x.p95, x.p99, x.mean
        );
    }
}

/// p50/p95 of the arms and the total per filter shape and query kind: which
/// kind of query sets the tail.
fn print_kind_table(stats: &BTreeMap<&'static str, ShapeStats>) {
    println!("\nlatency by query kind, ms p50/p95 (service, in-process, warm)");
    print!("{:<16} {:<15}", "shape", "kind");
    for stage in KIND_STAGES {
        print!(" {:>15}", stage);
    }
    println!();
    for shape in SHAPES {
        for (kind, stages) in &stats[shape].by_kind {
            print!("{shape:<16} {kind:<15}");
            for stage in KIND_STAGES {
                let x = s(&stages[stage]);
                print!(" {:>15}", format!("{:.1}/{:.1}", x.p50, x.p95));
            }
            println!();
        }
    }
}

/// The `n` slowest searches (by total), slowest first.
fn slowest(searches: &[(f64, Value)], n: usize) -> Vec<Value> {
    let mut by_total: Vec<&(f64, Value)> = searches.iter().collect();
    by_total.sort_by(|a, b| b.0.total_cmp(&a.0));
    by_total
        .into_iter()
        .take(n)
        .map(|(_, v)| v.clone())
        .collect()
}

/// Mean recall@10 and the number of recall queries per query kind.
fn recall_by_kind(by_kind: &BTreeMap<&'static str, Vec<f64>>) -> Value {
    by_kind
        .iter()
        .map(|(kind, v)| (kind.to_string(), json!({"n": v.len(), "mean": mean(v)})))
        .collect::<serde_json::Map<String, Value>>()
        .into()
}

/// `kind mean` pairs on one line, for the sweep's rows.
fn kinds_line(by_kind: &BTreeMap<&'static str, Vec<f64>>) -> String {
    let pairs: Vec<String> = by_kind
        .iter()
        .map(|(kind, v)| format!("{kind} {:.3}", mean(v)))
        .collect();
    pairs.join(", ")
}

/// Recall@10 per filter shape and query kind: which queries the graph walk
/// misses. Printed only when there were recall queries.
fn print_recall_kind_table(stats: &BTreeMap<&'static str, ShapeStats>) {
    if stats.values().all(|st| st.recall.is_empty()) {
        return;
    }
    println!(
        "
recall@10 by query kind (mean over the recall queries; n in brackets)"
    );
    for shape in SHAPES {
        let st = &stats[shape];
        let cells: Vec<String> = st
            .recall_by_kind
            .iter()
            .map(|(kind, v)| format!("{kind} {:.3} ({})", mean(v), v.len()))
            .collect();
        println!("{shape:<16} {}", cells.join(", "));
    }
}

fn print_summary(stats: &BTreeMap<&'static str, ShapeStats>, profile: &RetrievalProfile, n: i64) {
    println!("\nsummary per filter shape ({n} products)");
    println!(
        "{:<16} {:>9} {:>8} {:>8} {:>8} {:>7} {:>10} {:>9} {:>8} {:>8}  routes",
        "shape",
        "eligible",
        "tot p50",
        "tot p95",
        "flr p50",
        "ratio",
        "sem rows",
        "filled",
        "R@10",
        "R@10min"
    );
    for shape in SHAPES {
        let st = &stats[shape];
        let total = s(&st.stages["total"]);
        let floor = s(&st.floor);
        let routes: Vec<String> = st.routes.iter().map(|(k, v)| format!("{k}:{v}")).collect();
        // Eligible counts and recall come from the recall queries; "-" without them.
        let or_dash = |v: f64, prec: usize| match v.is_nan() {
            true => "-".to_string(),
            false => format!("{v:.prec$}"),
        };
        println!(
            "{:<16} {:>9} {:>8.2} {:>8.2} {:>8.2} {:>7.2} {:>6.1}/{:<3} {:>4}/{:<4} {:>8} {:>8}  {}",
            shape,
            or_dash(mean(&st.eligible), 0),
            total.p50,
            total.p95,
            floor.p50,
            total.p50 / floor.p50,
            mean(&st.semantic_returned),
            profile.semantic_limit,
            st.semantic_filled,
            st.semantic_filled + st.semantic_short,
            or_dash(mean(&st.recall), 4),
            or_dash(min(&st.recall), 2),
            routes.join(" ")
        );
    }
}

async fn sweep(
    args: &BenchArgs,
    client: &mut tokio_postgres::Client,
    embedder: &dyn Embedder,
    shapes: &ShapeBuilder,
    queries: &[BenchQuery],
    truth: &HashMap<(usize, usize), Vec<(String, f64)>>,
    base: &RetrievalProfile,
) -> Result<Value> {
    let n = args.recall_queries.min(queries.len());
    let mut rows = Vec::new();
    println!("\nsweep (direct arm calls; semantic over {n} queries/shape, lexical over {} queries/shape)", queries.len());
    println!(
        "{:<26} {:>6} {:<16} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9}",
        "parameter",
        "value",
        "shape",
        "p50 ms",
        "p95 ms",
        "R@10",
        "R@10 tie",
        "R@10 min",
        "cut/short"
    );
    println!("{:>108}", "R@10 by query kind");
    let wants = |arm: &str| {
        args.sweep
            .as_ref()
            .is_some_and(|a| a.is_empty() || a.iter().any(|x| x == arm))
    };
    let mut variants: Vec<(String, i64, RetrievalProfile)> = Vec::new();
    for ef in [200, 400, 800, 1000] {
        variants.push((
            "hnsw_ef_search".to_string(),
            ef,
            RetrievalProfile {
                hnsw_ef_search: ef,
                ..base.clone()
            },
        ));
    }
    for rows in [400, 800, 1_500] {
        variants.push((
            "semantic_overfetch".to_string(),
            rows,
            RetrievalProfile {
                semantic_overfetch: rows,
                ..base.clone()
            },
        ));
    }
    for ef in [0, 40, 100, 200] {
        variants.push((
            "semantic_domain_walk_ef".to_string(),
            ef,
            RetrievalProfile {
                semantic_domain_walk_ef: ef,
                ..base.clone()
            },
        ));
    }
    // The walks together: the whole catalog's walk (`hnsw_ef_search`, and
    // `semantic_overfetch` rows deep), the domain walks' `ef_search` and
    // their scan budget (tuples).
    for (ef, walk_ef, tuples, rows) in [
        (400, 40, 1, 150),
        (400, 40, 2_000, 150),
        (400, 100, 1, 150),
        (400, 100, 2_000, 150),
        (200, 100, 1, 150),
        (200, 100, 2_000, 150),
        (1_000, 40, 1, 1_500),
        (1_000, 40, 1, 3_000),
        (1_000, 100, 2_000, 150),
        (1_000, 400, 2_000, 150),
    ] {
        variants.push((
            format!("walks {ef}/{walk_ef}/{tuples}/{rows}"),
            0,
            RetrievalProfile {
                hnsw_ef_search: ef,
                semantic_domain_walk_ef: walk_ef,
                semantic_domain_walk_tuples: tuples,
                semantic_overfetch: rows,
                ..base.clone()
            },
        ));
    }
    // The longer walk of a domain filter's graph for queries far from it
    // (its rows; 0: off).
    for rows in [0, 1_000, 1_500, 3_000] {
        variants.push((
            "semantic_far_domain_overfetch".to_string(),
            rows,
            RetrievalProfile {
                semantic_far_domain_overfetch: rows,
                ..base.clone()
            },
        ));
    }
    // A code's product line scored exactly beside the walks (its rows; 0:
    // off), without its brand; then the brand's rows beside the line.
    for rows in [0, 250, 1_000, 4_000] {
        variants.push((
            "semantic_identifier_family".to_string(),
            rows,
            RetrievalProfile {
                semantic_identifier_family: rows,
                semantic_identifier_brand: 0,
                ..base.clone()
            },
        ));
    }
    for rows in [0, 1_000, 4_000, 10_000] {
        variants.push((
            "semantic_identifier_brand".to_string(),
            rows,
            RetrievalProfile {
                semantic_identifier_brand: rows,
                ..base.clone()
            },
        ));
    }
    for th in [1_000, 3_000, 10_000, 30_000] {
        variants.push((
            "semantic_exact_threshold".to_string(),
            th,
            RetrievalProfile {
                semantic_exact_threshold: th,
                ..base.clone()
            },
        ));
    }
    for b in [500, 2_000, 5_000] {
        variants.push((
            "lexical_scan_budget".to_string(),
            b,
            RetrievalProfile {
                lexical_scan_budget: b,
                ..base.clone()
            },
        ));
    }
    variants.retain(|(param, _, _)| match param.as_str() {
        "lexical_scan_budget" => wants("lexical"),
        p if p.starts_with("walks") => wants("walks"),
        "semantic_far_domain_overfetch" => wants("far"),
        "semantic_identifier_family" => wants("family"),
        "semantic_identifier_brand" => wants("brand"),
        _ => wants("semantic"),
    });
    for (param, value, p) in &variants {
        for (si, shape) in SHAPES.iter().enumerate() {
            let (mut ms, mut rec, mut ties, mut bad) = (Vec::new(), Vec::new(), Vec::new(), 0usize);
            let mut routes: BTreeMap<String, usize> = BTreeMap::new();
            let mut by_kind: BTreeMap<&'static str, Vec<f64>> = BTreeMap::new();
            if param == "lexical_scan_budget" {
                for q in queries {
                    let (text, elig) = direct_input(shapes, shape, q, p)?;
                    let r = bench::lexical_only(client, &elig, &text, p).await?;
                    ms.push(r.ms);
                    if r.verdict == Verdict::BudgetCut {
                        bad += 1;
                    }
                }
            } else {
                for (qi, q) in queries.iter().enumerate().take(n) {
                    let (text, elig) = direct_input(shapes, shape, q, p)?;
                    let v = bench::query_vector(embedder, &text).await?;
                    let r = bench::semantic_only(client, &elig, &text, &v, p).await?;
                    ms.push(r.ms);
                    if let Some(t) = truth.get(&(si, qi)) {
                        let ids: Vec<String> = t.iter().map(|(id, _)| id.clone()).collect();
                        let x = bench::recall_at(&r.candidates, &ids, 10);
                        rec.push(x);
                        by_kind.entry(q.kind).or_default().push(x);
                        ties.push(bench::recall_at_score(&r.candidates, t, 10));
                    }
                    let enough = r.eligible_estimate.unwrap_or(0).min(r.limit);
                    if (r.returned as i64) < enough {
                        bad += 1;
                    }
                    *routes
                        .entry(r.mode.map(|m| m.to_string()).unwrap_or_default())
                        .or_default() += 1;
                }
            }
            let x = s(&ms);
            println!(
                "{:<26} {:>6} {:<16} {:>8.2} {:>8.2} {:>8.4} {:>8.4} {:>8.2} {:>9}  {}",
                param,
                value,
                shape,
                x.p50,
                x.p95,
                mean(&rec),
                mean(&ties),
                min(&rec),
                bad,
                kinds_line(&by_kind)
            );
            rows.push(
                json!({"parameter": param, "value": value, "shape": shape, "ms": x,
                             "recall_at_10_mean": mean(&rec), "recall_at_10_ties_mean": mean(&ties),
                             "recall_at_10_min": min(&rec), "budget_cut_or_short": bad,
                             "recall_at_10_by_kind": recall_by_kind(&by_kind),
                             "routes": routes}),
            );
        }
    }
    if wants("trigram") {
        rows.extend(trigram_sweep(client, shapes, queries, base).await?);
    }
    if wants("rank") {
        rows.extend(rank_sweep(client, shapes, queries, base).await?);
    }
    if wants("perfect") {
        rows.extend(perfect_sweep(client, shapes, queries, base).await?);
    }
    Ok(Value::Array(rows))
}

/// An arm's similarity scores, best first, to one part in a million: what
/// the sweeps compare (ties make the ids of equal scores arbitrary).
fn score_list(r: &mosaic::search::arms::ArmResult) -> Vec<i64> {
    r.candidates
        .iter()
        .map(|(_, s)| (s * 1e6).round() as i64)
        .collect()
}

/// The trigram arm's scan budget against an unbounded run of the same
/// cascade: latency, and how many queries' score lists (the arm's top
/// `trigram_limit` similarities) differ from the unbounded ones. Ties make
/// the ids of equal scores arbitrary, so the scores are compared.
async fn trigram_sweep(
    client: &mut tokio_postgres::Client,
    shapes: &ShapeBuilder,
    queries: &[BenchQuery],
    base: &RetrievalProfile,
) -> Result<Vec<Value>> {
    let unbounded = RetrievalProfile {
        trigram_scan_budget: 1_000_000,
        ..base.clone()
    };
    let mut rows = Vec::new();
    for shape in SHAPES {
        // The budget does not change the request: build each one once.
        let inputs = queries
            .iter()
            .map(|q| direct_input(shapes, shape, q, base))
            .collect::<Result<Vec<_>>>()?;
        let mut reference = Vec::with_capacity(queries.len());
        let mut ref_ms = Vec::new();
        for (text, elig) in &inputs {
            let r = bench::trigram_only(client, elig, text, &unbounded).await?;
            ref_ms.push(r.ms);
            reference.push(score_list(&r));
        }
        let x = s(&ref_ms);
        println!(
            "{:<26} {:>6} {:<16} {:>8.2} {:>8.2} {:>8} {:>9}",
            "trigram_scan_budget", "none", shape, x.p50, x.p95, "-", 0
        );
        for budget in [250i64, 500, 1_000] {
            let p = RetrievalProfile {
                trigram_scan_budget: budget,
                ..base.clone()
            };
            let (mut ms, mut differ, mut cut) = (Vec::new(), 0usize, 0usize);
            for ((text, elig), want) in inputs.iter().zip(&reference) {
                let r = bench::trigram_only(client, elig, text, &p).await?;
                ms.push(r.ms);
                differ += usize::from(score_list(&r) != *want);
                cut += usize::from(r.verdict == Verdict::BudgetCut);
            }
            let x = s(&ms);
            println!(
                "{:<26} {:>6} {:<16} {:>8.2} {:>8.2} {:>8} {:>9}",
                "trigram_scan_budget",
                budget,
                shape,
                x.p50,
                x.p95,
                format!("{differ} diff"),
                cut
            );
            rows.push(
                json!({"parameter": "trigram_scan_budget", "value": budget, "shape": shape,
                             "ms": x, "score_lists_differing_from_unbounded": differ,
                             "budget_cut": cut, "queries": queries.len()}),
            );
        }
    }
    Ok(rows)
}

/// The lexical arm's ranking budget against ranking every match: each
/// query runs under every value back to back (the order rotating query by
/// query, so drift on a shared machine hits all alike). Reported per value
/// and shape: the arm's latency overall and over the queries one of whose
/// any-term steps matched more than the smallest budget, and how many
/// queries' score lists differ from ranking every match, over the first 10
/// and over the whole list. Ties make the ids of equal scores arbitrary, so
/// the scores are compared.
async fn rank_sweep(
    client: &mut tokio_postgres::Client,
    shapes: &ShapeBuilder,
    queries: &[BenchQuery],
    base: &RetrievalProfile,
) -> Result<Vec<Value>> {
    let values = [0i64, 240, 480, 960];
    let profiles = values.map(|v| RetrievalProfile {
        lexical_rank_budget: v,
        ..base.clone()
    });
    let mut rows = Vec::new();
    for shape in SHAPES {
        let k = values.len();
        let mut ms: Vec<Vec<f64>> = vec![Vec::new(); k];
        let mut heavy_ms: Vec<Vec<f64>> = vec![Vec::new(); k];
        let (mut differ10, mut differ) = (vec![0usize; k], vec![0usize; k]);
        let mut differing: Vec<Vec<String>> = vec![Vec::new(); k];
        let mut heavy = 0usize;
        for (i, q) in queries.iter().enumerate() {
            let (text, elig) = direct_input(shapes, shape, q, base)?;
            let mut got: Vec<Option<mosaic::search::arms::ArmResult>> = vec![None; k];
            for j in 0..k {
                let v = (i + j) % k;
                got[v] = Some(bench::lexical_only(client, &elig, &text, &profiles[v]).await?);
            }
            let got: Vec<_> = got
                .into_iter()
                .map(|r| r.expect("every value run"))
                .collect();
            let reference = score_list(&got[0]);
            let top = |l: &[i64]| l.iter().take(10).copied().collect::<Vec<_>>();
            let reference_top = top(&reference);
            // A step matched more than the smallest budget ranks.
            let is_heavy = got[1].prescored_matches.is_some();
            heavy += usize::from(is_heavy);
            for (v, r) in got.iter().enumerate() {
                ms[v].push(r.ms);
                if is_heavy {
                    heavy_ms[v].push(r.ms);
                }
                let list = score_list(r);
                differ[v] += usize::from(list != reference);
                if top(&list) != reference_top {
                    differ10[v] += 1;
                    differing[v].push(text.clone());
                }
            }
        }
        for (v, value) in values.iter().enumerate() {
            let (x, h) = (s(&ms[v]), s(&heavy_ms[v]));
            println!(
                "{:<26} {:>6} {:<16} {:>8.2} {:>8.2} {:>8} {:>9}   {} queries past {} matches: p50/p95 {:.2}/{:.2}; whole lists differ {}",
                "lexical_rank_budget",
                value,
                shape,
                x.p50,
                x.p95,
                format!("{} diff", differ10[v]),
                "-",
                heavy,
                values[1],
                h.p50,
                h.p95,
                differ[v]
            );
            for q in &differing[v] {
                println!("{:>34} first 10 differ: {q:?}", "");
            }
            rows.push(
                json!({"parameter": "lexical_rank_budget", "value": value, "shape": shape,
                             "top10_differing_queries": differing[v],
                             "ms": x, "heavy_ms": h, "heavy_queries": heavy,
                             "top10_score_lists_differing": differ10[v],
                             "score_lists_differing": differ[v],
                             "queries": queries.len()}),
            );
        }
    }
    Ok(rows)
}

/// The trigram arm without and with its perfect step, run back to back for
/// each query (the order alternating), so drift on a shared machine hits
/// both alike: latency per shape and for category-word queries, how many
/// queries the perfect step served alone, and how many score lists differ.
async fn perfect_sweep(
    client: &mut tokio_postgres::Client,
    shapes: &ShapeBuilder,
    queries: &[BenchQuery],
    base: &RetrievalProfile,
) -> Result<Vec<Value>> {
    let profiles = [0i64, 1].map(|v| RetrievalProfile {
        trigram_perfect_first: v,
        ..base.clone()
    });
    let mut rows = Vec::new();
    for shape in SHAPES {
        let mut ms = [Vec::new(), Vec::new()];
        let mut category_ms = [Vec::new(), Vec::new()];
        let (mut differ, mut served) = (0usize, 0usize);
        for (i, q) in queries.iter().enumerate() {
            let (text, elig) = direct_input(shapes, shape, q, base)?;
            let mut got = [None, None];
            for k in [i % 2, 1 - i % 2] {
                let r = bench::trigram_only(client, &elig, &text, &profiles[k]).await?;
                ms[k].push(r.ms);
                if q.kind == "category_words" {
                    category_ms[k].push(r.ms);
                }
                got[k] = Some(r);
            }
            let [Some(off), Some(on)] = got else {
                unreachable!("both runs made")
            };
            differ += usize::from(score_list(&off) != score_list(&on));
            served += usize::from(on.mode == Some(ArmMode::Trigram(1.0)));
        }
        for k in 0..2 {
            let (x, c) = (s(&ms[k]), s(&category_ms[k]));
            // The comparison and the perfect step belong to the run with it.
            let (differ, served) = if k == 1 { (differ, served) } else { (0, 0) };
            println!(
                "{:<26} {:>6} {:<16} {:>8.2} {:>8.2} {:>8} {:>9}   category words p50/p95 {:.2}/{:.2}",
                "trigram_perfect_first",
                k,
                shape,
                x.p50,
                x.p95,
                if k == 1 { format!("{differ} diff") } else { "-".into() },
                served,
                c.p50,
                c.p95
            );
            rows.push(
                json!({"parameter": "trigram_perfect_first", "value": k, "shape": shape,
                             "ms": x, "category_words_ms": c,
                             "score_lists_differing": differ,
                             "served_by_perfect_step": served,
                             "queries": queries.len()}),
            );
        }
    }
    Ok(rows)
}

/// The in-process server on 127.0.0.1:0, driven over HTTP/1.1 by ureq in
/// threads; then the receipts are counted.
async fn throughput(
    args: &BenchArgs,
    ctx: &Ctx,
    owner: &tokio_postgres::Client,
    shapes: &ShapeBuilder,
    queries: &[BenchQuery],
) -> Result<Value> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(mosaic::server::serve(ctx.clone(), listener, async {
        let _ = stopped.await;
    }));
    let url = format!("http://{addr}/api/search");
    let mix = [
        "none",
        "broad",
        "selective",
        "very_selective",
        "anti_correlated",
    ];
    let bodies: Arc<Vec<String>> = Arc::new(
        queries
            .iter()
            .enumerate()
            .map(|(i, q)| {
                let mut b = body(q, &shapes.filters(mix[i % mix.len()], q));
                b["include_diagnostics"] = json!(false);
                b.to_string()
            })
            .collect(),
    );
    let before = mosaic::receipt::event_count(owner).await?;
    let mut levels = Vec::new();
    let mut ok_total = 0usize;
    println!(
        "\nthroughput (HTTP/1.1 keep-alive, ureq threads; server pool 8 connections; reranker: {})",
        reranker_label(args)
    );
    println!(
        "{:>11} {:>9} {:>9} {:>7} {:>9} {:>9} {:>9}",
        "concurrency", "requests", "req/s", "errors", "p50 ms", "p95 ms", "p99 ms"
    );
    for &c in &args.concurrency {
        let (n, url, bodies) = (args.requests, url.clone(), bodies.clone());
        let (secs, lat, errors) = tokio::task::spawn_blocking(move || {
            let started = Instant::now();
            let replies = crate::bench_load::post_all(&url, &bodies, n, c);
            let secs = started.elapsed().as_secs_f64();
            let lat: Vec<f64> = replies
                .iter()
                .filter(|r| (200..300).contains(&r.status))
                .map(|r| r.ms)
                .collect();
            let errors = replies.len() - lat.len();
            (secs, lat, errors)
        })
        .await?;
        let x = s(&lat);
        ok_total += lat.len();
        println!(
            "{:>11} {:>9} {:>9.1} {:>7} {:>9.2} {:>9.2} {:>9.2}",
            c,
            n,
            lat.len() as f64 / secs,
            errors,
            x.p50,
            x.p95,
            x.p99
        );
        levels.push(
            json!({"concurrency": c, "requests": n, "ok": lat.len(), "errors": errors,
                           "seconds": secs, "requests_per_second": lat.len() as f64 / secs,
                           "latency_ms": x}),
        );
    }
    let _ = stop.send(());
    let _ = server.await;
    let after = mosaic::receipt::event_count(owner).await?;
    let grew = after - before;
    println!(
        "receipts.search_events grew by {grew}; successful searches {ok_total}: {}",
        if grew == ok_total as i64 {
            "exact, none lost"
        } else {
            "MISMATCH"
        }
    );
    Ok(
        json!({"levels": levels, "receipts_before": before, "receipts_after": after,
              "receipts_grew": grew, "successful_searches": ok_total,
              "receipts_match": grew == ok_total as i64}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recall_is_reported_per_query_kind() {
        let mut by_kind: BTreeMap<&'static str, Vec<f64>> = BTreeMap::new();
        by_kind
            .entry("model_number")
            .or_default()
            .extend([0.0, 1.0, 0.5]);
        by_kind.entry("descriptive").or_default().push(1.0);
        let v = recall_by_kind(&by_kind);
        assert_eq!(v["model_number"]["n"], 3);
        assert_eq!(v["model_number"]["mean"], 0.5);
        assert_eq!(v["descriptive"]["mean"], 1.0);
        assert_eq!(
            kinds_line(&by_kind),
            "descriptive 1.000, model_number 0.500"
        );
    }

    #[test]
    fn a_failed_search_names_its_query_shape_and_deadlines() {
        let m = failed("search", "pxlt-3353 mini", "broad");
        assert!(m.contains("\"pxlt-3353 mini\""), "{m}");
        assert!(m.contains("filter shape broad"), "{m}");
        assert!(m.contains("MOSAIC_STATEMENT_TIMEOUT_MS"), "{m}");
    }

    #[test]
    fn the_slowest_searches_come_first() {
        let searches: Vec<(f64, Value)> = [3.0, 9.0, 1.0, 7.0]
            .iter()
            .map(|&t| (t, json!({ "total": t })))
            .collect();
        let top = slowest(&searches, 2);
        assert_eq!(top, vec![json!({"total": 9.0}), json!({"total": 7.0})]);
        assert_eq!(slowest(&searches, 10).len(), 4);
    }
}
