//! The per-process context every operation runs in: database pool, models
//! and the retrieval profile. Built once per process (once per Lambda
//! container) and shared by every request.
//!
//! The pool is the writer's: receipts are written there, and every scoped
//! read (evidence, compare, explain) checks its grant there, so a scoped call
//! right after a search never meets a replica's lag. An optional read pool
//! (an Aurora replica behind the RDS Proxy's read-only endpoint) takes the
//! search's candidate reads: the arms, the catalog fields of the pool and the
//! rerank stage's lexeme statistics. Without one, those run on the writer.

use crate::embed::Embedder;
use crate::profile::RetrievalProfile;
use crate::rerank::Reranker;
use crate::search::arms::{Eligibility, PriceShare, PriceStats};
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio_postgres::GenericClient;

pub use crate::principal::Principal;

#[derive(Clone)]
pub struct Ctx {
    pub pool: Pool,
    pub embedder: Option<Arc<dyn Embedder>>,
    pub reranker: Option<Arc<dyn Reranker>>,
    pub profile: RetrievalProfile,
    /// How the pool's connections send cancel requests ([`crate::db::Conn`]).
    pub canceller: crate::db::Canceller,
    /// The read pool of the search's candidate reads, when one is configured.
    pub reader: Option<Reader>,
    /// The catalog's size as the last search saw it.
    pub catalog: CatalogSize,
    /// The price column's statistics as a search last read them.
    pub price_stats: PriceStatsCache,
    /// The dimension of `search.product_projection.embedding`, read once
    /// the column exists (at start-up, or by the first search that embeds a
    /// query) and kept by the context's clones: a migration never changes it
    /// in place.
    pub embedding_column: Arc<OnceLock<usize>>,
}

/// The price column's statistics ([`PriceStats`]) as a search last read
/// them, shared by the context's clones, for at most [`PRICE_STATS_FOR`]:
/// the lexical arm estimates a price filter's share of the catalog from
/// them (which only chooses how it checks the price, never what it
/// returns), and ANALYZE, after every load, is what changes them.
#[derive(Clone, Debug, Default)]
pub struct PriceStatsCache(Arc<Mutex<Option<PriceStatsRead>>>);

/// When the statistics were read, and what was read (`None`: none yet).
type PriceStatsRead = (Instant, Option<Arc<PriceStats>>);

/// How long a read of the price statistics serves searches.
pub const PRICE_STATS_FOR: Duration = Duration::from_secs(60);

impl PriceStatsCache {
    /// `elig`'s price range's share of the catalog ([`PriceShare`]), from
    /// the statistics kept, read through `db` first when they are missing
    /// or older than [`PRICE_STATS_FOR`]; `None` without a price filter or
    /// without statistics (a catalog never analysed).
    pub async fn share<C: GenericClient>(
        &self,
        db: &C,
        elig: &Eligibility,
    ) -> Result<Option<PriceShare>, tokio_postgres::Error> {
        if !elig.filters_price() {
            return Ok(None);
        }
        let stats = match self.fresh() {
            Some(stats) => stats,
            None => {
                let stats = PriceStats::read(db).await?.map(Arc::new);
                *self.0.lock().unwrap_or_else(|e| e.into_inner()) =
                    Some((Instant::now(), stats.clone()));
                stats
            }
        };
        Ok(stats.map(|s| s.share(elig)))
    }

    /// The statistics last read, when read less than [`PRICE_STATS_FOR`]
    /// ago (`Some(None)`: read, and there were none).
    fn fresh(&self) -> Option<Option<Arc<PriceStats>>> {
        let slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        slot.as_ref()
            .filter(|(at, _)| at.elapsed() < PRICE_STATS_FOR)
            .map(|(_, stats)| stats.clone())
    }
}

/// The catalog's product count as the semantic arm's probe last read it,
/// and its domain count as the arm last listed them, shared by the
/// context's clones. A search opens the lane of the domain walks only when
/// the catalog may be large enough for them
/// (`semantic_domain_walk_min_rows`) and may hold few enough domains
/// (`semantic_domain_walk_max_domains`); the probe that decides whether
/// they run comes after the lanes open. A stale count only moves the walks
/// to the semantic arm's own lane, or leaves a lane idle, never changes
/// what they return.
#[derive(Clone, Debug)]
pub struct CatalogSize {
    rows: Arc<AtomicI64>,
    domains: Arc<AtomicI64>,
}

impl Default for CatalogSize {
    fn default() -> Self {
        CatalogSize {
            rows: Arc::new(AtomicI64::new(-1)),
            domains: Arc::new(AtomicI64::new(-1)),
        }
    }
}

