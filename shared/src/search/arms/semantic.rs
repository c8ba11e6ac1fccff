//! The semantic arm: the query vector against the catalog's, routed by the
//! filters' selectivity to an exact scan, the HNSW walks (the whole
//! catalog's graph, each domain's, a code's product line beside them) or, for
//! a query far from its domain filter, that domain scored exactly.

use super::*;

/// Semantic arm with selectivity routing. Expects the HNSW settings applied
/// with SET LOCAL by the caller from the same `profile`
/// ([`apply_settings`]): the HNSW scans read them, and the statements that
/// change them for one walk set them back to the profile's.
///
/// The route follows a count of the eligible rows that stops past
/// `semantic_exact_threshold`. When the catalog's vocabulary shows that one
/// of the query's negated words is held by all but at most that many
/// products, the arm takes the exact route without the count, which would
/// have tested the text of every row that holds the word only to find
/// few that do not.
///
/// Under a domain filter the walk is confined to that domain's graph. A
/// query none of whose nearest products (across the catalog) are in that
/// domain lies far from every node of the graph, where a greedy walk
/// settles in the first region it reaches; from
/// `semantic_domain_walk_min_rows` products such a walk returns
/// `semantic_far_domain_overfetch` rows (route `hnsw_long_walk`): past its
/// first candidate list the iterative scan walks on from the nearest
/// nodes it left aside. Where the domain holds at most
/// `semantic_far_exact_max_rows` embedded products (its graph's entries in
/// the planner's statistics), the
/// arm scores all of them exactly instead (route `exact_far_domain`), from
/// the index that holds the domains' vectors (migration 0024), in two
/// halves on `walks` and `db`: exact recall, for about what the longest
/// walks cost the database. The check is a short walk of the whole
/// catalog's graph that travels with the selectivity probe.
///
/// `written` is the query as written, without its negated terms: when it
/// carries a model code or SKU with a stem, the HNSW route also scores that
/// code's product line and its brands exactly ([`graph_walks`]).
pub async fn semantic<C: GenericClient>(
    db: &C,
    elig: &Eligibility,
    written: &str,
    vector: &Vector,
    profile: &RetrievalProfile,
) -> Result<ArmResult, tokio_postgres::Error> {
    semantic_on(db, db, elig, written, vector, profile).await
}

