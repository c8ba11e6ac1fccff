//! pg_trgm's word similarity, computed in the service.
//!
//! The trigram arm's SQL finds its matches with the GIN trigram index and
//! the `<%` operator (whose recheck computes the similarity only as far as
//! the threshold). Scoring the matches in SQL computed it a second time,
//! in full, for every match: about 25 µs per 100-character identity text,
//! 9–10 ms of a 30 ms step with 500 matches at 100k products (psql). The
//! step now returns the matches' identity texts and [`WordSimilarity`]
//! scores them here, with the same result as PostgreSQL's
//! `word_similarity(query, text)` to the bit (`tests/search.rs` compares
//! them over a hundred thousand pairs), at a fraction of the cost, and off
//! the database's CPU.
//!
//! The definition, as pg_trgm implements it:
//!
//! * A string's words are its runs of letters and digits, lower-cased. Each
//!   word is padded with two spaces in front and one behind, and its
//!   trigrams are every three consecutive characters of that: "ab" gives
//!   `"  a"`, `" ab"`, `"ab "`.
//! * The query's trigrams form a set of `n` distinct trigrams. The text's
//!   trigrams keep their order. For an extent (a contiguous run) of the
//!   text's trigrams with `u` distinct trigrams, `c` of them in the query's
//!   set, the similarity is `c / (n + u - c)` in single precision.
//! * The word similarity is the greatest similarity pg_trgm's scan finds:
//!   extents end at each text trigram that is in the query's set, and the
//!   start of the current extent only moves forward, to where the
//!   similarity improves.
//!
//! Only ASCII strings are scored here. Outside ASCII, which characters are
//! letters, how they lower-case and how a trigram of multibyte characters
//! is hashed depend on the database's locale and pg_trgm's internals, so
//! the SQL computes those scores itself (see `sql/trigram.sql`).

/// A query prepared for scoring many texts.
#[derive(Debug, Clone)]
pub struct WordSimilarity {
    /// The query's distinct trigrams, sorted.
    query: Vec<u32>,
}

impl WordSimilarity {
    /// `None` if the query is not ASCII (the database scores it instead).
    pub fn new(query: &str) -> Option<Self> {
        if !query.is_ascii() {
            return None;
        }
        let mut q = Vec::new();
        trigrams(query, &mut q);
        q.sort_unstable();
        q.dedup();
        Some(Self { query: q })
    }

    /// `word_similarity(query, text)` as pg_trgm computes it; `None` if the
    /// text is not ASCII.
    pub fn score(&self, text: &str) -> Option<f32> {
        if !text.is_ascii() {
            return None;
        }
        let n = self.query.len() as i32;
        if n == 0 {
            return Some(0.0);
        }
        let mut seq = Vec::with_capacity(text.len() + 2);
        trigrams(text, &mut seq);
        // Number the text's distinct trigrams in one sorted pass over
        // (trigram, position); `found` says which of them the query has.
        let mut order: Vec<u64> = seq
            .iter()
            .enumerate()
            .map(|(i, &t)| (u64::from(t) << 32) | i as u64)
            .collect();
        order.sort_unstable();
        let mut ids = vec![0usize; seq.len()];
        let mut found: Vec<bool> = Vec::with_capacity(seq.len());
        let (mut previous, mut qi) = (None, 0usize);
        for key in order {
            let t = (key >> 32) as u32;
            if previous != Some(t) {
                while qi < self.query.len() && self.query[qi] < t {
                    qi += 1;
                }
                found.push(self.query.get(qi) == Some(&t));
                previous = Some(t);
            }
            ids[(key & 0xffff_ffff) as usize] = found.len() - 1;
        }
        Some(best_extent(&ids, &found, n))
    }
}

/// The similarity of `count` shared trigrams between `n` query trigrams and
/// `u` distinct trigrams of an extent, in single precision as in pg_trgm.
fn similarity(count: i32, n: i32, u: i32) -> f32 {
    count as f32 / (n + u - count) as f32
}

/// pg_trgm's scan for the best extent. `ids` numbers the text's trigrams in
/// order, `found[id]` says whether the query has trigram `id`, `n` counts
/// the query's distinct trigrams.
fn best_extent(ids: &[usize], found: &[bool], n: i32) -> f32 {
    // Where each distinct trigram last occurred in the current extent.
    let mut last: Vec<isize> = vec![-1; found.len()];
    let (mut distinct, mut count) = (0i32, 0i32);
    let mut lower: isize = -1;
    let mut best = 0.0f32;
    for (i, &id) in ids.iter().enumerate() {
        let i = i as isize;
        // The extent starts at the first trigram the query has.
        if lower >= 0 || found[id] {
            if last[id] < 0 {
                distinct += 1;
                if found[id] {
                    count += 1;
                }
            }
            last[id] = i;
        }
        if !found[id] {
            continue;
        }
        // The extent ends here; try moving its start forward.
        let upper = i;
        if lower == -1 {
            lower = i;
            distinct = 1;
        }
        let mut current = similarity(count, n, distinct);
        let (mut try_count, mut try_distinct) = (count, distinct);
        let old_lower = lower;
        let mut start = lower;
        while start <= upper {
            let s = similarity(try_count, n, try_distinct);
            if s > current {
                current = s;
                distinct = try_distinct;
                lower = start;
                count = try_count;
            }
            // Dropping trigram `start` from the extent loses it if this
            // was its last occurrence.
            let dropped = ids[start as usize];
            if last[dropped] == start {
                try_distinct -= 1;
                if found[dropped] {
                    try_count -= 1;
                }
            }
            start += 1;
        }
        if current > best {
            best = current;
        }
        // Trigrams now before the extent's start are out of it.
        for gone in old_lower..lower {
            let id = ids[gone as usize];
            if last[id] == gone {
                last[id] = -1;
            }
        }
    }
    best
}

/// Appends the trigrams of an ASCII string in text order.
fn trigrams(s: &str, out: &mut Vec<u32>) {
    for word in s
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        // "  word ": two spaces in front, one behind.
        let (mut a, mut b) = (u32::from(b' '), u32::from(b' '));
        for c in word
            .bytes()
            .map(|c| u32::from(c.to_ascii_lowercase()))
            .chain([u32::from(b' ')])
        {
            out.push((a << 16) | (b << 8) | c);
            (a, b) = (b, c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws(q: &str, t: &str) -> f32 {
        WordSimilarity::new(q).unwrap().score(t).unwrap()
    }

    #[test]
    fn matches_the_pg_trgm_documentation() {
        // The examples of pg_trgm's documentation.
        assert_eq!(ws("word", "two words"), 0.8);
        assert_eq!(ws("word", "word"), 1.0);
        assert_eq!(ws("word", "a b c"), 0.0);
    }

    #[test]
    fn words_are_runs_of_letters_and_digits_case_aside() {
        assert_eq!(ws("WH-1000XM5", "wh 1000xm5 headphones"), 1.0);
        assert_eq!(ws("wh_1000", "WH 1000"), 1.0);
        let mut t = Vec::new();
        trigrams("Ab", &mut t);
        let s: Vec<String> = t
            .iter()
            .map(|x| String::from_utf8(vec![(x >> 16) as u8, (x >> 8) as u8, *x as u8]).unwrap())
            .collect();
        assert_eq!(s, ["  a", " ab", "ab "]);
    }

    #[test]
    fn non_ascii_is_left_to_the_database() {
        assert!(WordSimilarity::new("café").is_none());
        assert!(ws_opt("cafe", "café crème").is_none());
    }

    fn ws_opt(q: &str, t: &str) -> Option<f32> {
        WordSimilarity::new(q)?.score(t)
    }
}
