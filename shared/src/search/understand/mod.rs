//! Query understanding: what the arms search for, decided once before they
//! run, and recorded in the receipt.
//!
//! * **Identifiers.** A word that mixes letters and digits ("wh-1000xm5",
//!   "pxlt-1075") is taken for a model or SKU. It is never corrected: the
//!   exact-identifier lookup and the trigram arm are made for it.
//! * **Typo correction.** Every other word of letters only, three letters or
//!   more, is checked against two word lists: an English dictionary
//!   (`shared/data/english-words.txt.gz`, the lower-case words of SCOWL's
//!   American English list as Debian ships it in `wamerican`; its notice is
//!   beside it) and the catalog's vocabulary (`search.vocabulary`,
//!   `sql/0014_query_vocabulary.sql`: every word of the products'
//!   searchable text). A word either list holds is left as it is: a catalog
//!   is too small to know every word a shopper writes ("feet", "wired",
//!   "kids"), and without the dictionary those would be "corrected" into
//!   the catalog's own look-alikes. A word neither holds is replaced by its closest vocabulary word within the allowed
//!   number of edits (one for three to five letters, two from six: the
//!   "AUTO" fuzziness of common search engines). When several are as
//!   close, the one that products hold alongside the most of the query's
//!   other words wins (up to four of them, nearest first: "staning desk"
//!   is "standing desk", although more products hold "staying"), then the
//!   most common (`correction_context`); a word with no such neighbour
//!   stays as written.
//!   Candidates come from the vocabulary's trigram index, at least
//!   `correction_min_similarity` similar, and from the word with two
//!   neighbouring letters swapped, looked up as written ("dsek" shares one
//!   trigram of nine with "desk"); the edits are counted here
//!   (insertions, deletions, substitutions and swaps of two neighbours).
//!
//! * **Bounds.** The numeric limits the query writes in words ("under
//!   $50", "under 220 grams") are read by [`super::bounds`] and recorded
//!   here; the rerank stage keeps them (`rerank_stated_bounds`). No arm
//!   reads them.
//!
//! The corrected query is what the two text arms search for, so a misspelt
//! word no longer sends the lexical arm to its back-off over thousands of
//! matches, nor the trigram arm down its cascade. The semantic arm and the
//! rerank stage keep the query as written: the embedding model reads a
//! misspelt word by its pieces, and on both evaluation catalogs giving them
//! the corrected words as well lowered serving nDCG@10 on the foreign one
//! (0.639 with the text arms alone, 0.631 with every stage; EVALUATION.md).
//! The negated terms (`-word`), the exact-identifier lookup and the
//! receipt's query text keep the words as the caller wrote them too.
//!
//! `correct.rs` holds the correction's parts: the word lists, the edit
//! distance, the choice among close words and the rewritten query.

mod correct;

pub use correct::{
    choose, choose_in_context, closest, context_pairs, context_words, correctable_words,
    edit_distance, is_english, max_edits, may_be_in_vocabulary, rewrite, MAX_CONTEXT_PAIRS,
    VOCABULARY_LONGEST_WORD,
};

use crate::profile::RetrievalProfile;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use tokio_postgres::types::Type;
use tokio_postgres::GenericClient;

const VOCABULARY_SQL: &str = include_str!("../sql/vocabulary.sql");
const CORRECTION_CONTEXT_SQL: &str = include_str!("../sql/correction_context.sql");

/// How many trigram neighbours of an unknown word are compared by edits.
const NEIGHBOURS: i64 = 20;

/// One corrected word.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Correction {
    pub from: String,
    pub to: String,
    pub edits: u32,
    /// When other vocabulary words were as close: how many of the query's
    /// other words (of those that settled the tie) products hold it
    /// alongside.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alongside: Option<u32>,
}

/// What the step found, as recorded in the receipt and shown by explain.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Understanding {
    /// The query the text arms searched for, when the corrections changed
    /// it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub corrected_query: Option<String>,
    pub corrections: Vec<Correction>,
    /// Words taken for identifiers (letters and digits), never corrected.
    pub identifiers: Vec<String>,
    /// Query words not in the vocabulary and without a close neighbour.
    pub unknown: Vec<String>,
    /// The numeric bounds the query states, which the rerank stage keeps
    /// (`rerank_stated_bounds`; [`super::bounds`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bounds: Vec<super::bounds::Bound>,
}

impl Understanding {
    /// Whether every word the step checked was found as written: nothing
    /// corrected, no unknown word, no identifier. Only meaningful when
    /// correction ran (`query_correction`); words it does not check
    /// (shorter than three letters, or holding anything but letters, such
    /// as "extra-wide") count as written.
    pub fn spelled_as_written(&self) -> bool {
        self.corrections.is_empty() && self.unknown.is_empty() && self.identifiers.is_empty()
    }

