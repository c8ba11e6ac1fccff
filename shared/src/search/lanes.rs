//! Running the three arms of a hybrid search, on one connection or several.
//!
//! Every arm is a single SQL statement with the whole eligibility predicate
//! inside it, run in a read-only transaction that carries the arms' `SET
//! LOCAL` settings. On one connection the statements are pipelined but
//! PostgreSQL still executes them one after another, so the search costs the
//! sum of its arms. When the pool has idle connections, each arm gets a lane
//! of its own (its own connection and transaction) and the database runs the
//! arms at the same time; the search then costs roughly its slowest arm.
//! That is usually the semantic arm, whose walks of each domain's graph
//! (catalogs from `semantic_domain_walk_min_rows`) take a fourth lane when
//! the profile allows four, beside its walk of the whole catalog's graph;
//! a context that last saw the catalog smaller opens no such lane
//! ([`crate::CatalogSize`]). Where it walks no domain's graph, a query
//! that carries a code takes the fourth lane for the code's family
//! (`semantic_identifier_family`), scored beside the walk instead of after
//! it, and a query far from its domain filter's products takes it for half
//! of the exact scan of that domain (`semantic_far_exact_max_rows`).
//!
//! Extra lanes are only taken when the pool can hand them over without
//! waiting: a one-connection pool (one connection per Lambda container) or a
//! busy server runs every arm on the search's own connection, exactly as
//! before. The transactions are READ COMMITTED, so each statement has its
//! own snapshot whether the arms share a connection or not. The lane each arm
//! ran on is recorded in its [`ArmResult::connection`].
//!
//! Every lane comes from the context's read pool ([`Ctx::read_pool`]): a
//! replica when one is configured (then each arm's [`ArmResult::pool`] says
//! `reader`), else the writer.

use super::arms::{self, ArmResult, Eligibility, SkipReason};
use super::fusion::Arm;
use super::understand::{self, Understanding};
use super::{embed_query, Variant};
use crate::context::Ctx;
use crate::db::{self, Conn};
use crate::error::Error;
use crate::profile::RetrievalProfile;
use deadpool_postgres::{Pool, Timeouts};
use futures_util::future::try_join_all;
use std::time::{Duration, Instant};
use tokio_postgres::Client;

/// What the arms of one hybrid search produced.
pub(crate) struct ArmsOutcome {
    pub exact_ids: Vec<String>,
    pub lexical: ArmResult,
    pub trigram: ArmResult,
    pub semantic: ArmResult,
    /// The query-understanding step's record (corrections, identifiers).
    pub understanding: Understanding,
    /// The understanding's milliseconds, with the start of the own lane's
    /// transaction that travels with it.
    pub understand_ms: f64,
    pub embed_ms: f64,
    pub arms_ms: f64,
    /// Set when the semantic arm could not run (no query vector).
    pub warning: Option<String>,
    /// The extra lanes, their read-only transactions still open: [`finish`]
    /// commits them while hydration reads, off the search's critical path.
    pub spare: Vec<Conn>,
}

/// The lane (index into the search's connections) an arm runs on. The
/// exact-identifier lookup rides with the lexical arm. With two lanes the
/// semantic arm shares the lexical arm's: the trigram arm is the costliest.
pub(crate) fn lane_of(arm: Arm, lanes: usize) -> usize {
    (arm as usize) % lanes.max(1)
}

/// The lane of the semantic arm's walks of each domain's graph: a fourth
/// lane when there is one, otherwise the semantic arm's own.
pub(crate) fn domain_walks_lane(lanes: usize) -> usize {
    match lanes {
        4.. => 3,
        _ => lane_of(Arm::Semantic, lanes),
    }
}

/// Whether this search's semantic arm may walk each domain's graph
/// ([`arms::may_walk_domains`]).
fn enabled_semantic_walks(
    variant: &Variant,
    elig: &Eligibility,
    profile: &RetrievalProfile,
) -> bool {
    variant.arms[Arm::Semantic as usize] && arms::may_walk_domains(elig, profile)
}