impl CatalogSize {
    /// The last count read, if any search has read one.
    pub fn known(&self) -> Option<i64> {
        Some(self.rows.load(Ordering::Relaxed)).filter(|n| *n >= 0)
    }

    /// Remembers the count a probe read.
    pub fn remember(&self, products: i64) {
        self.rows.store(products.max(0), Ordering::Relaxed);
    }

    /// Whether the catalog may hold `rows` products or more: unknown, or
    /// last seen that large.
    pub fn may_reach(&self, rows: i64) -> bool {
        self.known().is_none_or(|n| n >= rows)
    }

    /// Remembers how many domains the semantic arm listed.
    pub fn remember_domains(&self, domains: usize) {
        self.domains.store(
            i64::try_from(domains).unwrap_or(i64::MAX),
            Ordering::Relaxed,
        );
    }

    /// Whether `profile` may walk the catalog's domains
    /// ([`RetrievalProfile::walks_domains`]): unknown, or last listed
    /// within its bound.
    pub fn may_walk_domains(&self, profile: &RetrievalProfile) -> bool {
        let known = usize::try_from(self.domains.load(Ordering::Relaxed)).ok();
        known.is_none_or(|n| profile.walks_domains(n))
    }
}

/// A read-only pool (a replica), how its connections send cancel requests,
/// and whether searches pass it over for now ([`Ctx::search_reads`]).
#[derive(Clone)]
pub struct Reader {
    pub pool: Pool,
    pub canceller: crate::db::Canceller,
    pub paused: ReaderPause,
}

impl Reader {
    pub fn new(pool: Pool, canceller: crate::db::Canceller) -> Self {
        Self {
            pool,
            canceller,
            paused: ReaderPause::default(),
        }
    }
}

/// Until when searches read the writer instead of a read pool that could
/// not give a connection, shared by the context's clones.
#[derive(Clone, Debug, Default)]
pub struct ReaderPause(Arc<Mutex<Option<Instant>>>);

impl ReaderPause {
    /// Whether the pause still runs.
    pub fn active(&self) -> bool {
        let until = *self.0.lock().unwrap_or_else(|e| e.into_inner());
        until.is_some_and(|t| Instant::now() < t)
    }

    /// Passes the read pool over for `d` from now.
    pub fn start(&self, d: Duration) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now() + d);
    }
}

/// How long searches read the writer after the read pool could not give a
/// connection (a replica down, being replaced, or unreachable): each search
/// in that time is answered from the writer at once, instead of waiting on
/// the replica first.
pub const READER_PAUSE: Duration = Duration::from_secs(30);

/// The warning a search records when it read the writer instead of the
/// replica.
pub const READ_ON_WRITER: &str =
    "read replica unavailable: the candidates were read from the writer";

/// Which pool served a search's candidate reads, as its diagnostics name it.
pub const READER: &str = "reader";

impl Ctx {
    /// A context on a connection string: plain TCP for the local cluster,
    /// verified TLS when it says `sslmode=require` (see
    /// [`crate::db::Target::parse`]). `max_connections` bounds the pool; one
    /// suffices for a Lambda. Each session gets a `statement_timeout`.
    pub fn from_url(
        database_url: &str,
        max_connections: usize,
        profile: RetrievalProfile,
    ) -> Result<Self, String> {
        let (pool, canceller) = url_pool(database_url, max_connections)?;
        Ok(Self::with_pool(pool, profile).with_canceller(canceller))
    }

    /// The same context with a read pool on `read_url` (same TLS rules as
    /// [`from_url`](Self::from_url)).
    pub fn with_read_url(self, read_url: &str, max_connections: usize) -> Result<Self, String> {
        let (pool, canceller) = url_pool(read_url, max_connections)?;
        Ok(self.with_reader(Reader::new(pool, canceller)))
    }

    /// A context over a pool manager built elsewhere (the AWS connection of
    /// [`crate::aws::rds`]). Its connections send cancel requests over plain
    /// TCP unless [`with_canceller`](Self::with_canceller) says otherwise.
    pub fn with_manager(
        mgr: Manager,
        max_connections: usize,
        profile: RetrievalProfile,
    ) -> Result<Self, String> {
        Ok(Self::with_pool(
            manager_pool(mgr, max_connections)?,
            profile,
        ))
    }

    fn with_pool(pool: Pool, profile: RetrievalProfile) -> Self {
        Ctx {
            pool,
            embedder: None,
            reranker: None,
            profile,
            canceller: crate::db::Canceller::default(),
            reader: None,
            catalog: CatalogSize::default(),
            price_stats: PriceStatsCache::default(),
            embedding_column: Arc::default(),
        }
    }

    pub fn with_reader(mut self, reader: Reader) -> Self {
        self.reader = Some(reader);
        self
    }

