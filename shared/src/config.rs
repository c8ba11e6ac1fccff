//! Settings: what every entry point (the Lambda functions, `mosaic serve`,
//! `mosaic mcp` and the `mosaic` commands) reads from its environment, read
//! in one place with one default each, and the context built from them.
//!
//! Every setting, its default and its meaning are in one table: the
//! README's "Settings" section.
//!
//! The deployed functions set `MOSAIC_EMBEDDER` and `MOSAIC_RERANKER`
//! explicitly (the template names the Bedrock models); a function binary
//! left at the `local` embedder fails its start-up saying so, rather than
//! serving without a semantic arm.

use crate::context::Ctx;
use crate::embed::{Embedder, HashingEmbedder};
use crate::principal::proof;
use crate::profile::RetrievalProfile;
use std::sync::Arc;

/// The hashing embedder's dimension unless `MOSAIC_EMBEDDING_DIM` says otherwise.
pub const DEFAULT_EMBEDDING_DIM: usize = 384;

/// Which embedder the context uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmbedderSetting {
    /// No embedder: the semantic arm is skipped with a warning.
    None,
    /// The local sentence-embedding model (feature `local-model`).
    Local,
    /// The deterministic hashing embedder (tests), with its dimension.
    Hashing(usize),
    /// A Bedrock model (`bedrock:...`), provided by the `aws` feature.
    Bedrock(String),
}

impl EmbedderSetting {
    /// The setting `MOSAIC_EMBEDDER` names; `hashing` without a dimension
    /// takes `default_dim`.
    pub fn parse(s: &str, default_dim: usize) -> Result<Self, String> {
        let dim = |raw: &str| {
            raw.parse::<usize>()
                .ok()
                .filter(|d| (1..=16_000).contains(d))
                .ok_or_else(|| format!("MOSAIC_EMBEDDER={s:?}: the dimension must be 1..16000"))
        };
        match s.trim() {
            "none" => Ok(EmbedderSetting::None),
            "local" => Ok(EmbedderSetting::Local),
            "hashing" => Ok(EmbedderSetting::Hashing(dim(&default_dim.to_string())?)),
            t if t.starts_with("hashing:") => Ok(EmbedderSetting::Hashing(dim(&t["hashing:".len()..])?)),
            t if t.starts_with("bedrock:") => Ok(EmbedderSetting::Bedrock(t.to_string())),
            _ => Err(format!(
                "MOSAIC_EMBEDDER={s:?}: use `local`, `hashing[:<dim>]`, `bedrock:<model>[:<dim>]` or `none`"
            )),
        }
    }
}

/// Which reranker the context uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RerankerSetting {
    None,
    /// The local reranker ([`crate::rerank::local`]).
    Local,
    /// A Bedrock model (`bedrock:...`), provided by the `aws` feature.
    Bedrock(String),
}

impl RerankerSetting {
    /// The setting `MOSAIC_RERANKER` names.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s.trim() {
            "none" => Ok(RerankerSetting::None),
            "local" => Ok(RerankerSetting::Local),
            t if t.starts_with("bedrock:") => Ok(RerankerSetting::Bedrock(t.to_string())),
            _ => Err(format!(
                "MOSAIC_RERANKER={s:?}: use `local`, `bedrock:<model>` or `none`"
            )),
        }
    }
}

/// Where the key of the AgentCore principal proof ([`proof`]) comes from.
#[derive(Debug, Clone)]
pub enum ProofKeySetting {
    /// No key: every AgentCore principal is refused.
    None,
    /// `MOSAIC_PRINCIPAL_PROOF_KEY`: the key itself (local runs, tests).
    Inline(proof::Key),
    /// `MOSAIC_PRINCIPAL_PROOF_SECRET_ARN`: a Secrets Manager secret whose
    /// string is the key (feature `aws`), fetched once per container: at
    /// init, or at the first AgentCore call after an outage at init.
    Secret(String),
}

/// Why the proof key could not be read: Secrets Manager unavailable (or
/// timing out), which another try may heal, or a setting to fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProofKeyError {
    Unavailable(String),
    Invalid(String),
}

impl std::fmt::Display for ProofKeyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProofKeyError::Unavailable(m) | ProofKeyError::Invalid(m) => f.write_str(m),
        }
    }
}

impl From<ProofKeyError> for String {
    fn from(e: ProofKeyError) -> String {
        e.to_string()
    }
}

