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

use crate::profile::RetrievalProfile;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::io::Read;
use std::sync::LazyLock;
use tokio_postgres::types::Type;
use tokio_postgres::GenericClient;

/// The English words, read once.
static ENGLISH: LazyLock<HashSet<String>> = LazyLock::new(|| {
    let gz: &[u8] = include_bytes!("../../data/english-words.txt.gz");
    let mut text = String::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_string(&mut text)
        .expect("the built-in English word list is valid gzip and UTF-8");
    text.lines().map(str::to_string).collect()
});

/// Whether `word` (lower case) is an English word.
pub fn is_english(word: &str) -> bool {
    ENGLISH.contains(word)
}

const VOCABULARY_SQL: &str = include_str!("sql/vocabulary.sql");
const CORRECTION_CONTEXT_SQL: &str = include_str!("sql/correction_context.sql");

/// How many of the query's other words (nearest first) settle a tie
/// between equally close corrections.
const CONTEXT_WORDS: usize = 4;

/// How many trigram neighbours of an unknown word are compared by edits.
const NEIGHBOURS: i64 = 20;

/// At most this many (tied candidate, context word) pairs are asked about
/// in one query, one index lookup each: those of the first misspelt words
/// with a tie, in the query's order. A query of a few misspelt words asks
/// a dozen or two; without the cap, two hundred made-up words one edit from
/// several vocabulary words each asked a thousand. The ties past it are
/// settled as without context (the closest, then the most products).
pub const MAX_CONTEXT_PAIRS: usize = 64;

/// The longest word the catalog's vocabulary keeps
/// (`sql/0014_query_vocabulary.sql`, `sql/0017_catalog_terms_by_difference.sql`).
pub const VOCABULARY_LONGEST_WORD: usize = 64;

/// Whether `word` can be in the vocabulary or within [`max_edits`] of a
/// word of it: a longer word is neither, so it is not looked up. The
/// lookup's GIN scan reads a posting list per trigram of the word (a
/// 1,000-letter word: 70-115 ms at 100k products).
pub fn may_be_in_vocabulary(word: &str) -> bool {
    let len = word.chars().count();
    len <= VOCABULARY_LONGEST_WORD + max_edits(len) as usize
}

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

/// The words of `positive` that may be corrected: letters only, three or
/// more, lower case, each once, in query order.
pub fn correctable_words(positive: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for token in positive.split_whitespace() {
        let w = core(token);
        if w.chars().count() >= 3 && w.chars().all(char::is_alphabetic) {
            let w = w.to_lowercase();
            if !out.contains(&w) {
                out.push(w);
            }
        }
    }
    out
}

/// Edits a word of `len` characters may be corrected by.
pub fn max_edits(len: usize) -> u32 {
    match len {
        0..=2 => 0,
        3..=5 => 1,
        _ => 2,
    }
}

