//! Mosaic Hybrid Retrieval: the whole capability, without transport code.
//!
//! Transport adapters (the Lambda functions, the local HTTP server and the
//! `mosaic` CLI) only map arguments and envelopes onto the plain async
//! functions exported here, chiefly [`search::search`].

#[cfg(feature = "aws")]
pub mod aws;
pub mod catalog;
pub mod config;
pub mod context;
pub mod contract;
pub mod db;
pub mod embed;
pub mod embed_job;
pub mod error;
pub mod http;
#[cfg(feature = "lambda")]
pub mod interceptor;
#[cfg(feature = "lambda")]
pub mod jwt;
#[cfg(feature = "lambda")]
pub mod lambda;
pub mod operation;
pub mod principal;
pub mod profile;
pub mod receipt;
pub mod replay;
pub mod rerank;
pub mod scope;
pub mod search;
#[cfg(feature = "server")]
pub mod server;
#[cfg(feature = "tls")]
pub mod tls;

pub use context::{CatalogSize, Ctx, PriceStatsCache, Principal};
pub use error::Error;
pub use profile::RetrievalProfile;