impl ProofKeySetting {
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let set = |k: &str| crate::profile::setting(&get, k);
        match (
            set("MOSAIC_PRINCIPAL_PROOF_KEY"),
            set("MOSAIC_PRINCIPAL_PROOF_SECRET_ARN"),
        ) {
            (Some(_), Some(_)) => Err(
                "both MOSAIC_PRINCIPAL_PROOF_KEY and MOSAIC_PRINCIPAL_PROOF_SECRET_ARN are set; \
                 configure one"
                    .into(),
            ),
            (Some(k), None) => proof::Key::new(&k)
                .map(ProofKeySetting::Inline)
                .map_err(|e| format!("MOSAIC_PRINCIPAL_PROOF_KEY: {e}")),
            (None, Some(arn)) => Ok(ProofKeySetting::Secret(arn)),
            (None, None) => Ok(ProofKeySetting::None),
        }
    }

    /// The key, fetching the secret when configured so.
    pub async fn load(&self) -> Result<Option<proof::Key>, ProofKeyError> {
        match self {
            ProofKeySetting::None => Ok(None),
            ProofKeySetting::Inline(k) => Ok(Some(k.clone())),
            #[cfg(feature = "aws")]
            ProofKeySetting::Secret(arn) => {
                use crate::aws::{sdk_failure, with_retries, CallPolicy, FailureKind};
                let sdk = crate::aws::load_sdk_config().await;
                let client = crate::aws::secrets::client(&sdk);
                let policy = CallPolicy::new(std::time::Duration::from_secs(5));
                let text = with_retries(&policy, "principal proof key secret", || async {
                    let out = client
                        .get_secret_value()
                        .secret_id(arn)
                        .send()
                        .await
                        .map_err(|e| sdk_failure("principal proof key secret", &e))?;
                    out.secret_string.ok_or(FailureKind::Malformed)
                })
                .await
                .map_err(|f| {
                    let message = format!(
                        "MOSAIC_PRINCIPAL_PROOF_SECRET_ARN: cannot read the secret ({f}); the \
                         function's role needs secretsmanager:GetSecretValue on it"
                    );
                    match f.kind.is_retryable() {
                        true => ProofKeyError::Unavailable(message),
                        false => ProofKeyError::Invalid(message),
                    }
                })?;
                proof::Key::new(&text).map(Some).map_err(|e| {
                    ProofKeyError::Invalid(format!("MOSAIC_PRINCIPAL_PROOF_SECRET_ARN: {e}"))
                })
            }
            #[cfg(not(feature = "aws"))]
            ProofKeySetting::Secret(_) => Err(ProofKeyError::Invalid(
                "MOSAIC_PRINCIPAL_PROOF_SECRET_ARN needs the `aws` feature; use \
                 MOSAIC_PRINCIPAL_PROOF_KEY"
                    .into(),
            )),
        }
    }
}

/// Everything an entry point reads from its environment, once, at start-up.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `MOSAIC_DATABASE_URL`: a connection string (plain TCP, or TLS with
    /// `sslmode=require`).
    pub database_url: Option<String>,
    /// `MOSAIC_READ_DATABASE_URL`: a read-only replica of that database for
    /// the search's candidate reads (the arms); unset, they run on the
    /// writer. The AWS form is `MOSAIC_DB_READ_HOST` ([`crate::aws::rds`]).
    pub read_database_url: Option<String>,
    pub embedder: EmbedderSetting,
    pub reranker: RerankerSetting,
    /// `MOSAIC_ALLOW_ANONYMOUS`: calls without a principal run as the
    /// anonymous principal instead of being refused.
    pub allow_anonymous: bool,
    /// Where the AgentCore principal-proof key comes from.
    pub proof_key: ProofKeySetting,
    pub profile: RetrievalProfile,
    /// The Bedrock models, call policies and database secret (feature `aws`).
    #[cfg(feature = "aws")]
    pub aws: crate::aws::AwsSettings,
    /// The RDS Proxy connection (`MOSAIC_DB_HOST`, ...; feature `aws`).
    #[cfg(feature = "aws")]
    pub rds: Option<crate::aws::rds::RdsSettings>,
}