/// [`semantic`] with the walks of each domain's graph on `walks`, beside
/// the whole catalog's walk and the code's family on `db`: on another
/// connection (and transaction) they run at the same time, on two cores
/// instead of one after another. When the arm walks no domain's graph (a
/// domain or category filter, a smaller catalog), the code's family goes
/// on `walks` instead, beside the walk. With `walks` the same client as
/// `db`, the statements go out in the same order as [`semantic`]'s.
pub async fn semantic_on<C: GenericClient>(
    db: &C,
    walks: &C,
    elig: &Eligibility,
    written: &str,
    vector: &Vector,
    profile: &RetrievalProfile,
) -> Result<ArmResult, tokio_postgres::Error> {
    let t = std::time::Instant::now();
    let limit = profile.semantic_limit;
    let probe = profile.semantic_exact_threshold + 1;
    // The probe and, when the filters leave every domain open, the domain
    // list go out together: one round trip. Under a domain filter, the
    // check of the query's nearest products goes with them.
    let may_walk_domains = may_walk_domains(elig, profile);
    let may_scan_far = may_scan_far_domain(elig, profile);
    // Only where its answer can change the route: a longer walk, or an
    // exact scan these filters allow.
    let far_check = elig
        .domain
        .as_ref()
        .filter(|_| profile.semantic_far_domain_overfetch > 0 || may_scan_far);
    let (probe_sql, probe_params) = probe_statement(elig, &probe);
    let near_check = async {
        let Some(domain) = far_check else {
            return Ok(None);
        };
        let params = [
            (vector as &(dyn ToSql + Sync), vector_type()),
            (domain, Type::TEXT),
            (&profile.semantic_far_domain_check_rows, Type::INT8),
            (&profile.semantic_domain_walk_min_rows, Type::INT8),
        ];
        let (_, near, _) = tokio::try_join!(
            set_walk(
                db,
                profile.semantic_far_domain_check_ef,
                profile.hnsw_max_scan_tuples
            ),
            db.query_typed_one(NEAR_DOMAIN_SQL, &params),
            profile_walk(db, profile),
        )?;
        Ok(Some((near.get::<_, i64>(0), near.get::<_, Option<i64>>(1))))
    };
    let (counted, domains, near) = tokio::try_join!(
        db.query_typed_one(probe_sql, &probe_params),
        async {
            match may_walk_domains {
                true => db.query_typed(DOMAINS_SQL, &[]).await,
                false => Ok(Vec::new()),
            }
        },
        near_check,
    )?;
    let catalog_rows: i64 = counted.get(1);
    // Without a count, the vocabulary holds a negated word in all but at
    // most the threshold's products (`eligible_count_negated.sql`): that
    // estimate stands for the count, and the route is exact.
    let (eligible, held_by_a_negated_word) = match counted.get::<_, Option<i64>>(0) {
        Some(n) => (n, None),
        None => (counted.get::<_, i64>(2), Some(counted.get::<_, i64>(3))),
    };
    let large = catalog_rows >= profile.semantic_domain_walk_min_rows;
    let listed = may_walk_domains.then_some(domains.len());
    let walkable = profile.walks_domains(domains.len());
    let not_walked = (large && !walkable).then_some(domains.len());
    let domains: Vec<String> = match large && walkable {
        true => domains.iter().map(|r| r.get(0)).collect(),
        false => Vec::new(),
    };
    let far = large && near.is_some_and(|(n, _)| n == 0);
    // A far query whose domain is small enough is scored exactly, from the
    // index of the domains' vectors; otherwise its graph is walked longer.
    let far_exact = far
        && may_scan_far
        && near
            .and_then(|(_, rows)| rows)
            .is_some_and(|rows| rows <= profile.semantic_far_exact_max_rows);
    // The exact scan of a far domain, in two halves (by a hash of the
    // product id, which the index holds): the second on `walks`, so that
    // on another connection the two run at the same time, on two cores.
    let far_scan = || async {
        let (mut c, second) = tokio::try_join!(
            exact_scan(db, elig, vector, limit, Some(0)),
            exact_scan(walks, elig, vector, limit, Some(1))
        )?;
        c.extend(second);
        Ok::<_, tokio_postgres::Error>(nearest_once(c, limit))
    };
    let long_walk = far && profile.semantic_far_domain_overfetch > 0;
    let exact = || exact_scan(db, elig, vector, limit, None);
    let (mut family, mut domain_walks, mut family_on_walks) = (None, None, false);
    let mut domains_not_walked = None;
    let (cands, route, v) = if eligible <= profile.semantic_exact_threshold {
        let c = exact().await?;
        let v = verdict(c.len(), limit);
        (c, SemanticRoute::Exact, v)
    } else if far_exact {
        let c = far_scan().await?;
        let v = verdict(c.len(), limit);
        (c, SemanticRoute::ExactFarDomain, v)
    } else {
        let stem = family_stem(written, profile);
        let walked_domains = !domains.is_empty();
        domain_walks = walked_domains.then_some(domains.len());
        domains_not_walked = not_walked;
        let rows = match long_walk {
            true => profile.semantic_far_domain_overfetch,
            false => profile.semantic_overfetch,
        };
        let walked = graph_walks(
            (db, walks),
            elig,
            vector,
            profile,
            rows,
            domains,
            stem.as_deref(),
        )
        .await?;
        let (c, first_walk_filled) = (walked.rows, walked.first_walk_filled);
        family = walked.family;
        family_on_walks = walked.family_on_walks;
        let refilled = match first_walk_filled {
            true => None,
            false => refill(db, elig, vector, profile, c.clone()).await?,
        };
        if let Some(c) = refilled {
            (c, SemanticRoute::HnswUnderfilledThenLongWalk, Verdict::Full)
        } else if !first_walk_filled {
            // The iterative scan hit max_scan_tuples before filling the
            // limit although more than `threshold` rows are eligible:
            // complete the arm with an exact scan rather than underfill.
            let c = exact().await?;
            let v = verdict(c.len(), limit);
            (c, SemanticRoute::HnswUnderfilledThenExact, v)
        } else if walked_domains {
            (c, SemanticRoute::HnswDomainWalks, Verdict::Full)
        } else if long_walk {
            (c, SemanticRoute::HnswLongWalk, Verdict::Full)
        } else {
            (c, SemanticRoute::Hnsw, Verdict::Full)
        }
    };
    let mut arm = ArmResult::new(cands, limit, v, Some(ArmMode::Semantic(route)), ms_since(t));
    arm.eligible_estimate = Some(eligible);
    arm.held_by_a_negated_word = held_by_a_negated_word;
    arm.identifier_family = family;
    arm.family_on_walks = family.is_some() && family_on_walks;
    arm.domain_walks = domain_walks;
    arm.domains_not_walked = domains_not_walked;
    arm.catalog_rows = Some(catalog_rows);
    arm.catalog_domains = listed;
    Ok(arm)
}

