//! `get_product_evidence`: the evidence units (specification and reviews) of
//! one product granted by a retrieval scope, ranked for a question.
//!
//! Ranking, in one SQL statement with the grant check (`sql/evidence.sql`):
//!
//! - full text: `ts_rank_cd` of an OR query over the question's substantive
//!   terms, so a conversational question ("what do owners say about
//!   comfort?") still finds the units that mention any of them;
//! - a cheap second signal: the mean pg_trgm word similarity of those terms
//!   against the unit's title and body (typos, stems the parser splits);
//! - a kind prior: review-style questions favour reviews, spec-style
//!   questions favour the specification ([`intent`]).
//!
//! Units are ranked, not filtered: a product has a handful of units, and the
//! score (with its parts in `signals`) shows how well each one matched.

use super::{integer, object, product_id, scope_id, stars, text};
use crate::context::{Ctx, Principal};
use crate::error::Error;
use crate::search::arms::lexical_terms;
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;
use uuid::Uuid;

const SQL: &str = include_str!("sql/evidence.sql");
const FIELDS: &[&str] = &[
    "retrieval_scope_id",
    "product_id",
    "evidence_query",
    "limit",
];

/// Longest accepted question, in characters.
pub const MAX_QUESTION_CHARS: usize = 1_000;
/// Units returned when `limit` is not given, and the most ever returned.
pub const DEFAULT_LIMIT: i64 = 5;
pub const MAX_LIMIT: i64 = 20;
/// Added to the score of units of the kind the question asks about. Above
/// the similarity signal's typical spread, below a full-text match's.
pub const KIND_PRIOR: f64 = 0.25;

/// What kind of evidence a question asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Intent {
    Review,
    Specification,
    Neutral,
}

/// Words and phrases that mark a question about owners' experience.
const REVIEW_CUES: &[&str] = &[
    "owner",
    "owners",
    "people",
    "reviewer",
    "reviewers",
    "review",
    "reviews",
    "say",
    "says",
    "said",
    "complaint",
    "complaints",
    "complain",
    "worth it",
    "experience",
    "experiences",
    "opinion",
    "opinions",
    "feedback",
    "recommend",
    "problem",
    "problems",
    "issues",
    "reliable",
    "reliability",
    "hold up",
    "like it",
    "customers",
    "users",
];

/// Words and phrases that mark a question about the product's facts.
const SPEC_CUES: &[&str] = &[
    "spec",
    "specs",
    "specification",
    "specifications",
    "dimension",
    "dimensions",
    "size",
    "weight",
    "weigh",
    "weighs",
    "how many",
    "how big",
    "how heavy",
    "capacity",
    "battery",
    "warranty",
    "material",
    "materials",
    "made of",
    "watts",
    "wattage",
    "resolution",
    "measurements",
    "sku",
    "model number",
    "features",
    "compatible",
    "compatibility",
];

/// The kind a question asks for: whichever cue list it hits more often.
pub fn intent(question: &str) -> Intent {
    let words: Vec<String> = question
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect();
    let padded = format!(" {} ", words.join(" "));
    let hits = |cues: &[&str]| {
        cues.iter()
            .filter(|c| padded.contains(&format!(" {c} ")))
            .count()
    };
    let (review, spec) = (hits(REVIEW_CUES), hits(SPEC_CUES));
    match review.cmp(&spec) {
        std::cmp::Ordering::Greater => Intent::Review,
        std::cmp::Ordering::Less => Intent::Specification,
        std::cmp::Ordering::Equal => Intent::Neutral,
    }
}

/// A validated `get_product_evidence` request.
#[derive(Debug, Clone, PartialEq)]
pub struct EvidenceRequest {
    /// `None` when the id is not a UUID: refused when the request runs,
    /// like any unknown scope, after every other argument was validated.
    pub retrieval_scope_id: Option<Uuid>,
    pub product_id: String,
    /// The question, trimmed.
    pub evidence_query: String,
    pub limit: i64,
}

impl EvidenceRequest {
    /// Validates the flat logical-argument object.
    pub fn from_json(args: &Value) -> Result<Self, Error> {
        let obj = object(args, FIELDS)?;
        let retrieval_scope_id = scope_id(obj)?;
        let product_id = match obj.get("product_id") {
            None | Some(Value::Null) => {
                return Err(Error::invalid("product_id", "`product_id` is required"))
            }
            Some(v) => product_id(v, "product_id")?,
        };
        Ok(EvidenceRequest {
            retrieval_scope_id,
            product_id,
            evidence_query: text(obj, "evidence_query", MAX_QUESTION_CHARS)?,
            limit: integer(obj, "limit", 1, MAX_LIMIT, DEFAULT_LIMIT)?,
        })
    }
}