    /// The pool of the search's candidate reads: the read pool when there is
    /// one, else the writer's; with how its connections cancel.
    pub fn read_pool(&self) -> (&Pool, &crate::db::Canceller) {
        match &self.reader {
            Some(r) => (&r.pool, &r.canceller),
            None => (&self.pool, &self.canceller),
        }
    }

    /// The connection of a search's candidate reads. With a read pool, its
    /// connection; when the pool cannot give one (the replica is down, being
    /// replaced or unreachable), a connection of the writer and, for the rest
    /// of the search, this context without its read pool: the search is
    /// answered from the writer and records [`READ_ON_WRITER`], and so are
    /// the searches of the next [`READER_PAUSE`], without trying the replica
    /// first.
    pub async fn search_reads(
        &self,
    ) -> Result<(crate::db::Conn, Option<Ctx>), deadpool_postgres::PoolError> {
        let Some(reader) = &self.reader else {
            return Ok((self.conn().await?, None));
        };
        if !reader.paused.active() {
            match crate::db::Conn::get(&reader.pool, &reader.canceller).await {
                Ok(conn) => return Ok((conn, None)),
                Err(e) => {
                    tracing::warn!(error = %e, pause_s = READER_PAUSE.as_secs(),
                                   "read replica unavailable; searches read the writer");
                    reader.paused.start(READER_PAUSE);
                }
            }
        }
        let writer = Ctx {
            reader: None,
            ..self.clone()
        };
        let conn = writer.conn().await?;
        Ok((conn, Some(writer)))
    }

    pub fn with_embedder(mut self, e: Arc<dyn Embedder>) -> Self {
        self.embedder = Some(e);
        self
    }

    pub fn with_canceller(mut self, c: crate::db::Canceller) -> Self {
        self.canceller = c;
        self
    }

    /// A connection from the pool that cancels its statement if the
    /// operation holding it is abandoned ([`crate::db::Conn`]).
    pub async fn conn(&self) -> Result<crate::db::Conn, deadpool_postgres::PoolError> {
        crate::db::Conn::get(&self.pool, &self.canceller).await
    }

    /// Runs `read` in one read-only transaction on a connection of the
    /// writer's pool, its statements bounded by the profile's
    /// `statement_timeout_ms`, and hands the connection back settled. The
    /// connection cancels its statement if the caller is abandoned at a
    /// deadline ([`crate::db::Conn`]).
    pub(crate) async fn read_only<T>(
        &self,
        read: impl AsyncFnOnce(&tokio_postgres::Transaction<'_>) -> Result<T, crate::error::Error>,
    ) -> Result<T, crate::error::Error> {
        let mut conn = self.conn().await?;
        let tx = crate::db::bounded_transaction(&mut conn, self.profile.statement_timeout_ms, true)
            .await?;
        let out = read(&tx).await?;
        tx.commit().await?;
        conn.settle();
        Ok(out)
    }

    pub fn with_reranker(mut self, r: Arc<dyn Reranker>) -> Self {
        self.reranker = Some(r);
        self
    }
}

/// A pool on a connection string: plain TCP, or verified TLS when it says
/// `sslmode=require` (see [`crate::db::Target::parse`]). Each session gets a
/// `statement_timeout`.
fn url_pool(
    database_url: &str,
    max_connections: usize,
) -> Result<(Pool, crate::db::Canceller), String> {
    let target = crate::db::Target::parse(database_url)?;
    let mut cfg = target.config.clone();
    if cfg.get_connect_timeout().is_none() {
        cfg.connect_timeout(std::time::Duration::from_secs(5));
    }
    cfg.options("-c statement_timeout=10000");
    let manager_config = ManagerConfig {
        recycling_method: RecyclingMethod::Fast,
    };
    let canceller = crate::db::Canceller::for_target(&target);
    #[cfg(feature = "tls")]
    if let Some(tls) = &target.tls {
        let mgr = Manager::from_config(
            cfg,
            crate::tls::MakeRustlsConnect::new(tls.clone()),
            manager_config,
        );
        return Ok((manager_pool(mgr, max_connections)?, canceller));
    }
    let mgr = Manager::from_config(cfg, tokio_postgres::NoTls, manager_config);
    Ok((manager_pool(mgr, max_connections)?, canceller))
}

/// A pool of at most `max_connections` over `mgr`.
pub(crate) fn manager_pool(mgr: Manager, max_connections: usize) -> Result<Pool, String> {
    Pool::builder(mgr)
        .max_size(max_connections.max(1))
        .wait_timeout(Some(std::time::Duration::from_secs(10)))
        .create_timeout(Some(std::time::Duration::from_secs(5)))
        .runtime(deadpool_postgres::Runtime::Tokio1)
        .build()
        .map_err(|e| format!("database pool: {e}"))
}