/// The selectivity probe that counts eligible rows up to `stop` and its
/// parameters: `eligible_count_negated.sql` when the query has negated
/// words the catalog's vocabulary can hold, `eligible_count.sql` otherwise.
/// Either row is (count or NULL, catalog size, estimate, most holders).
fn probe_statement<'a>(elig: &'a Eligibility, stop: &'a i64) -> (&'static str, Vec<Typed<'a>>) {
    match elig.negated_vocabulary() {
        words @ Some(_) => (
            ELIGIBLE_COUNT_NEGATED_SQL,
            elig.typed(&[(stop, Type::INT8), (words, Type::TEXT_ARRAY)]),
        ),
        None => (ELIGIBLE_COUNT_SQL, elig.typed(&[(stop, Type::INT8)])),
    }
}

/// The stem of the query's code whose product line the semantic arm's
/// HNSW route scores exactly beside its walks (`written`: the query as
/// written, without its negated terms); `None` when the setting is off or
/// the query carries no code with a stem.
pub fn family_stem(written: &str, profile: &RetrievalProfile) -> Option<String> {
    match profile.semantic_identifier_family {
        0 => None,
        _ => crate::search::understand::identifier_stem(written),
    }
}

/// Whether the semantic arm may scan a domain filter's products exactly,
/// in two halves, for a query far from them (`semantic_far_exact_max_rows`):
/// only where every other filter reads a column that migration 0024's index
/// holds (availability, stock, price, rating), so the scan reads the index
/// alone. A category, brand, attribute or negated word would make it read
/// every row of the domain from the table: the graph is walked then.
pub fn may_scan_far_domain(elig: &Eligibility, profile: &RetrievalProfile) -> bool {
    profile.semantic_far_exact_max_rows > 0
        && elig.domain.is_some()
        && elig.category_key.is_none()
        && elig.brand.is_none()
        && elig.attributes.is_none()
        && elig.negated.is_none()
}

/// Whether the semantic arm's HNSW route may walk each domain's graph for
/// these filters (it does from `semantic_domain_walk_min_rows` products): a
/// domain or category filter already confines the walk to one domain.
pub fn may_walk_domains(elig: &Eligibility, profile: &RetrievalProfile) -> bool {
    profile.semantic_domain_walk_ef > 0 && elig.domain.is_none() && elig.category_key.is_none()
}

/// After a walk that stopped short of the limit: when more than
/// `semantic_refill_scan_tuples` rows are eligible (counted up to one
/// more), the graph walked again with that scan budget and
/// `semantic_refill_mem_multiplier`, merged with what the walks had found
/// (`found`). `None` when it is off, when fewer rows are eligible (the exact
/// scan then reads no more rows than the walk would visit) or when this walk
/// stops short too; the caller then completes the arm exactly.
async fn refill<C: GenericClient>(
    db: &C,
    elig: &Eligibility,
    vector: &Vector,
    profile: &RetrievalProfile,
    found: Vec<(String, f64)>,
) -> Result<Option<Vec<(String, f64)>>, tokio_postgres::Error> {
    let budget = profile.semantic_refill_scan_tuples;
    if budget == 0 {
        return Ok(None);
    }
    let over = budget + 1;
    let (sql, params) = probe_statement(elig, &over);
    let counted = db.query_typed_one(sql, &params).await?;
    // No count: by the vocabulary, the negated words leave at most the
    // budget's products.
    if counted.get::<_, Option<i64>>(0).is_none_or(|n| n <= budget) {
        return Ok(None);
    }
    let limit = profile.semantic_limit;
    let (budget, memory) = (
        budget.to_string(),
        profile.semantic_refill_mem_multiplier.to_string(),
    );
    // The settings, the walk and the profile's settings again: one round
    // trip, in this order.
    let settings: [(&(dyn ToSql + Sync), Type); 2] = [(&budget, Type::TEXT), (&memory, Type::TEXT)];
    let (_, walked, _, _) = tokio::try_join!(
        db.execute_typed(
            "SELECT set_config('hnsw.max_scan_tuples', $1, true), set_config('hnsw.scan_mem_multiplier', $2, true)",
            &settings,
        ),
        hnsw_walk(db, elig, vector, limit),
        profile_walk(db, profile),
        // The session's own value again (the profile does not set it).
        db.execute_typed("SET LOCAL hnsw.scan_mem_multiplier TO DEFAULT", &[]),
    )?;
    if (walked.len() as i64) < limit {
        return Ok(None);
    }
    let mut c = found;
    c.extend(walked);
    Ok(Some(nearest_once(c, limit)))
}