    /// Whether every word the step checked is now a known word: found as
    /// written or corrected to a vocabulary word, no unknown word, no
    /// identifier. As [`spelled_as_written`](Self::spelled_as_written), it
    /// means something only when correction ran.
    pub fn spelled_once_corrected(&self) -> bool {
        self.unknown.is_empty() && self.identifiers.is_empty()
    }

    /// The query's identifiers, space-separated, when one of them is a
    /// product line's code (it has a stem, [`identifier_stem`]: "pxlt-3353",
    /// not "4k" or "ip67"): what the trigram arm's relaxed steps match
    /// (`trigram_identifier_steps`).
    pub fn line_codes(&self) -> Option<String> {
        self.identifiers
            .iter()
            .any(|w| identifier_stem(w).is_some())
            .then(|| self.identifiers.join(" "))
    }

    /// The query for the text arms: the corrected one, or `positive`
    /// unchanged.
    pub fn query<'a>(&'a self, positive: &'a str) -> &'a str {
        self.corrected_query.as_deref().unwrap_or(positive)
    }
}

/// The core of a whitespace-separated token: without the punctuation
/// around it (quotes, commas, a question mark), lower case.
fn core(token: &str) -> &str {
    token.trim_matches(|c: char| !c.is_alphanumeric())
}

/// Whether a word is taken for an identifier: letters and digits mixed.
pub fn is_identifier(word: &str) -> bool {
    word.chars().any(|c| c.is_ascii_digit()) && word.chars().any(char::is_alphabetic)
}

/// The stem of the first identifier of `positive` that has one: its
/// characters before the first digit, without a trailing '-' ("heaf" of
/// "HEAF-1072", "oh-x" of "OH-X502"), when they are letters and '-' only
/// and hold three letters or more ("wh-1000xm5" has none: "wh" would name
/// a fraction of any catalog). A product line's codes share it, and the
/// semantic arm scores that line exactly (`semantic_identifier_family`).
pub fn identifier_stem(positive: &str) -> Option<String> {
    positive
        .split_whitespace()
        .map(|t| core(t).to_lowercase())
        .filter(|w| is_identifier(w))
        .find_map(|w| {
            let head = w.split(|c: char| c.is_ascii_digit()).next()?;
            let stem = head.trim_end_matches('-');
            let letters = stem.chars().filter(|c| c.is_ascii_lowercase()).count();
            let plain = stem.chars().all(|c| c.is_ascii_lowercase() || c == '-');
            (plain && letters >= 3).then(|| stem.to_string())
        })
}

/// Runs the step for `positive` (the query without its negated terms) in
/// the caller's transaction. With correction off, only the identifiers are
/// recorded.
pub async fn understand<C: GenericClient>(
    db: &C,
    positive: &str,
    profile: &RetrievalProfile,
) -> Result<Understanding, tokio_postgres::Error> {
    let identifiers: Vec<String> = positive
        .split_whitespace()
        .map(|t| core(t).to_lowercase())
        .filter(|w| is_identifier(w))
        .collect();
    let words: Vec<String> = match profile.query_correction {
        0 => Vec::new(),
        _ => correctable_words(positive)
            .into_iter()
            .filter(|w| !is_english(w))
            .collect(),
    };
    if words.is_empty() {
        return Ok(Understanding {
            identifiers,
            ..Understanding::default()
        });
    }
    // The similarity floor (SET LOCAL) and the lookup: one round trip. A
    // word no vocabulary word can be near is unknown without it.
    let floor = profile.correction_min_similarity.to_string();
    let looked_up: Vec<&String> = words.iter().filter(|w| may_be_in_vocabulary(w)).collect();
    let params = [
        (
            &looked_up as &(dyn tokio_postgres::types::ToSql + Sync),
            Type::TEXT_ARRAY,
        ),
        (&NEIGHBOURS, Type::INT8),
    ];
    let rows = match looked_up.is_empty() {
        true => Vec::new(),
        false => {
            let (_, rows) = tokio::try_join!(
                crate::db::set_local(db, "pg_trgm.similarity_threshold", floor),
                db.query_typed(VOCABULARY_SQL, &params),
            )?;
            rows
        }
    };
    let mut found: Vec<(String, Vec<(String, i32)>)> = Vec::new();
    for w in &words {
        let mut known = false;
        let mut neighbours: Vec<(String, i32)> = Vec::new();
        for r in rows.iter().filter(|r| r.get::<_, &str>(0) == w) {
            known |= r.get::<_, bool>(1);
            if let (Some(n), Some(p)) = (r.get::<_, Option<String>>(2), r.get(3)) {
                neighbours.push((n, p));
            }
        }
        if !known {
            found.push((w.clone(), neighbours));
        }
    }
    let misspelt: Vec<String> = found.iter().map(|(w, _)| w.clone()).collect();
    // Ties between equally close words: each misspelt word's context (its
    // nearest other words) and which tied candidates products hold
    // alongside which of them.
    let context: Vec<Vec<String>> = match profile.correction_context {
        0 => vec![Vec::new(); found.len()],
        _ => found
            .iter()
            .map(|(w, _)| context_words(positive, w, &misspelt))
            .collect(),
    };
    let pairs = context_pairs(&found, &context);
    let together = held_together(db, &pairs).await?;
    let held: HashSet<(&str, &str)> = pairs
        .iter()
        .zip(together)
        .filter_map(|((to, other), held)| held.then_some((to.as_str(), other.as_str())))
        .collect();
    let mut corrections = Vec::new();
    let mut unknown = Vec::new();
    for ((w, neighbours), others) in found.iter().zip(&context) {
        let alongside = |to: &str| {
            others
                .iter()
                .filter(|o| held.contains(&(to, o.as_str())))
                .count() as u32
        };
        let chosen = match profile.correction_context {
            0 => choose(w, neighbours),
            _ => choose_in_context(w, neighbours, alongside),
        };
        match chosen {
            Some(c) => corrections.push(c),
            None => unknown.push(w.clone()),
        }
    }
    let corrected_query = (!corrections.is_empty()).then(|| rewrite(positive, &corrections));
    Ok(Understanding {
        corrected_query,
        corrections,
        identifiers,
        unknown,
        bounds: Vec::new(),
    })
}