impl Settings {
    pub fn from_env() -> Result<Self, String> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// As [`from_env`](Self::from_env) with an explicit variable lookup.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let set = |k: &str| crate::profile::setting(&get, k);
        let default_dim = match set("MOSAIC_EMBEDDING_DIM") {
            None => DEFAULT_EMBEDDING_DIM,
            Some(raw) => raw
                .parse()
                .map_err(|_| format!("MOSAIC_EMBEDDING_DIM={raw:?} is not a whole number"))?,
        };
        let embedder = EmbedderSetting::parse(
            set("MOSAIC_EMBEDDER").as_deref().unwrap_or("local"),
            default_dim,
        )?;
        let reranker =
            RerankerSetting::parse(set("MOSAIC_RERANKER").as_deref().unwrap_or("local"))?;
        let allow_anonymous = crate::profile::flag(
            "MOSAIC_ALLOW_ANONYMOUS",
            set("MOSAIC_ALLOW_ANONYMOUS").as_deref(),
        )?;
        let proof_key = ProofKeySetting::from_lookup(&get)?;
        let profile = RetrievalProfile::from_lookup(&get)?;
        let database_url = set("MOSAIC_DATABASE_URL");
        let read_database_url = set("MOSAIC_READ_DATABASE_URL");
        if read_database_url.is_some() && database_url.is_none() {
            return Err(
                "MOSAIC_READ_DATABASE_URL is set without MOSAIC_DATABASE_URL; the replica \
                 serves reads beside a writer (in AWS: MOSAIC_DB_READ_HOST)"
                    .into(),
            );
        }
        #[cfg(feature = "aws")]
        let (aws, rds) = {
            let aws = crate::aws::AwsSettings::from_lookup(&profile, &get)?;
            let rds = crate::aws::rds::RdsSettings::from_lookup(&get)?;
            if database_url.is_some() && rds.is_some() {
                return Err(
                    "both MOSAIC_DATABASE_URL and MOSAIC_DB_HOST/MOSAIC_DB_SECRET_ARN/\
                            MOSAIC_DB_IAM_AUTH are set; configure one database"
                        .into(),
                );
            }
            (aws, rds)
        };
        Ok(Settings {
            database_url,
            read_database_url,
            embedder,
            reranker,
            allow_anonymous,
            proof_key,
            profile,
            #[cfg(feature = "aws")]
            aws,
            #[cfg(feature = "aws")]
            rds,
        })
    }
}

/// Builds the context: a pool of `connections` database connections, the
/// embedder and the reranker.
///
/// The database is `MOSAIC_DATABASE_URL` (plain TCP, or verified TLS with
/// `sslmode=require`) or, with the `aws` feature, the RDS Proxy connection of
/// [`crate::aws::rds`] (`MOSAIC_DB_HOST`, ...); a replica for the search's
/// candidate reads, when configured (`MOSAIC_READ_DATABASE_URL`,
/// `MOSAIC_DB_READ_HOST`), gets a read pool of the same size. Bedrock models need the `aws`
/// feature; a binary without it fails the start-up naming what is missing
/// rather than serving without them. A Bedrock embedder's dimension is
/// checked against the database column here: a mismatch fails the start-up;
/// an unreachable database only postpones the check to the operator (a
/// warning), because outages must degrade per request, not per container.
pub async fn build_context(settings: &Settings, connections: usize) -> Result<Ctx, String> {
    #[cfg(feature = "aws")]
    let aws = {
        let wanted = settings.rds.is_some()
            || matches!(settings.embedder, EmbedderSetting::Bedrock(_))
            || matches!(settings.reranker, RerankerSetting::Bedrock(_));
        match wanted {
            true => Some(crate::aws::AwsComponents::load(settings.aws.clone()).await),
            false => None,
        }
    };

    let ctx = match &settings.database_url {
        Some(url) => {
            let ctx = Ctx::from_url(url, connections, settings.profile.clone())?;
            match &settings.read_database_url {
                Some(read_url) => ctx.with_read_url(read_url, connections)?,
                None => ctx,
            }
        }
        None => {
            #[cfg(feature = "aws")]
            match (&settings.rds, &aws) {
                (Some(db), Some(aws)) => {
                    aws.database(db, connections, settings.profile.clone())
                        .await?
                }
                _ => return Err(NO_DATABASE.to_string()),
            }
            #[cfg(not(feature = "aws"))]
            return Err(NO_DATABASE.to_string());
        }
    };

    #[cfg(not(feature = "aws"))]
    let aws: Option<Aws> = None;
    let embedder = embedder(settings, aws.as_ref())?;
    // The embedder against the catalog's vectors, in one read; a database
    // that cannot say now leaves the checks to each request.
    if let (Some(e), Some(found)) = (&embedder, vectors_at_start(&ctx).await) {
        match &settings.embedder {
            #[cfg(feature = "aws")]
            EmbedderSetting::Bedrock(_) => {
                if let Some(model) = &settings.aws.embedder {
                    check_embedding_dimension(model, found.column)?;
                }
            }
            setting => check_model_dimension(setting, e.dimension(), found.column)?,
        }
        check_vectors_model(&found.models, e.model_id())?;
    }
    let ctx = match &settings.reranker {
        RerankerSetting::None => ctx,
        RerankerSetting::Local => {
            ctx.with_reranker(Arc::new(crate::rerank::local::LocalReranker::new()))
        }
        RerankerSetting::Bedrock(s) => {
            #[cfg(feature = "aws")]
            {
                let r = aws
                    .as_ref()
                    .and_then(|a| a.reranker())
                    .ok_or_else(|| format!("MOSAIC_RERANKER={s:?}: not a Bedrock model"))?;
                ctx.with_reranker(Arc::new(r))
            }
            #[cfg(not(feature = "aws"))]
            return Err(format!(
                "MOSAIC_RERANKER={s:?}: Bedrock rerankers are not built into this binary \
                 (feature `aws`)"
            ));
        }
    };
    Ok(match embedder {
        Some(e) => ctx.with_embedder(e),
        None => ctx,
    })
}