/// The answer: the product's evidence units, best first.
#[derive(Debug, Clone, Serialize)]
pub struct EvidenceResponse {
    pub retrieval_scope_id: Uuid,
    pub product_id: String,
    pub evidence_query: String,
    pub intent: Intent,
    pub evidence: Vec<EvidenceUnit>,
}

/// One evidence unit, with how well it matched the question.
#[derive(Debug, Clone, Serialize)]
pub struct EvidenceUnit {
    pub evidence_id: String,
    pub kind: String,
    pub title: String,
    /// The unit's full body.
    pub text: String,
    /// The body's best fragments with matched terms in `**bold**`; null when
    /// no term matched the unit's text.
    pub snippet: Option<String>,
    pub source_uri: String,
    pub source_revision: String,
    pub updated_at: DateTime<Utc>,
    /// Stars, for reviews; null for specifications.
    pub rating: Option<f64>,
    pub score: f64,
    pub signals: EvidenceSignals,
}

/// The parts of an evidence unit's score.
#[derive(Debug, Clone, Serialize)]
pub struct EvidenceSignals {
    pub text_rank: f64,
    pub similarity: f64,
    pub kind_prior: f64,
}

impl EvidenceUnit {
    /// A row of `sql/evidence.sql` that holds a unit.
    fn from_row(r: &Row) -> Self {
        EvidenceUnit {
            evidence_id: r.get("evidence_id"),
            kind: r.get("kind"),
            title: r.get("title"),
            text: r.get("body"),
            snippet: r.get("snippet"),
            source_uri: r.get("source_uri"),
            source_revision: r.get("source_revision"),
            updated_at: r.get("updated_at"),
            rating: stars(r.get("rating")),
            score: r.get("score"),
            signals: EvidenceSignals {
                text_rank: r.get("text_rank"),
                similarity: r.get("similarity"),
                kind_prior: r.get("kind_prior"),
            },
        }
    }
}

/// Runs `get_product_evidence`.
pub async fn evidence(
    ctx: &Ctx,
    principal: &Principal,
    req: EvidenceRequest,
) -> Result<EvidenceResponse, Error> {
    let Some(scope) = req.retrieval_scope_id else {
        return Err(Error::NotFound);
    };
    let question = req.evidence_query;
    let terms = lexical_terms(&question).positive;
    let or_query = terms.join(" or ");
    let intent = intent(&question);
    let (review_prior, spec_prior) = match intent {
        Intent::Review => (KIND_PRIOR, 0.0),
        Intent::Specification => (0.0, KIND_PRIOR),
        Intent::Neutral => (0.0, 0.0),
    };
    let params: [&(dyn ToSql + Sync); 8] = [
        &scope,
        &principal.as_str(),
        &req.product_id,
        &or_query,
        &terms,
        &review_prior,
        &spec_prior,
        &req.limit,
    ];
    let rows = ctx
        .read_only(async |tx| Ok(tx.query(SQL, &params).await?))
        .await?;
    if rows.is_empty() {
        return Err(Error::NotFound);
    }
    // The grant check returns one row without a unit for a granted
    // product that has none.
    let evidence = rows
        .iter()
        .filter(|r| r.get::<_, Option<String>>("evidence_id").is_some())
        .map(EvidenceUnit::from_row)
        .collect();
    Ok(EvidenceResponse {
        retrieval_scope_id: scope,
        product_id: req.product_id,
        evidence_query: question,
        intent,
        evidence,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_are_sorted_by_the_kind_they_ask_for() {
        for q in [
            "what do owners say about comfort?",
            "Any complaints?",
            "Is it worth it?",
            "What is the experience after a year?",
            "what do reviewers think of the zipper",
        ] {
            assert_eq!(intent(q), Intent::Review, "{q}");
        }
        for q in [
            "what are the specs and dimensions?",
            "How many ports does it have?",
            "battery capacity",
            "What's the weight?",
        ] {
            assert_eq!(intent(q), Intent::Specification, "{q}");
        }
        assert_eq!(intent("is it good for camping"), Intent::Neutral);
    }
}
