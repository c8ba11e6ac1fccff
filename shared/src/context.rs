//! The per-process context every operation runs in: database pool, models
//! and the retrieval profile. Built once per process (once per Lambda
//! container) and shared by every request.

use crate::embed::Embedder;
use crate::profile::RetrievalProfile;
use crate::rerank::Reranker;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use std::sync::Arc;

pub use crate::principal::Principal;

#[derive(Clone)]
pub struct Ctx {
    pub pool: Pool,
    pub embedder: Option<Arc<dyn Embedder>>,
    pub reranker: Option<Arc<dyn Reranker>>,
    pub profile: RetrievalProfile,
    /// How the pool's connections send cancel requests ([`crate::db::Conn`]).
    pub canceller: crate::db::Canceller,
}

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
            return Ok(Self::with_manager(mgr, max_connections, profile)?.with_canceller(canceller));
        }
        let mgr = Manager::from_config(cfg, tokio_postgres::NoTls, manager_config);
        Ok(Self::with_manager(mgr, max_connections, profile)?.with_canceller(canceller))
    }

    /// A context over a pool manager built elsewhere (the AWS connection of
    /// [`crate::aws::rds`]). Its connections send cancel requests over plain
    /// TCP unless [`with_canceller`](Self::with_canceller) says otherwise.
    pub fn with_manager(
        mgr: Manager,
        max_connections: usize,
        profile: RetrievalProfile,
    ) -> Result<Self, String> {
        let pool = Pool::builder(mgr)
            .max_size(max_connections.max(1))
            .wait_timeout(Some(std::time::Duration::from_secs(10)))
            .create_timeout(Some(std::time::Duration::from_secs(5)))
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .build()
            .map_err(|e| format!("database pool: {e}"))?;
        Ok(Ctx {
            pool,
            embedder: None,
            reranker: None,
            profile,
            canceller: crate::db::Canceller::default(),
        })
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

    pub fn with_reranker(mut self, r: Arc<dyn Reranker>) -> Self {
        self.reranker = Some(r);
        self
    }
}