/// The AWS components a context is built with (none without the `aws`
/// feature).
#[cfg(feature = "aws")]
type Aws = crate::aws::AwsComponents;
#[cfg(not(feature = "aws"))]
enum Aws {}

/// The embedder the settings name on its own, without a database (the
/// embedding job, the benchmark); `None` for `none`. The AWS components are
/// loaded only for a Bedrock model.
pub async fn build_embedder(settings: &Settings) -> Result<Option<Arc<dyn Embedder>>, String> {
    #[cfg(feature = "aws")]
    let aws = match settings.embedder {
        EmbedderSetting::Bedrock(_) => {
            Some(crate::aws::AwsComponents::load(settings.aws.clone()).await)
        }
        _ => None,
    };
    #[cfg(not(feature = "aws"))]
    let aws: Option<Aws> = None;
    embedder(settings, aws.as_ref())
}

/// The embedder the settings name; `None` for `none`. A Bedrock model comes
/// from `aws`, which the caller loaded because the settings name one.
fn embedder(settings: &Settings, aws: Option<&Aws>) -> Result<Option<Arc<dyn Embedder>>, String> {
    Ok(match &settings.embedder {
        EmbedderSetting::None => None,
        EmbedderSetting::Hashing(dim) => Some(Arc::new(HashingEmbedder::new(*dim))),
        EmbedderSetting::Local => Some(local_embedder()?),
        EmbedderSetting::Bedrock(s) => {
            #[cfg(feature = "aws")]
            {
                let e = aws
                    .and_then(|a| a.embedder())
                    .ok_or_else(|| format!("MOSAIC_EMBEDDER={s:?}: not a Bedrock model"))?;
                Some(Arc::new(e))
            }
            #[cfg(not(feature = "aws"))]
            {
                let _ = aws;
                return Err(format!(
                    "MOSAIC_EMBEDDER={s:?}: Bedrock embedders are not built into this binary \
                     (feature `aws`)"
                ));
            }
        }
    })
}

const NO_DATABASE: &str = "no database configured: set MOSAIC_DATABASE_URL, or MOSAIC_DB_HOST \
     with MOSAIC_DB_SECRET_ARN or MOSAIC_DB_IAM_AUTH=true (binaries built with the `aws` feature)";

/// What the start-up reads of the catalog's vectors: the embedding
/// column's dimension (`None` without the column) and the models of up to
/// [`VECTOR_SAMPLE`] of its vectors.
struct VectorsAtStart {
    column: Option<usize>,
    models: Vec<Option<String>>,
}

/// Vectors the start-up check of the catalog's vectors judges at most.
const VECTOR_SAMPLE: i64 = 256;
/// Pages the start-up check reads, about: 4 MB, some 1,000 rows of
/// 1,024-dimension vectors stored inline and more of smaller ones.
const VECTOR_SAMPLE_PAGES: i64 = 512;

/// The catalog's vectors at start-up, on one connection; `None` when the
/// database cannot say now (a warning): an unreachable database postpones
/// the checks to each request, because outages must degrade per request,
/// not per container.
/// This build's migrations in the context's database, read once at
/// start-up through its pool (and its connect timeout): a database without
/// one of them fails every statement that needs it. `None` when the
/// database cannot say now. Each entry point decides what a gap means: the
/// functions log it, the `mosaic` commands refuse to start.
pub async fn migrations_at_start(ctx: &Ctx) -> Option<crate::db::MigrationState> {
    let conn = ctx.pool.get().await.ok()?;
    match crate::db::migration_state(&conn).await {
        Ok(state) => Some(state),
        Err(e) => {
            tracing::warn!(error = %crate::db::describe_connect_error(&e), "could not read the database's migrations; not checked");
            None
        }
    }
}