/// Up to `wanted` more connections, only as far as the pool has them idle or
/// may open them with nobody waiting; never waits, and a failure to get one
/// only means fewer lanes.
async fn spare_connections(ctx: &Ctx, wanted: usize) -> Vec<Conn> {
    let (pool, canceller): (&Pool, _) = ctx.read_pool();
    let mut spare = Vec::with_capacity(wanted);
    let now = Timeouts {
        wait: Some(Duration::ZERO),
        ..pool.timeouts()
    };
    while spare.len() < wanted {
        let s = pool.status();
        let free = s.available > 0 || (s.size < s.max_size && s.waiting == 0);
        if !free {
            break;
        }
        match pool.timeout_get(&now).await {
            Ok(conn) => spare.push(Conn::wrap(conn, canceller)),
            Err(_) => break,
        }
    }
    spare
}

/// Runs the exact-identifier lookup and the three arms (those `variant`
/// enables) for query `q`; `positive` is `q` without its negated terms. The
/// query-understanding step runs first, on the search's own lane, and the
/// text arms search for the query it settles on ([`Understanding::query`]);
/// the exact-identifier lookup and the semantic arm keep the words as
/// written. The query is embedded from the start, while the lanes open and
/// the text arms run, and the semantic arm starts as soon as the vector and
/// its lane are ready.
///
/// Round trips: the own lane's transaction, its settings, the
/// understanding and, when they are due, the price statistics (which choose
/// how the lexical arm checks a price filter) go out together
/// (`db::begin`), the other lanes open theirs at the same time, and the
/// semantic arm's lanes carry its first statements in the same round trip
/// as their `BEGIN`. Every lane's read-only transaction is left open: the
/// caller's next reads (hydration) end the own lane's, and [`finish`]
/// commits the others at the same time, so no `COMMIT` waits on the way.
pub(crate) async fn run_arms(
    ctx: &Ctx,
    own: &mut tokio_postgres::Client,
    variant: &Variant,
    elig: &Eligibility,
    q: &str,
    positive: &str,
) -> Result<ArmsOutcome, Error> {
    let profile = &ctx.profile;
    let started = Instant::now();
    let enabled = |arm: Arm| variant.arms[arm as usize];
    // A fourth lane only carries the semantic arm's domain walks, its
    // code's family where no domain walk runs, or half of a far domain's
    // exact scan: none for a query without a code where neither the walks
    // nor that scan can run (these filters, or a catalog last seen too
    // small for them, or the walks last seen with too many domains).
    let large = ctx.catalog.may_reach(profile.semantic_domain_walk_min_rows);
    let walks = enabled_semantic_walks(variant, elig, profile)
        && large
        && ctx.catalog.may_walk_domains(profile);
    let family = enabled(Arm::Semantic) && arms::family_stem(positive, profile).is_some();
    let far_scan = enabled(Arm::Semantic) && arms::may_scan_far_domain(elig, profile) && large;
    let wanted = match walks || family || far_scan {
        true => profile.arm_connections,
        false => profile.arm_connections.min(3),
    };
    let spare = spare_connections(ctx, wanted.saturating_sub(1)).await;
    let mut lanes: Vec<&tokio_postgres::Client> = vec![&*own];
    lanes.extend(spare.iter().map(|c| &**c));
    let lane = |arm: Arm| lanes[lane_of(arm, lanes.len())];
    // The text arms search for the corrected words; the semantic arm embeds
    // the query as written (see `understand`).
    let written = positive;
    // Where neither of the semantic arm's lanes is the own lane, the
    // semantic side opens them itself and sends its first statements right
    // behind the `BEGIN` (one round trip, in order on each connection),
    // beside the understanding. Otherwise it shares the own lane, and waits
    // until every lane is open and the understanding has answered.
    let n = lanes.len();
    let (arm_lane, walks_lane) = (lane_of(Arm::Semantic, n), domain_walks_lane(n));
    let semantic_lanes: Vec<usize> = match arm_lane == 0 || walks_lane == 0 {
        true => Vec::new(),
        false if arm_lane == walks_lane => vec![arm_lane],
        false => vec![arm_lane, walks_lane],
    };
    let (opened, lanes_open) = tokio::sync::oneshot::channel::<()>();

    let text_side = async {
        let t = Instant::now();
        let own_lane = async {
            let (_, understanding, price_share) = tokio::try_join!(
                open(lanes[0], profile),
                understand::understand(lanes[0], written, profile),
                price_share(lanes[0], ctx, enabled(Arm::Lexical), elig),
            )?;
            Ok::<_, tokio_postgres::Error>((understanding, price_share, arms::ms_since(t)))
        };
        let other_lanes = try_join_all(
            (1..n)
                .filter(|i| !semantic_lanes.contains(i))
                .map(|i| open(lanes[i], profile)),
        );
        let ((understanding, price_share, understand_ms), _) =
            tokio::try_join!(own_lane, other_lanes)?;
        let _ = opened.send(());
        let positive = understanding.query(written);
        let lexical_elig = elig.clone().with_price_share(price_share);
        let lexical_side = async {
            tokio::try_join!(
                arms::exact_identifier(lane(Arm::Lexical), elig, q),
                lexical_arm(
                    lane(Arm::Lexical),
                    enabled(Arm::Lexical),
                    &lexical_elig,
                    (positive, written),
                    profile
                ),
            )
        };
        let codes = understanding.line_codes();
        let trigram_side = trigram_arm(
            lane(Arm::Trigram),
            enabled(Arm::Trigram),
            elig,
            (
                positive,
                profile.query_correction != 0
                    && match profile.trigram_corrected_perfect {
                        0 => understanding.spelled_as_written(),
                        _ => understanding.spelled_once_corrected(),
                    },
                codes.as_deref(),
            ),
            profile,
        );
        let (lexical_out, trigram) = tokio::try_join!(lexical_side, trigram_side)?;
        Ok::<_, Error>((understanding, understand_ms, lexical_out, trigram))
    };
    let semantic_side = async {
        // Polled first, so each `BEGIN` goes out ahead of the arm's
        // statements on its connection.
        let own_lanes = async {
            try_join_all(semantic_lanes.iter().map(|&i| open(lanes[i], profile))).await?;
            Ok::<_, Error>(())
        };
        let arm = async {
            let embedded = embedding(ctx, enabled(Arm::Semantic), written).await;
            if semantic_lanes.is_empty() {
                // Only fails when the lanes did not open, whose error the
                // join returns first.
                lanes_open
                    .await
                    .map_err(|_| Error::Internal("the arm lanes did not open".into()))?;
            }
            let on = (lanes[arm_lane], lanes[walks_lane]);
            let embedded = match embedded {
                Some((Ok(v), ms)) => Some((fits_column(ctx, on.0, v).await?, ms)),
                other => other,
            };
            Ok::<_, Error>(semantic_arm(on, embedded, elig, written, profile).await?)
        };
        let (_, out) = tokio::try_join!(own_lanes, arm)?;
        Ok::<_, Error>(out)
    };
    let ((understanding, understand_ms, lexical_out, trigram), semantic_out) =
        tokio::try_join!(text_side, semantic_side)?;
    let ((exact_ids, mut lexical), mut trigram, (mut semantic, embed_ms, warning)) =
        (lexical_out, trigram, semantic_out);
    if let Some(products) = semantic.catalog_rows {
        ctx.catalog.remember(products);
    }
    if let Some(domains) = semantic.catalog_domains {
        ctx.catalog.remember_domains(domains);
    }
    mark_lanes(ctx, n, [&mut lexical, &mut trigram, &mut semantic]);
    Ok(ArmsOutcome {
        exact_ids,
        lexical,
        trigram,
        semantic,
        understanding,
        understand_ms,
        embed_ms,
        arms_ms: arms::ms_since(started),
        warning,
        spare,
    })
}

