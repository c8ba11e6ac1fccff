//! Hydration: the pool's catalog fields, read once after fusion in the
//! candidates' read-only transaction, and what the reranker reads of them.

use super::*;

/// A product's catalog fields, read once for the pool.
#[derive(Debug, Clone)]
pub(super) struct ProductRow {
    pub(super) sku: String,
    pub(super) model: String,
    pub(super) brand: String,
    pub(super) title: String,
    pub(super) domain: String,
    pub(super) category_key: String,
    pub(super) description: String,
    pub(super) price_cents: i64,
    pub(super) currency: String,
    pub(super) rating: Option<f32>,
    pub(super) availability: String,
    pub(super) attributes: Map<String, Value>,
    pub(super) source_uri: String,
    pub(super) revision: i32,
    /// The projection's lexical document (`tsvector` as text), when the
    /// reranker scores from the catalog.
    pub(super) document: Option<String>,
}

impl ProductRow {
    /// The rating as a result shows it, rounded to two decimals (a stated
    /// bound compares this one).
    pub(super) fn shown_rating(&self) -> Option<f64> {
        self.rating.map(|r| (f64::from(r) * 100.0).round() / 100.0)
    }

    /// A row of `sql/hydrate.sql`.
    fn from_row(r: &tokio_postgres::Row) -> Self {
        let attributes = match r.get::<_, Value>(12) {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        ProductRow {
            sku: r.get(1),
            model: r.get(2),
            brand: r.get(3),
            title: r.get(4),
            domain: r.get(5),
            category_key: r.get(6),
            description: r.get(7),
            price_cents: r.get(8),
            currency: r.get(9),
            rating: r.get(10),
            availability: r.get(11),
            attributes,
            source_uri: r.get(13),
            revision: r.get(14),
            document: r.get(15),
        }
    }

    /// The pool member as a reranker that reads `reads` sees it.
    pub(super) fn rerank_candidate(&self, reads: rerank::Reads) -> rerank::Candidate {
        rerank::Candidate {
            text: match reads {
                rerank::Reads::Text => self.rerank_text(),
                rerank::Reads::Catalog => String::new(),
            },
            identity_text: format!("{} {} {} {}", self.title, self.brand, self.model, self.sku),
            identifiers: vec![
                self.model.clone(),
                self.sku.clone(),
                format!("{} {}", self.brand, self.model),
            ],
            lexemes: self
                .document
                .as_deref()
                .map(rerank::parse_tsvector)
                .unwrap_or_default(),
        }
    }

    /// What the reranker reads: identity, taxonomy, attributes, description.
    fn rerank_text(&self) -> String {
        // A false flag is left out: "noise cancelling: false" must not
        // read as a match for "noise cancelling".
        let attrs: Vec<String> = self
            .attributes
            .iter()
            .filter_map(|(k, v)| {
                let key = k.replace('_', " ");
                match v {
                    Value::Bool(true) => Some(key),
                    Value::Bool(false) => None,
                    Value::String(s) => Some(format!("{key}: {s}")),
                    Value::Array(items) => Some(format!(
                        "{key}: {}",
                        items
                            .iter()
                            .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_string))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )),
                    other => Some(format!("{key}: {other}")),
                }
            })
            .collect();
        format!(
            "{}. {} {} {}. {}. {}. {}",
            self.title,
            self.brand,
            self.model,
            self.sku,
            self.category_key.replace('_', " "),
            attrs.join("; "),
            self.description
        )
    }
}

/// The pool with its catalog fields, and the query's lexeme statistics
/// when the reranker scores from the catalog.
pub(super) struct Hydrated {
    pub(super) members: Vec<Member>,
    pub(super) products: BTreeMap<String, ProductRow>,
    pub(super) lexeme_rows: Vec<tokio_postgres::Row>,
}

/// Whether the rerank stage will run with a reranker that scores from the
/// catalog (the local one), so that hydration reads what it needs.
pub(super) fn reads_catalog(ctx: &Ctx, rerank_query: Option<&str>, members: &[Member]) -> bool {
    rerank_query.is_some()
        && !members.is_empty()
        && ctx
            .reranker
            .as_ref()
            .is_some_and(|r| r.reads() == rerank::Reads::Catalog)
}

/// What [`hydrate`] gives back, with how long it took.
pub(super) struct HydrateOutcome {
    pub(super) hydrated: Hydrated,
    /// Members dropped: their product was deleted, or left the filters,
    /// after the arms read it.
    pub(super) dropped: usize,
    pub(super) ms: f64,
}

/// The pool's catalog fields, and the rerank stage's catalog statistics for
/// the query's lexemes, read in the read-only transaction the candidates
/// left open on `client` (bounded by its `statement_timeout`), which this
/// ends: the reranker itself touches no connection. Members whose product
/// is gone, or no longer passes `elig` (a catalog import committed since
/// the arms read it), are dropped.
pub(super) async fn hydrate(
    client: &mut tokio_postgres::Client,
    elig: &Eligibility,
    mut members: Vec<Member>,
    positive: Option<&str>,
    reads_catalog: bool,
) -> Result<HydrateOutcome, Error> {
    let t = Instant::now();
    let ids: Vec<String> = members.iter().map(|m| m.product_id.clone()).collect();
    // One round trip: the reads and the commit go out together
    // (`tokio::try_join!` sends them in order; see `db::begin`).
    let client = &*client;
    let lexemes = async {
        match (positive, reads_catalog) {
            (Some(p), true) => {
                client
                    .query_typed(include_str!("sql/query_lexemes.sql"), &[(&p, Type::TEXT)])
                    .await
            }
            _ => Ok(Vec::new()),
        }
    };
    let params = elig.typed(&[(&ids, Type::TEXT_ARRAY), (&reads_catalog, Type::BOOL)]);
    let (rows, lexeme_rows, _) = tokio::try_join!(
        client.query_typed(arms::HYDRATE_SQL, &params),
        lexemes,
        crate::db::commit(client),
    )?;
    let products: BTreeMap<String, ProductRow> = rows
        .iter()
        .filter(|r| r.get::<_, bool>("eligible"))
        .map(|r| (r.get(0), ProductRow::from_row(r)))
        .collect();
    let read = members.len();
    members.retain(|m| products.contains_key(&m.product_id));
    let dropped = read - members.len();
    // The pool is ranked here, once its members are final: 1..its size,
    // in the order the arms' stage gave (exact matches, then the fused
    // order; or the filters' order).
    for (i, m) in members.iter_mut().enumerate() {
        let p = &products[&m.product_id];
        m.pre_rerank_rank = i as i32 + 1;
        m.final_rank = m.pre_rerank_rank;
        m.source_uri = p.source_uri.clone();
        m.source_revision = p.revision;
    }
    Ok(HydrateOutcome {
        hydrated: Hydrated {
            members,
            products,
            lexeme_rows,
        },
        dropped,
        ms: arms::ms_since(t),
    })
}