async fn vectors_at_start(ctx: &Ctx) -> Option<VectorsAtStart> {
    let conn = match ctx.pool.get().await {
        Ok(c) => c,
        Err(e) => {
            let cause = match crate::Error::from(e) {
                crate::Error::Unavailable(cause) | crate::Error::Internal(cause) => cause,
                other => other.to_string(),
            };
            tracing::warn!(error = %cause, "database unreachable at start-up; the embedder was not checked against the catalog");
            return None;
        }
    };
    let column = match crate::db::embedding_dimension(&conn).await {
        Ok(dim) => dim,
        Err(e) => {
            tracing::warn!(error = %e, "could not read the embedding dimension; not checked");
            return None;
        }
    };
    let Some(d) = column else {
        return Some(VectorsAtStart {
            column,
            models: Vec::new(),
        });
    };
    // The searches' check of a query vector needs it too.
    ctx.embedding_column.get_or_init(|| d);
    // Pages drawn at random across the table (`TABLESAMPLE SYSTEM`), about
    // VECTOR_SAMPLE_PAGES of them whatever the catalog's size (its size on
    // disk, not its statistics, which a fresh load has not gathered yet): a
    // bounded read at every start, and a re-embedding part way through is
    // seen as mixed wherever its rewritten rows were stored.
    let models = match conn
        .query(
            "SELECT embedding_model FROM search.product_projection
               TABLESAMPLE SYSTEM ((SELECT least(100, 100 * $1::float8
                   / greatest(pg_relation_size('search.product_projection')
                              / current_setting('block_size')::float8, 1))))
              WHERE embedding IS NOT NULL LIMIT $2",
            &[&(VECTOR_SAMPLE_PAGES as f64), &VECTOR_SAMPLE],
        )
        .await
    {
        Ok(rows) => rows.iter().map(|r| r.get(0)).collect(),
        Err(e) => {
            tracing::warn!(error = %e, "could not read the catalog's embedding models; not checked");
            Vec::new()
        }
    };
    Some(VectorsAtStart { column, models })
}

/// Start-up check of a local embedder (the model, the hashing embedder)
/// against the database column: a mismatch fails the start-up, as it does
/// for a Bedrock model; an unmigrated database is left to each request.
fn check_model_dimension(
    setting: &EmbedderSetting,
    dimension: usize,
    column: Option<usize>,
) -> Result<(), String> {
    match column {
        Some(column) if column != dimension => Err(format!(
            "MOSAIC_EMBEDDER: the embedder ({setting:?}) gives vectors of {dimension} dimensions, \
             but the database's embedding column holds {column}: choose an embedder of {column} \
             dimensions, or migrate and embed a new database with --embedding-dim {dimension}"
        )),
        _ => Ok(()),
    }
}

/// Start-up check of the catalog's vectors (`models`, a sample) against the
/// embedder that will embed the queries: vectors of two models of one
/// dimension compare without an error and mean nothing, so a catalog whose
/// sampled vectors all come from another model fails the start-up, and one
/// that holds both (a re-embedding under way) is a warning. A catalog
/// without vectors is not checked.
fn check_vectors_model(models: &[Option<String>], model: &str) -> Result<(), String> {
    let others: std::collections::BTreeSet<&str> = models
        .iter()
        .flatten()
        .map(String::as_str)
        .filter(|m| *m != model)
        .collect();
    let mine = models.iter().flatten().filter(|m| *m == model).count();
    match (mine, others.is_empty()) {
        (_, true) => Ok(()),
        (0, false) => Err(format!(
            "MOSAIC_EMBEDDER: the catalog's vectors were computed by {} and this service would \
             embed queries with {model}; the two cannot be compared: run `mosaic embed` with \
             this embedder, or choose the catalog's",
            others.into_iter().collect::<Vec<_>>().join(", ")
        )),
        (n, false) => {
            tracing::warn!(
                model,
                others = ?others,
                "{n} of {} sampled catalog vectors are this embedder's, the rest another \
                 model's: finish `mosaic embed` before relying on the semantic arm",
                models.len()
            );
            Ok(())
        }
    }
}