/// Opens a lane's read-only transaction with the arms' settings
/// (`arms::apply_settings`), both sent on the first poll: a caller that
/// joins it with the lane's first statements sends them in the same round
/// trip ([`db::begin`]).
pub(crate) async fn open(
    client: &Client,
    profile: &RetrievalProfile,
) -> Result<(), tokio_postgres::Error> {
    tokio::try_join!(
        db::begin(client, true),
        arms::apply_settings(client, profile)
    )?;
    Ok(())
}

/// Commits the extra lanes' read-only transactions and hands their
/// connections back to the pool: hydration, rerank and the receipt need
/// only the search's own. A lane that fails to commit is closed, not reused
/// ([`Conn`]).
pub(crate) async fn finish(spare: Vec<Conn>) -> Result<(), tokio_postgres::Error> {
    try_join_all(spare.iter().map(|c| db::commit(c))).await?;
    spare.iter().for_each(Conn::settle);
    Ok(())
}

/// Records on each arm (lexical, trigram, semantic) the lane it ran on and
/// whether it read the replica, and on the semantic arm the lane of its
/// domain walks when it took them, of its code's family when it scored
/// one, and of the second half of a far domain's exact scan.
fn mark_lanes(ctx: &Ctx, lanes: usize, results: [&mut ArmResult; 3]) {
    for (arm, result) in [Arm::Lexical, Arm::Trigram, Arm::Semantic]
        .into_iter()
        .zip(results)
    {
        result.connection = Some(lane_of(arm, lanes));
        result.pool = ctx.reader.as_ref().map(|_| crate::context::READER);
        if arm == Arm::Semantic && result.domain_walks.is_some() {
            result.walks_connection = Some(domain_walks_lane(lanes));
        }
        if arm == Arm::Semantic
            && result.mode == Some(arms::ArmMode::Semantic(arms::SemanticRoute::ExactFarDomain))
        {
            result.half_connection = Some(domain_walks_lane(lanes));
        }
        if arm == Arm::Semantic && result.identifier_family.is_some() {
            result.family_connection = Some(match result.family_on_walks {
                true => domain_walks_lane(lanes),
                false => lane_of(arm, lanes),
            });
        }
    }
}