/// Optimal string alignment distance: insertions, deletions, substitutions
/// and swaps of two adjacent characters, each one edit.
pub fn edit_distance(a: &str, b: &str) -> u32 {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let (n, m) = (a.len(), b.len());
    let mut d = vec![vec![0u32; m + 1]; n + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i as u32;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j as u32;
    }
    for i in 1..=n {
        for j in 1..=m {
            let cost = u32::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[n][m]
}

/// The vocabulary words of `neighbours` (word, products) that are as few
/// edits from `word` as the closest one, within [`max_edits`]: (word,
/// products, edits), most common first, then by word, so the order does
/// not depend on the order given.
pub fn closest(word: &str, neighbours: &[(String, i32)]) -> Vec<(String, i32, u32)> {
    let allowed = max_edits(word.chars().count());
    let mut out: Vec<(String, i32, u32)> = neighbours
        .iter()
        .filter(|(n, _)| n != word && n.chars().all(char::is_alphabetic))
        .map(|(n, products)| (n.clone(), *products, edit_distance(word, n)))
        .filter(|(_, _, edits)| *edits <= allowed)
        .collect();
    let fewest = out.iter().map(|c| c.2).min();
    out.retain(|c| Some(c.2) == fewest);
    out.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    out.dedup_by(|a, b| a.0 == b.0);
    out
}

/// The correction of `word` among its vocabulary `neighbours` (word,
/// products): fewest edits within [`max_edits`], then most products, then
/// the word itself.
pub fn choose(word: &str, neighbours: &[(String, i32)]) -> Option<Correction> {
    closest(word, neighbours)
        .into_iter()
        .next()
        .map(|(to, _, edits)| Correction {
            from: word.to_string(),
            to,
            edits,
            alongside: None,
        })
}

/// As [`choose`], with a tie between equally close words settled first by
/// `alongside` (how many of the query's other words products hold a
/// candidate with), then by products and by word.
pub fn choose_in_context(
    word: &str,
    neighbours: &[(String, i32)],
    alongside: impl Fn(&str) -> u32,
) -> Option<Correction> {
    let tied = closest(word, neighbours);
    if tied.len() < 2 {
        return choose(word, neighbours);
    }
    // `tied` is most common first: the first of the most alongside wins.
    let mut best: Option<(u32, &(String, i32, u32))> = None;
    for c in &tied {
        let n = alongside(&c.0);
        if best.is_none_or(|(m, _)| n > m) {
            best = Some((n, c));
        }
    }
    best.map(|(n, (to, _, edits))| Correction {
        from: word.to_string(),
        to: to.clone(),
        edits: *edits,
        alongside: Some(n),
    })
}

/// The words that settle a tie for `word`: the other words of `positive`
/// (lower case, without their punctuation, each once), nearest to it
/// first, at most [`CONTEXT_WORDS`], leaving out the words in `skip` (the
/// other misspelt ones, which no product holds).
pub fn context_words(positive: &str, word: &str, skip: &[String]) -> Vec<String> {
    let tokens: Vec<String> = positive
        .split_whitespace()
        .map(|t| core(t).to_lowercase())
        .collect();
    let Some(at) = tokens.iter().position(|t| t == word) else {
        return Vec::new();
    };
    let mut by_distance: Vec<(usize, usize)> = (0..tokens.len())
        .filter(|&i| i != at)
        .map(|i| (i.abs_diff(at), i))
        .collect();
    by_distance.sort();
    let mut out: Vec<String> = Vec::new();
    for (_, i) in by_distance {
        let t = &tokens[i];
        if !t.is_empty() && t != word && !skip.contains(t) && !out.contains(t) {
            out.push(t.clone());
        }
        if out.len() == CONTEXT_WORDS {
            break;
        }
    }
    out
}

/// `positive` with every corrected word replaced, the punctuation around it
/// kept.
pub fn rewrite(positive: &str, corrections: &[Correction]) -> String {
    positive
        .split_whitespace()
        .map(|token| {
            let w = core(token);
            match corrections.iter().find(|c| c.from == w.to_lowercase()) {
                Some(c) if !w.is_empty() => token.replacen(w, &c.to, 1),
                _ => token.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
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

/// The (tied candidate, context word) pairs whose co-occurrence settles the
/// ties of the misspelt words `found` (each with its vocabulary neighbours),
/// `context` holding each one's context words: each pair once, in the
/// query's order, at most [`MAX_CONTEXT_PAIRS`].
pub fn context_pairs(
    found: &[(String, Vec<(String, i32)>)],
    context: &[Vec<String>],
) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for ((w, neighbours), others) in found.iter().zip(context) {
        let tied = closest(w, neighbours);
        if tied.len() < 2 {
            continue;
        }
        for other in others {
            for (to, _, _) in &tied {
                let pair = (to.clone(), other.clone());
                if pairs.len() == MAX_CONTEXT_PAIRS {
                    return pairs;
                }
                if !pairs.contains(&pair) {
                    pairs.push(pair);
                }
            }
        }
    }
    pairs
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
    fn a_query_of_many_tied_misspellings_asks_a_bounded_number_of_pairs() {
        // Each made-up word is one edit from three vocabulary words held by
        // as many products: a three-way tie.
        let tie = |w: &str| {
            neighbours(&[
                (&format!("{w}a"), 10),
                (&format!("{w}b"), 10),
                (&format!("{w}c"), 10),
            ])
        };
        let letter = |n: usize| char::from(b'a' + (n % 26) as u8);
        let words: Vec<String> = (0..200)
            .map(|i| format!("zq{}{}{}", letter(i / 676), letter(i / 26), letter(i)))
            .collect();
        let found: Vec<(String, Vec<(String, i32)>)> =
            words.iter().map(|w| (w.clone(), tie(w))).collect();
        let context: Vec<Vec<String>> = (0..200)
            .map(|i| (1..=4).map(|k| format!("ctx{}", (i + k) % 200)).collect())
            .collect();
        let pairs = context_pairs(&found, &context);
        assert_eq!(pairs.len(), MAX_CONTEXT_PAIRS);
        // The first misspelt words' pairs, each once.
        assert_eq!(pairs[0], ("zqaaaa".to_string(), "ctx1".to_string()));
        let unique: HashSet<&(String, String)> = pairs.iter().collect();
        assert_eq!(unique.len(), pairs.len());
        // A query of two misspelt words asks all of its pairs.
        let few = context_pairs(&found[..2], &context[..2]);
        assert_eq!(few.len(), 2 * 4 * 3);
    }

    #[test]
    fn a_word_no_vocabulary_word_can_be_near_is_not_looked_up() {
        let word = |n: usize| "a".repeat(n);
        assert!(may_be_in_vocabulary("kestrl"));
        assert!(may_be_in_vocabulary(&word(VOCABULARY_LONGEST_WORD)));
        // Two edits from the longest vocabulary word.
        assert!(may_be_in_vocabulary(&word(VOCABULARY_LONGEST_WORD + 2)));
        assert!(!may_be_in_vocabulary(&word(VOCABULARY_LONGEST_WORD + 3)));
        assert!(!may_be_in_vocabulary(&word(1_000)));
    }

    /// Vocabulary neighbours (word, products) as the lookup returns them.
    fn neighbours(v: &[(&str, i32)]) -> Vec<(String, i32)> {
        v.iter().map(|(w, p)| (w.to_string(), *p)).collect()
    }

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
    fn english_words_are_never_corrected() {
        for w in [
            "feet", "wired", "kids", "hear", "comfy", "warranty", "monitor",
        ] {
            assert!(is_english(w), "{w}");
        }
        for w in ["warrenty", "moniter", "hedphones", "kestrl", "ultrawide"] {
            assert!(!is_english(w), "{w}");
        }
    }

    #[test]
    fn edits_count_swaps_as_one() {
        assert_eq!(edit_distance("refurbsihed", "refurbished"), 1);
        assert_eq!(edit_distance("hedphones", "headphones"), 1);
        assert_eq!(edit_distance("moniter", "monitor"), 1);
        assert_eq!(edit_distance("kestrl", "kestrel"), 1);
        assert_eq!(edit_distance("abc", "abc"), 0);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("cushoning", "cushioning"), 1);
        assert_eq!(edit_distance("maraton", "marathon"), 1);
    }

    #[test]
    fn short_words_allow_fewer_edits() {
        assert_eq!(max_edits(2), 0);
        assert_eq!(max_edits(4), 1);
        assert_eq!(max_edits(5), 1);
        assert_eq!(max_edits(6), 2);
        let n = neighbours;
        // Two edits are too many for a four-letter word.
        assert_eq!(
            choose("plsu", &n(&[("plus", 90)])).map(|c| c.edits),
            Some(1)
        );
        assert_eq!(choose("pxsu", &n(&[("plus", 90)])), None);
    }

    #[test]
    fn the_closest_then_the_most_common_neighbour_wins() {
        let n = neighbours;
        let c = choose("warrenty", &n(&[("warrant", 900), ("warranty", 40)])).unwrap();
        assert_eq!((c.to.as_str(), c.edits), ("warranty", 1));
        let c = choose("cat", &n(&[("car", 5), ("cap", 50)])).unwrap();
        assert_eq!(c.to, "cap");
        // The order neighbours arrive in does not matter.
        let c = choose("cat", &n(&[("cap", 50), ("car", 5)])).unwrap();
        assert_eq!(c.to, "cap");
        // Identifier-like neighbours are never proposed.
        assert_eq!(choose("pro", &n(&[("pr0", 10)])), None);
    }

    #[test]
    fn a_tie_goes_to_the_word_held_alongside_the_query_then_the_most_common() {
        let n = neighbours;
        let near = n(&[
            ("staying", 4297),
            ("standing", 3225),
            ("stating", 10),
            ("stain", 900),
        ]);
        // Only the equally close ones compete ("stain" is two edits away).
        let tied: Vec<String> = closest("staning", &near).into_iter().map(|c| c.0).collect();
        assert_eq!(tied, ["staying", "standing", "stating"]);
        // Without context the most common wins.
        assert_eq!(choose("staning", &near).unwrap().to, "staying");
        let held = |to: &str| match to {
            "standing" => 2,
            "stating" => 1,
            _ => 0,
        };
        let c = choose_in_context("staning", &near, held).unwrap();
        assert_eq!(
            (c.to.as_str(), c.edits, c.alongside),
            ("standing", 1, Some(2))
        );
        // Held alongside as many: the most common of them, whatever the order.
        let c = choose_in_context("staning", &near, |_| 1).unwrap();
        assert_eq!((c.to.as_str(), c.alongside), ("staying", Some(1)));
        let mut reversed = near.clone();
        reversed.reverse();
        assert_eq!(
            choose_in_context("staning", &reversed, |_| 1).unwrap().to,
            "staying"
        );
        // No tie: nothing to settle, nothing recorded.
        let c = choose_in_context("warrenty", &n(&[("warranty", 40), ("warrant", 900)]), |_| 0);
        assert_eq!(
            c.unwrap(),
            Correction {
                from: "warrenty".into(),
                to: "warranty".into(),
                edits: 1,
                alongside: None,
            }
        );
    }

    #[test]
    fn the_words_that_settle_a_tie_are_the_nearest_others() {
        let skip = vec!["staning".to_string(), "lmap".to_string()];
        assert_eq!(
            context_words("Paperlane Staning Desk", "staning", &skip),
            ["paperlane", "desk"]
        );
        // Nearest first, at most four, each once, misspelt ones left out,
        // punctuation dropped.
        assert_eq!(
            context_words(
                "a b c \"desk\" lmap Staning, desk tall oak white x",
                "staning",
                &skip
            ),
            ["desk", "tall", "c", "oak"]
        );
        assert!(context_words("Staning", "staning", &skip).is_empty());
        assert!(context_words("Paperlane Desk", "staning", &skip).is_empty());
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

    #[test]
    fn rewriting_keeps_punctuation_and_other_words() {
        let c = vec![Correction {
            from: "hedphones".into(),
            to: "headphones".into(),
            edits: 1,
            alongside: None,
        }];
        assert_eq!(
            rewrite("Sennova \"Hedphones\" with a 5 year warranty?", &c),
            "Sennova \"headphones\" with a 5 year warranty?"
        );
    }
}
