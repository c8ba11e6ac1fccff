//! Rerankers reorder a bounded pool; they never add to it.
//!
//! A reranker is handed the pool as a [`Pool`]: the query, and per candidate
//! the text a managed cross-encoder reads plus what the catalog already
//! holds about it (the stored product vector, the lexemes of its lexical
//! document by field, its category). A managed reranker (Bedrock) reads the
//! texts; the local one scores from the rest, without a model call.
//!
//! A reranker returns `(index, score)` pairs over the candidates it was sent.
//! [`apply`] turns that into a new order of the same pool: indices it does
//! not know and repeated indices are ignored (and logged), pool members it
//! left out keep their fused order behind the scored ones, and pinned
//! members (exact identifier matches) stay in front whatever the scores say.

pub mod local;

use async_trait::async_trait;

#[derive(Debug, thiserror::Error)]
pub enum RerankError {
    #[error("reranker unavailable: {0}")]
    Unavailable(String),
    #[error("reranker failed: {0}")]
    Failed(String),
}

#[async_trait]
pub trait Reranker: Send + Sync {
    /// Stable identifier stored in receipts.
    fn model_id(&self) -> &str;

    /// What the reranker reads of each candidate; the rerank stage fetches
    /// and builds only that. Default: the text.
    fn reads(&self) -> Reads {
        Reads::Text
    }

    /// Scores the pool's candidates against its query; higher is better.
    async fn rerank(&self, pool: &Pool<'_>) -> Result<Vec<(usize, f64)>, RerankError>;
}

/// What a reranker reads of the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reads {
    /// [`Candidate::text`] (a managed cross-encoder).
    Text,
    /// The catalog's own data: [`Candidate::lexemes`] with the query's
    /// lexeme statistics, and the identifiers ([`Candidate::text`] is left
    /// empty).
    Catalog,
}

/// The fields of a product's lexical document: the weight classes of
/// `search.product_projection.document` (migration 0003).
pub const FIELDS: usize = 4;
/// A: brand, model, SKU, aliases.
pub const IDENTITY: usize = 0;
/// B: the title.
pub const TITLE: usize = 1;
/// C: the category name and attribute values.
pub const FACETS: usize = 2;
/// D: the description.
pub const DESCRIPTION: usize = 3;

/// How often a lexeme occurs in each field (indexed by [`IDENTITY`],
/// [`TITLE`], [`FACETS`], [`DESCRIPTION`]).
pub type FieldCounts = [u32; FIELDS];

/// One pool member as a reranker sees it.
#[derive(Debug, Clone, Default)]
pub struct Candidate {
    /// What a managed cross-encoder reads: `title. brand model sku.
    /// category. attributes. description` (empty for [`Reads::Catalog`]).
    pub text: String,
    /// The words a misspelt identifier is matched against: title, brand,
    /// model, SKU.
    pub identity_text: String,
    /// The product's whole identifiers: model, SKU, brand and model.
    pub identifiers: Vec<String>,
    /// Every lexeme of the lexical document with its counts per field
    /// (empty for [`Reads::Text`]).
    pub lexemes: std::collections::HashMap<String, FieldCounts>,
}

impl Candidate {
    /// The length of each field: its lexeme occurrences.
    pub fn field_lengths(&self) -> [f64; FIELDS] {
        let mut len = [0.0; FIELDS];
        for counts in self.lexemes.values() {
            for (l, c) in len.iter_mut().zip(counts) {
                *l += f64::from(*c);
            }
        }
        len
    }
}

/// A query lexeme and how many products hold it (`search.lexeme_stats`).
#[derive(Debug, Clone, PartialEq)]
pub struct QueryLexeme {
    pub lexeme: String,
    pub docs: f64,
}

/// The catalog's statistics (`search.catalog_stats`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CatalogStats {
    pub products: f64,
    /// Mean length of each field of the lexical document.
    pub avg_field_lengths: [f64; FIELDS],
}

/// The rerank stage's input.
#[derive(Debug, Clone, Default)]
pub struct Pool<'a> {
    /// The query without its negated terms.
    pub query: &'a str,
    /// The query's lexemes (as the lexical documents stem them).
    pub query_lexemes: Vec<QueryLexeme>,
    /// `None` when the catalog statistics are not there (an empty catalog).
    pub catalog: Option<CatalogStats>,
    /// The candidates in fused order.
    pub candidates: Vec<Candidate>,
}

impl<'a> Pool<'a> {
    /// The candidates' texts, in pool order.
    pub fn texts(&self) -> Vec<String> {
        self.candidates.iter().map(|c| c.text.clone()).collect()
    }
}

/// The outcome of applying a reranker's answer to a pool.
#[derive(Debug, Clone, PartialEq)]
pub struct Reordered {
    /// Pool indices in their new order (a permutation of `0..pool_len`).
    pub order: Vec<usize>,
    /// Rerank score per pool index (None for members left unscored).
    pub scores: Vec<Option<f64>>,
    /// Indices the reranker named that were unknown or repeated, or whose
    /// score was not a finite number.
    pub ignored: Vec<usize>,
}