/// One walk of the HNSW route's statement: `rows` eligible rows, nearest
/// first as the iterative scan meets them, each with its exact score.
async fn hnsw_walk<C: GenericClient>(
    db: &C,
    elig: &Eligibility,
    vector: &Vector,
    rows: i64,
) -> Result<Vec<(String, f64)>, tokio_postgres::Error> {
    let extra = [
        (vector as &(dyn ToSql + Sync), vector_type()),
        (&rows, Type::INT8),
    ];
    db.query_typed(SEMANTIC_HNSW_SQL, &elig.typed(&extra))
        .await
        .map(|found| scored(&found))
}

/// The exact route's scan of the eligible rows, or of one half of them
/// (`half` 0 or 1, by a hash of the product id; the far domain's scan): the
/// nearest `limit`, each with its exact score. The statement returns the
/// distance it sorts by, so each row's distance is taken once; the score
/// is `1 - distance`, the same double the HNSW route's statement computes.
async fn exact_scan<C: GenericClient>(
    db: &C,
    elig: &Eligibility,
    vector: &Vector,
    limit: i64,
    half: Option<i32>,
) -> Result<Vec<(String, f64)>, tokio_postgres::Error> {
    let extra = [
        (vector as &(dyn ToSql + Sync), vector_type()),
        (&limit, Type::INT8),
        (&half, Type::INT4),
    ];
    db.query_typed(SEMANTIC_EXACT_SQL, &elig.typed(&extra))
        .await
        .map(|rows| scored_by_distance(&rows))
}

/// Rows of several walks (each with its exact score): the best `limit`,
/// each product once. Relaxed order and several walks leave them unsorted.
fn nearest_once(mut c: Vec<(String, f64)>, limit: i64) -> Vec<(String, f64)> {
    c.sort_by(best_first);
    let mut seen = std::collections::HashSet::new();
    c.retain(|(id, _)| seen.insert(id.clone()));
    c.truncate(limit.max(0) as usize);
    c
}

/// `hnsw.ef_search` and `hnsw.max_scan_tuples` for the HNSW scans that
/// follow on `db`, until the transaction ends or they are set again.
async fn set_walk<C: GenericClient>(
    db: &C,
    ef: i64,
    tuples: i64,
) -> Result<(), tokio_postgres::Error> {
    let (ef, tuples) = (ef.to_string(), tuples.to_string());
    db.execute_typed(
        "SELECT set_config('hnsw.ef_search', $1, true), set_config('hnsw.max_scan_tuples', $2, true)",
        &[(&ef, Type::TEXT), (&tuples, Type::TEXT)],
    )
    .await
    .map(|_| ())
}

/// The profile's `hnsw.ef_search` and `hnsw.max_scan_tuples` again, after
/// a walk that set its own ([`set_walk`]).
async fn profile_walk<C: GenericClient>(
    db: &C,
    profile: &RetrievalProfile,
) -> Result<(), tokio_postgres::Error> {
    set_walk(db, profile.hnsw_ef_search, profile.hnsw_max_scan_tuples).await
}

/// `step` when `wanted`, otherwise nothing (and nothing is sent).
async fn only_if<F>(wanted: bool, step: F) -> Result<(), tokio_postgres::Error>
where
    F: std::future::Future<Output = Result<(), tokio_postgres::Error>>,
{
    match wanted {
        true => step.await,
        false => Ok(()),
    }
}