/// The price filter's share of the catalog, which chooses how the lexical
/// arm checks the price ([`arms::PriceShare`]): only for a lexical arm under
/// a price filter, over a catalog that may be large enough for it to
/// matter, from the price statistics the context keeps, read again once
/// they are older than [`crate::context::PRICE_STATS_FOR`].
async fn price_share(
    tx: &Client,
    ctx: &Ctx,
    lexical: bool,
    elig: &Eligibility,
) -> Result<Option<arms::PriceShare>, tokio_postgres::Error> {
    let least = arms::PriceShare::least_rows(ctx.profile.lexical_scan_budget);
    if lexical && ctx.catalog.may_reach(least) {
        ctx.price_stats.share(tx, elig).await
    } else {
        Ok(None)
    }
}

/// The lexical arm for the understood query and the query as written
/// ([`arms::lexical_understood`]), unless the variant turned it off.
async fn lexical_arm(
    tx: &Client,
    enabled: bool,
    elig: &Eligibility,
    (positive, written): (&str, &str),
    profile: &RetrievalProfile,
) -> Result<ArmResult, tokio_postgres::Error> {
    match enabled {
        true => arms::lexical_understood(tx, elig, positive, written, profile).await,
        false => Ok(ArmResult::skipped(
            profile.lexical_limit,
            SkipReason::Disabled,
        )),
    }
}

