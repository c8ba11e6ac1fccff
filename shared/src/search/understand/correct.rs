//! Typo correction's parts (the step is described in the module above):
//! the English word list, the words a query may have corrected, the edit
//! distance, the choice among equally close vocabulary words (by the
//! query's other words, then by how many products hold each) and the query
//! with its corrections.

use super::*;
use std::io::Read;
use std::sync::LazyLock;

/// The English words, read once.
static ENGLISH: LazyLock<HashSet<String>> = LazyLock::new(|| {
    let gz: &[u8] = include_bytes!("../../../data/english-words.txt.gz");
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

/// How many of the query's other words (nearest first) settle a tie
/// between equally close corrections.
const CONTEXT_WORDS: usize = 4;

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