/// The HNSW route: the walk of the whole catalog's graph (or of the one
/// domain's graph a domain filter selects), `rows` deep, and the
/// walks of each of `domains`' graphs with `semantic_domain_walk_ef`; the
/// best `semantic_limit` rows of all of them by exact distance.
///
/// A walk can settle among near-duplicate products far from the query's
/// true neighbours (a cluster larger than the walk's candidate list holds
/// it); a longer walk or a walk of a smaller graph can leave or avoid it.
/// Every row carries its exact distance, so adding walks only ever replaces
/// a row with a nearer one. [`semantic`] passes no domains where they
/// cannot help: under a domain or category filter (the first walk is
/// already confined to one domain's products), in catalogs (the probe's
/// estimate) smaller than `semantic_domain_walk_min_rows`, and in catalogs
/// of more than `semantic_domain_walk_max_domains` domains.
///
/// With a `stem` (a code's letters, [`crate::search::understand::identifier_stem`]),
/// the products whose identity text holds it, up to
/// `semantic_identifier_family` of them, are scored exactly as well
/// (`sql/semantic_family.sql`): a code's vector lies among its product
/// line's near-identical texts, a cluster a walk can miss for another
/// line's. So are up to `semantic_identifier_brand` other products of the
/// line's brands, which can lie nearer than the line itself.
///
/// All the walks, their settings and the family go out at once, in order,
/// and the connection pipelines them: one round trip. The domain walks and
/// their settings go to `walks`, the rest to `db`, except the family when
/// there are no domain walks: it goes to `walks`, beside the first walk
/// (the same client as `db` when the search has no lane for it).
async fn graph_walks<C: GenericClient>(
    (db, walks): (&C, &C),
    elig: &Eligibility,
    vector: &Vector,
    profile: &RetrievalProfile,
    rows: i64,
    domains: Vec<String>,
    stem: Option<&str>,
) -> Result<Walked, tokio_postgres::Error> {
    // SET LOCAL for the domain walks, then back to the profile's: only HNSW
    // scans read them. Each domain walk stops looking after
    // `semantic_domain_walk_tuples` graph elements (its first candidate
    // list is walked whole; the budget is checked when it resumes past
    // it): under a filter it brings the eligible rows among those, and the
    // whole catalog's walk does the looking further.
    let walks_domains = !domains.is_empty();
    let domain_rows = profile.semantic_limit.min(profile.semantic_domain_walk_ef);
    let domain_walks = domains.iter().map(|d| async move {
        let e = Eligibility {
            domain: Some(d.clone()),
            ..elig.clone()
        };
        hnsw_walk(walks, &e, vector, domain_rows).await
    });
    let domain_settings = set_walk(
        walks,
        profile.semantic_domain_walk_ef,
        profile.semantic_domain_walk_tuples,
    );
    let back = profile_walk(walks, profile);
    // The family goes on the walks' lane when no domain walk needs it (a
    // domain or category filter, or a catalog too small for them): there it
    // runs beside the walk instead of after it.
    let (family_db, family_on_walks) = match walks_domains {
        true => (db, false),
        false => (walks, true),
    };
    let family = async {
        let Some(stem) = stem else {
            return Ok(None);
        };
        let extra = [
            (vector as &(dyn ToSql + Sync), vector_type()),
            (&profile.semantic_limit, Type::INT8),
            (&stem, Type::TEXT),
            (&profile.semantic_identifier_family, Type::INT8),
            (&profile.semantic_identifier_brand, Type::INT8),
        ];
        let found = family_db
            .query_typed(SEMANTIC_FAMILY_SQL, &elig.typed(&extra))
            .await?;
        let eligible = found.first().map_or(0, |r| r.get::<_, i64>(2));
        Ok(Some((scored(&found), eligible)))
    };
    // try_join! polls in order, so the statements are sent in this order.
    let (mut c, _, found, _, family) = tokio::try_join!(
        hnsw_walk(db, elig, vector, rows),
        only_if(walks_domains, domain_settings),
        futures_util::future::try_join_all(domain_walks),
        only_if(walks_domains, back),
        family,
    )?;
    let first_walk_filled = c.len() as i64 >= profile.semantic_limit;
    c.extend(found.into_iter().flatten());
    let family = family.map(|(rows, eligible)| {
        c.extend(rows);
        eligible
    });
    Ok(Walked {
        rows: nearest_once(c, profile.semantic_limit),
        first_walk_filled,
        family,
        family_on_walks,
    })
}

/// What [`graph_walks`] found.
struct Walked {
    /// The best `semantic_limit` rows of every walk (and of the family).
    rows: Vec<(String, f64)>,
    /// Whether the first walk alone filled the limit: the domain walks may
    /// stop looking early, and the family is no walk, so rows they add do
    /// not show that the iterative scan found every eligible row it should
    /// have.
    first_walk_filled: bool,
    /// How many eligible products of the identifier's family were scored.
    family: Option<i64>,
    /// Whether the family's statement went to the walks' client.
    family_on_walks: bool,
}