/// Reorders a pool of `pool_len` members. `pinned` pool indices stay first,
/// in their given order. Only the first `sent` members were sent to the
/// reranker; a scored index at or past `sent` is unknown.
pub fn apply(pool_len: usize, sent: usize, pinned: &[usize], scored: &[(usize, f64)]) -> Reordered {
    let mut scores: Vec<Option<f64>> = vec![None; pool_len];
    let mut ignored = Vec::new();
    for &(i, s) in scored {
        if i >= sent.min(pool_len) || scores[i].is_some() || !s.is_finite() {
            ignored.push(i);
            continue;
        }
        scores[i] = Some(s);
    }
    let mut rest: Vec<usize> = (0..pool_len).filter(|i| !pinned.contains(i)).collect();
    // Stable sort: scored members by score (ties keep fused order), then the
    // unscored ones in fused order.
    rest.sort_by(|&a, &b| match (scores[a], scores[b]) {
        (Some(x), Some(y)) => y.total_cmp(&x),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    let mut order: Vec<usize> = pinned.iter().copied().filter(|&i| i < pool_len).collect();
    order.extend(rest);
    if !ignored.is_empty() {
        tracing::warn!(ignored = ?ignored, "reranker returned unknown, repeated or non-finite entries");
    }
    Reordered {
        order,
        scores,
        ignored,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reorders_by_score_and_keeps_pinned_first() {
        let r = apply(4, 4, &[2], &[(0, 0.1), (1, 0.9), (2, 0.0), (3, 0.5)]);
        assert_eq!(r.order, vec![2, 1, 3, 0]);
    }

    #[test]
    fn unknown_and_repeated_indices_cannot_add_or_duplicate_members() {
        let r = apply(
            3,
            3,
            &[],
            &[(7, 9.0), (1, 0.2), (1, 5.0), (usize::MAX, 1.0), (0, 0.1)],
        );
        assert_eq!(r.order, vec![1, 0, 2]);
        assert_eq!(r.ignored, vec![7, 1, usize::MAX]);
        let mut sorted = r.order.clone();
        sorted.sort();
        assert_eq!(sorted, vec![0, 1, 2]);
    }

    #[test]
    fn members_not_sent_keep_fused_order_behind_the_scored() {
        let r = apply(5, 3, &[], &[(2, 0.9), (0, 0.8), (1, 0.7), (4, 1.0)]);
        assert_eq!(r.order, vec![2, 0, 1, 3, 4]);
        assert_eq!(r.ignored, vec![4]);
    }
}

/// Reads a `tsvector` in PostgreSQL's text form (`'lexeme':1A,5 'other':3C`)
/// into each lexeme's fields (weight A identity, B title, C category and
/// attributes, D or none: description). Malformed input yields what was
/// read up to the fault.
pub fn parse_tsvector(text: &str) -> std::collections::HashMap<String, FieldCounts> {
    let mut out = std::collections::HashMap::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.next() != Some('\'') {
            break;
        }
        let mut lexeme = String::new();
        loop {
            match chars.next() {
                Some('\'') if chars.peek() == Some(&'\'') => {
                    chars.next();
                    lexeme.push('\'');
                }
                Some('\'') | None => break,
                Some('\\') => lexeme.extend(chars.next()),
                Some(c) => lexeme.push(c),
            }
        }
        let mut counts: FieldCounts = [0; FIELDS];
        if chars.peek() == Some(&':') {
            chars.next();
            // Positions `12A,14,20C`: each number, then its weight letter
            // (none: D).
            let mut in_number = false;
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() {
                    break;
                }
                chars.next();
                let field = match c {
                    'A' => Some(IDENTITY),
                    'B' => Some(TITLE),
                    'C' => Some(FACETS),
                    'D' => Some(DESCRIPTION),
                    _ => None,
                };
                if let Some(f) = field {
                    counts[f] += 1;
                    in_number = false;
                } else if c.is_ascii_digit() {
                    in_number = true;
                } else if c == ',' && in_number {
                    counts[DESCRIPTION] += 1;
                    in_number = false;
                }
            }
            if in_number {
                counts[DESCRIPTION] += 1;
            }
        } else {
            counts[DESCRIPTION] += 1;
        }
        out.insert(lexeme, counts);
    }
    out
}

#[cfg(test)]
mod tsvector_tests {
    use super::*;

    #[test]
    fn tsvector_text_reads_as_lexemes_counted_by_field() {
        let v = parse_tsvector("'bluetooth':3C,12 'it''s':4 'kettl':2B,9A,10A 'usb-c':5C 'x'");
        assert_eq!(v.len(), 5);
        assert_eq!(v["bluetooth"], [0, 0, 1, 1]);
        assert_eq!(v["kettl"], [2, 1, 0, 0]);
        assert_eq!(v["it's"], [0, 0, 0, 1]);
        assert_eq!(v["usb-c"], [0, 0, 1, 0]);
        assert_eq!(v["x"], [0, 0, 0, 1]);
        assert!(parse_tsvector("").is_empty());
        let c = Candidate {
            lexemes: v,
            ..Candidate::default()
        };
        assert_eq!(c.field_lengths(), [2.0, 1.0, 2.0, 3.0]);
    }
}