/// Start-up check of a Bedrock embedder against the database column.
#[cfg(feature = "aws")]
fn check_embedding_dimension(
    model: &crate::aws::EmbeddingModel,
    column: Option<usize>,
) -> Result<(), String> {
    match column {
        Some(dim) => crate::aws::bedrock::check_dimension(model, dim),
        None => Err(
            "the database has no search.product_projection.embedding column; \
                           run `mosaic migrate` first"
                .into(),
        ),
    }
}

/// The local sentence-embedding model, loaded from its directory
/// ([`crate::embed::minilm::MiniLmEmbedder::default_dir`]).
#[cfg(feature = "local-model")]
pub fn local_embedder() -> Result<Arc<dyn Embedder>, String> {
    crate::embed::minilm::MiniLmEmbedder::load_default()
        .map(|e| Arc::new(e) as Arc<dyn Embedder>)
        .map_err(|e| {
            format!(
                "MOSAIC_EMBEDDER=local: cannot load the local embedding model ({e}); run \
                 scripts/fetch-model.sh or `make model`"
            )
        })
}

#[cfg(not(feature = "local-model"))]
pub fn local_embedder() -> Result<Arc<dyn Embedder>, String> {
    Err(
        "MOSAIC_EMBEDDER=local: the local model is not built into this binary; set \
         MOSAIC_EMBEDDER to `bedrock:<model>`, `hashing` or `none`"
            .into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(vars: &[(&str, &str)]) -> Result<Settings, String> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::from_lookup(move |k| {
            vars.iter()
                .find(|(name, _)| name == k)
                .map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn settings_from_the_environment() {
        let s = settings(&[]).unwrap();
        assert_eq!(s.embedder, EmbedderSetting::Local);
        assert_eq!(s.reranker, RerankerSetting::Local);
        assert!(!s.allow_anonymous);
        assert!(matches!(s.proof_key, ProofKeySetting::None));
        assert_eq!(s.database_url, None);
        let s = settings(&[
            ("MOSAIC_EMBEDDER", "hashing"),
            ("MOSAIC_RERANKER", "local"),
            ("MOSAIC_ALLOW_ANONYMOUS", "TRUE"),
            (
                "MOSAIC_PRINCIPAL_PROOF_KEY",
                "0123456789abcdef0123456789abcdef",
            ),
            ("MOSAIC_DATABASE_URL", "postgres://u@h/db"),
        ])
        .unwrap();
        assert_eq!(s.embedder, EmbedderSetting::Hashing(384));
        assert_eq!(s.reranker, RerankerSetting::Local);
        assert!(s.allow_anonymous);
        assert!(matches!(s.proof_key, ProofKeySetting::Inline(_)));
        assert_eq!(s.database_url.as_deref(), Some("postgres://u@h/db"));
        assert_eq!(s.read_database_url, None);
        let s = settings(&[
            ("MOSAIC_DATABASE_URL", "postgres://u@h/db"),
            ("MOSAIC_READ_DATABASE_URL", "postgres://u@replica/db"),
        ])
        .unwrap();
        assert_eq!(
            s.read_database_url.as_deref(),
            Some("postgres://u@replica/db")
        );
        assert_eq!(
            settings(&[
                ("MOSAIC_EMBEDDER", "hashing"),
                ("MOSAIC_EMBEDDING_DIM", "64")
            ])
            .unwrap()
            .embedder,
            EmbedderSetting::Hashing(64)
        );
        assert_eq!(
            settings(&[("MOSAIC_EMBEDDER", "hashing:1024")])
                .unwrap()
                .embedder,
            EmbedderSetting::Hashing(1024)
        );
        assert!(matches!(
            settings(&[("MOSAIC_EMBEDDER", "bedrock:titan-v2")])
                .unwrap()
                .embedder,
            EmbedderSetting::Bedrock(_)
        ));
        for (k, v) in [
            ("MOSAIC_EMBEDDER", "word2vec"),
            ("MOSAIC_EMBEDDER", "hashing:0"),
            ("MOSAIC_EMBEDDING_DIM", "many"),
            ("MOSAIC_RERANKER", "cohere"),
            ("MOSAIC_ALLOW_ANONYMOUS", "yes"),
            ("MOSAIC_LEXICAL_LIMIT", "x"),
            ("MOSAIC_PRINCIPAL_PROOF_KEY", "too short"),
            ("MOSAIC_READ_DATABASE_URL", "postgres://u@replica/db"),
        ] {
            assert!(settings(&[(k, v)]).is_err(), "{k}={v}");
        }
    }
}