/// The trigram arm, unless the variant turned it off or the query cannot
/// name an identity: then there is nothing for it to match
/// (`arms::identity_query`). `spelled`: every word was found as written;
/// `codes`: the product-line codes it names (see `arms::trigram`).
async fn trigram_arm(
    tx: &Client,
    enabled: bool,
    elig: &Eligibility,
    (positive, spelled, codes): (&str, bool, Option<&str>),
    profile: &RetrievalProfile,
) -> Result<ArmResult, tokio_postgres::Error> {
    match enabled {
        true if !arms::identity_query(positive) => Ok(ArmResult::skipped(
            profile.trigram_limit,
            SkipReason::DescriptiveQuery,
        )),
        true => arms::trigram(tx, elig, positive, (spelled, codes), profile).await,
        false => Ok(ArmResult::skipped(
            profile.trigram_limit,
            SkipReason::Disabled,
        )),
    }
}

/// The query's vector (or why there is none) and the milliseconds it took;
/// `None` when the variant turned the semantic arm off.
async fn embedding(
    ctx: &Ctx,
    enabled: bool,
    written: &str,
) -> Option<(Result<pgvector::Vector, String>, f64)> {
    let t = Instant::now();
    match enabled {
        true => Some((embed_query(ctx, written).await, arms::ms_since(t))),
        false => None,
    }
}

/// The query's vector when the database's embedding column takes it, a
/// warning otherwise: a vector of another dimension (an embedder that does
/// not match the migrated column) would fail the arm's statements and the
/// search with them, where DESIGN's rule for a failed embedding is to skip
/// the arm. The column's dimension is read through `tx` once per context,
/// unless the start-up read it ([`Ctx::embedding_column`]).
async fn fits_column(
    ctx: &Ctx,
    tx: &Client,
    v: pgvector::Vector,
) -> Result<Result<pgvector::Vector, String>, tokio_postgres::Error> {
    let column = match ctx.embedding_column.get() {
        Some(&d) => d,
        // Kept once the column exists; a database not migrated yet (0) is
        // asked again by the next search.
        None => match crate::db::embedding_dimension(tx).await? {
            Some(d) => *ctx.embedding_column.get_or_init(|| d),
            None => 0,
        },
    };
    let n = v.as_slice().len();
    Ok(match n == column {
        true => Ok(v),
        false => Err(format!(
            "semantic arm skipped: the query vector has {n} dimensions, the database's \
             embedding column {column}"
        )),
    })
}

/// The semantic arm on `tx` (its walks of each domain's graph on `walks`,
/// [`domain_walks_lane`]) for the query's vector (`written`: the query as
/// written, without its negated terms). Without one the arm is skipped,
/// with a warning when embedding failed. Returns the arm, the embedding's
/// milliseconds and the warning.
async fn semantic_arm(
    (tx, walks): (&Client, &Client),
    embedded: Option<(Result<pgvector::Vector, String>, f64)>,
    elig: &Eligibility,
    written: &str,
    profile: &RetrievalProfile,
) -> Result<(ArmResult, f64, Option<String>), tokio_postgres::Error> {
    match embedded {
        None => {
            let skipped = ArmResult::skipped(profile.semantic_limit, SkipReason::Disabled);
            Ok((skipped, 0.0, None))
        }
        Some((Ok(v), embed_ms)) => {
            let arm = arms::semantic_on(tx, walks, elig, written, &v, profile).await?;
            Ok((arm, embed_ms, None))
        }
        Some((Err(warning), embed_ms)) => {
            let skipped = ArmResult::skipped(profile.semantic_limit, SkipReason::NoQueryVector);
            Ok((skipped, embed_ms, Some(warning)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arms_share_lanes_round_robin() {
        let lanes = |n| Arm::ALL.map(|a| lane_of(a, n));
        assert_eq!(lanes(1), [0, 0, 0]);
        assert_eq!(lanes(2), [0, 1, 0]);
        assert_eq!(lanes(3), [0, 1, 2]);
        assert_eq!(lanes(4), [0, 1, 2]);
        let walks: Vec<usize> = (1..=4).map(domain_walks_lane).collect();
        assert_eq!(walks, [0, 0, 2, 3]);
    }
}