/// For each (vocabulary word, query word) of `pairs`, whether some product
/// holds both (`sql/correction_context.sql`): one round trip, with
/// sequential scans off for its statements alone, so the documents' GIN
/// index answers even for two common words that no product holds together.
/// Nothing is sent when there are no pairs.
async fn held_together<C: GenericClient>(
    db: &C,
    pairs: &[(String, String)],
) -> Result<Vec<bool>, tokio_postgres::Error> {
    if pairs.is_empty() {
        return Ok(Vec::new());
    }
    let asks = pairs.iter().map(|(word, other)| async move {
        let row = db
            .query_typed_one(
                CORRECTION_CONTEXT_SQL,
                &[(word, Type::TEXT), (other, Type::TEXT)],
            )
            .await?;
        Ok::<bool, tokio_postgres::Error>(row.get(0))
    });
    // try_join! polls in order, so the statements are sent in this order.
    let (_, held, _) = tokio::try_join!(
        crate::db::set_local(db, "enable_seqscan", "off".to_string()),
        futures_util::future::try_join_all(asks),
        db.execute_typed("SET LOCAL enable_seqscan TO DEFAULT", &[]),
    )?;
    Ok(held)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_codes_are_the_identifiers_when_one_has_a_stem() {
        let of = |ids: &[&str]| Understanding {
            identifiers: ids.iter().map(|w| w.to_string()).collect(),
            ..Understanding::default()
        };
        assert_eq!(
            of(&["pxlt-3353"]).line_codes().as_deref(),
            Some("pxlt-3353")
        );
        assert_eq!(
            of(&["ausw3116", "4k"]).line_codes().as_deref(),
            Some("ausw3116 4k")
        );
        for ids in [
            &["4k"][..],
            &["ip67", "lc3"][..],
            &["wh-1000xm5"][..],
            &[][..],
        ] {
            assert_eq!(of(ids).line_codes(), None, "{ids:?}");
        }
    }

    #[test]
    fn only_words_of_letters_are_corrected_and_identifiers_are_seen() {
        assert_eq!(
            correctable_words("Sennova hedphones, wh-1000xm5 \"warrenty\" 5 ok it's"),
            vec!["sennova", "hedphones", "warrenty"]
        );
        assert!(is_identifier("pxlt-1075"));
        assert!(!is_identifier("1075"));
        assert!(!is_identifier("plus"));
    }

    #[test]
    fn an_identifier_s_stem_is_its_letters_before_the_first_digit() {
        assert_eq!(identifier_stem("HEAF-1072").as_deref(), Some("heaf"));
        assert_eq!(
            identifier_stem("Halowave OH-X502 pro").as_deref(),
            Some("oh-x")
        );
        assert_eq!(identifier_stem("he-af000072").as_deref(), Some("he-af"));
        // The first identifier with a stem wins.
        assert_eq!(
            identifier_stem("wh-1000xm5 or lmsd-1651").as_deref(),
            Some("lmsd")
        );
        for none in [
            "wh-1000xm5",
            "1000xm5",
            "m4 case",
            "air fryer",
            "r\u{e9}f-12",
            "a_b%c-1",
        ] {
            assert_eq!(identifier_stem(none), None, "{none}");
        }
    }
}
