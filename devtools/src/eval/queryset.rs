//! Judged query sets: the JSONL format and a generator that builds one from
//! the catalog generator's own ground truth ([`Truth`]), never from search
//! results.
//!
//! # Format
//!
//! One JSON object per line:
//!
//! ```json
//! {"id": "filtered-007", "query": "private audio for late night movies",
//!  "filters": {"max_price_cents": 15000},
//!  "intent": "filtered",
//!  "judgments": [{"product_id": "P0000001", "grade": 3}, ...]}
//! ```
//!
//! * `filters` (optional) is the HTTP filter object of `search_products`
//!   (`domain`, `category_key`, `brand`, `availability`, `in_stock_only`,
//!   `min_price_cents`, `max_price_cents`, `min_rating`, `attributes`);
//! * `intent` is one of `exact_sku`, `exact_model`, `typo`, `descriptive`,
//!   `filtered`, `conversational`, `negated`;
//! * `grade` is 0..=3; products without a judgment have grade 0, so the
//!   generator omits grade-0 judgments.
//!
//! # Grading rules of the generated set
//!
//! Every query is built around one *seed* product `s` of the catalog; grades
//! come from the generator's ground truth (category, title noun, need
//! phrase), the generated attributes and the query's stated constraints:
//!
//! * `exact_sku`, `exact_model` (the query is `s`'s SKU or model) and `typo`
//!   (1–2 character edits — deletion, substitution, transposition — of `s`'s
//!   brand or model, in `"<brand> <model>"` or `"<model>"`; an edit is kept
//!   only if `s` stays the unique nearest product by edit distance, so the
//!   intended product is recoverable in principle):
//!   3 = `s`; 1 = other products of `s`'s category and brand (the look-alike
//!   series); 0 = everything else.
//! * `descriptive` (`s`'s need phrase verbatim, or a hand-written paraphrase
//!   of it; never a word of `s`'s title) and `conversational`
//!   ("I'm looking for a <noun> for <need>, any suggestions?" and two
//!   similar templates; a need that is a noun phrase is set apart, e.g.
//!   "I'm looking for a laptop (machine for editing video on the go), any
//!   suggestions?"): 3 = products of `s`'s category generated for the
//!   same need; 2 = other products of the category; 0 = everything else.
//! * `filtered` (a need phrase or a title noun of `s` plus one hard filter
//!   that `s` meets: a price cap, `in_stock_only`, `min_rating` or one
//!   attribute equality): among products of `s`'s category that meet the
//!   filter, 3 = same need (need queries) or same title noun (noun queries),
//!   2 = the rest; products that violate the filter are ineligible and get
//!   0, so the ideal ranking is attainable.
//! * `negated` (`"<noun> -<brand>"` or `"<noun> -<attribute value>"`):
//!   among products of `s`'s category, 1 = those the negation excludes (the
//!   brand, or a string attribute containing the word), 3 = the others with
//!   the queried title noun, 2 = the others; 0 = everything else.
//!
//! "Relevant" for Recall and MRR means grade ≥ 2.

use super::CatalogRow;
use crate::generator::{Generator, Truth, DEFAULT_PRODUCTS, DEFAULT_SEED};
use mosaic::catalog::load::identifier_key;
use mosaic::catalog::Product;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, Write};

/// What a query tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Intent {
    ExactSku,
    ExactModel,
    Typo,
    Descriptive,
    Filtered,
    Conversational,
    Negated,
    /// A short head query: a product type and perhaps one property (the
    /// foreign catalog's query set).
    Short,
    /// A brand or model family (the foreign catalog's query set).
    Brand,
}

impl Intent {
    /// Every intent a judged query set may use, in report order.
    pub const ALL: [Intent; 9] = [
        Intent::ExactSku,
        Intent::ExactModel,
        Intent::Typo,
        Intent::Short,
        Intent::Brand,
        Intent::Descriptive,
        Intent::Filtered,
        Intent::Conversational,
        Intent::Negated,
    ];

    /// The intents `mosaic eval generate` writes for the sample catalog.
    pub const GENERATED: [Intent; 7] = [
        Intent::ExactSku,
        Intent::ExactModel,
        Intent::Typo,
        Intent::Descriptive,
        Intent::Filtered,
        Intent::Conversational,
        Intent::Negated,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Intent::ExactSku => "exact_sku",
            Intent::ExactModel => "exact_model",
            Intent::Typo => "typo",
            Intent::Descriptive => "descriptive",
            Intent::Filtered => "filtered",
            Intent::Conversational => "conversational",
            Intent::Negated => "negated",
            Intent::Short => "short",
            Intent::Brand => "brand",
        }
    }

    /// Whether the query is a product identifier (exact-identifier top-1).
    pub fn is_exact(self) -> bool {
        matches!(self, Intent::ExactSku | Intent::ExactModel)
    }
}

/// One graded product.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Judgment {
    pub product_id: String,
    pub grade: u8,
}

/// One judged query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalQuery {
    pub id: String,
    pub query: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filters: Option<Map<String, Value>>,
    pub intent: Intent,
    pub judgments: Vec<Judgment>,
}

impl EvalQuery {
    /// Product id → grade (unjudged products are absent: grade 0).
    pub fn grades(&self) -> HashMap<String, u8> {
        self.judgments
            .iter()
            .map(|j| (j.product_id.clone(), j.grade))
            .collect()
    }

    /// Products with the given grade.
    pub fn with_grade(&self, grade: u8) -> impl Iterator<Item = &str> {
        self.judgments
            .iter()
            .filter(move |j| j.grade == grade)
            .map(|j| j.product_id.as_str())
    }
}

/// Reads a JSONL query set (blank lines and lines starting with `#` are
/// skipped) and checks it: unique ids, non-empty queries, grades 0..=3, no
/// product judged twice in one query.
pub fn read_jsonl(reader: impl BufRead) -> Result<Vec<EvalQuery>, String> {
    let mut out: Vec<EvalQuery> = Vec::new();
    let mut ids = HashSet::new();
    for (n, line) in reader.lines().enumerate() {
        let line = line.map_err(|e| format!("line {}: {e}", n + 1))?;
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let q: EvalQuery = serde_json::from_str(t).map_err(|e| format!("line {}: {e}", n + 1))?;
        if q.query.trim().is_empty() {
            return Err(format!("line {}: query {} is empty", n + 1, q.id));
        }
        if !ids.insert(q.id.clone()) {
            return Err(format!("line {}: duplicate query id {}", n + 1, q.id));
        }
        let mut seen = HashSet::new();
        for j in &q.judgments {
            if j.grade > 3 {
                return Err(format!("line {}: grade {} is not 0..3", n + 1, j.grade));
            }
            if !seen.insert(j.product_id.as_str()) {
                return Err(format!(
                    "line {}: {} is judged twice in {}",
                    n + 1,
                    j.product_id,
                    q.id
                ));
            }
        }
        out.push(q);
    }
    Ok(out)
}

/// At most `n` queries spread evenly over the intents: intents take turns
/// in order of first appearance, each contributing its queries in file
/// order (`--limit-queries`).
pub fn spread(queries: &[EvalQuery], n: usize) -> Vec<EvalQuery> {
    let mut groups: Vec<(Intent, std::collections::VecDeque<&EvalQuery>)> = Vec::new();
    for q in queries {
        match groups.iter_mut().find(|(i, _)| *i == q.intent) {
            Some((_, g)) => g.push_back(q),
            None => groups.push((q.intent, std::collections::VecDeque::from([q]))),
        }
    }
    let mut out = Vec::with_capacity(n.min(queries.len()));
    while out.len() < n.min(queries.len()) {
        for (_, g) in groups.iter_mut() {
            if out.len() >= n {
                break;
            }
            if let Some(q) = g.pop_front() {
                out.push(q.clone());
            }
        }
    }
    out
}

/// Writes a query set as JSONL, one query per line.
pub fn write_jsonl(mut w: impl Write, queries: &[EvalQuery]) -> std::io::Result<()> {
    for q in queries {
        serde_json::to_writer(&mut w, q)?;
        w.write_all(b"\n")?;
    }
    w.flush()
}

/// What to generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuerySetOptions {
    /// Seed of the catalog the judgments are about (and of the sampling).
    pub seed: u64,
    /// Size of that catalog.
    pub products: u64,
    /// Queries per intent.
    pub per_intent: usize,
}

impl Default for QuerySetOptions {
    fn default() -> Self {
        Self {
            seed: DEFAULT_SEED,
            products: DEFAULT_PRODUCTS,
            per_intent: 50,
        }
    }
}

/// Hand-written paraphrases of the vocabulary's need phrases. They avoid
/// the category's title nouns and the title adjectives, and mostly avoid the
/// need's own words, so they test meaning rather than term overlap. A need
/// without an entry is used verbatim.
const PARAPHRASES: &[(&str, &str)] = &[
    (
        "blocking out engine noise on long flights",
        "silencing jet engine roar on long-haul trips",
    ),
    (
        "focused listening in a noisy open office",
        "concentrating on music amid chatty coworkers",
    ),
    (
        "private audio for late night movies",
        "watching films at midnight without waking anyone",
    ),
    (
        "tiny cordless audio for running workouts",
        "little wire-free sound for jogging sessions",
    ),
    (
        "pocketable sound for the commute",
        "music that fits in a pocket on the train to work",
    ),
    (
        "sweatproof music at the gym",
        "tunes that survive sweaty fitness classes",
    ),
    (
        "loud music for a backyard party",
        "booming tunes for a garden barbecue",
    ),
    ("rugged sound at the beach", "tough audio for seaside trips"),
    (
        "filling a living room with audio",
        "room-filling sound for the lounge",
    ),
    (
        "portable computer for college coursework",
        "a machine for university assignments and essays",
    ),
    (
        "machine for editing video on the go",
        "cutting footage while travelling",
    ),
    (
        "lightweight computer for business travel",
        "slim pc for work trips",
    ),
    (
        "second screen for spreadsheets at work",
        "extra screen space for excel at the office",
    ),
    (
        "sharp panel for photo retouching",
        "colour-accurate viewing for editing pictures",
    ),
    (
        "high refresh gaming at a desk",
        "smooth fast frame rates for pc games",
    ),
    (
        "satisfying typing for programmers",
        "pleasant keys for writing code all day",
    ),
    (
        "quiet typing in a shared room",
        "silent keystrokes so roommates can sleep",
    ),
    (
        "compact layout for a small desk",
        "space-saving keys for a tiny workspace",
    ),
    (
        "pointing device that eases wrist strain",
        "ergonomic clicker to prevent wrist pain",
    ),
    (
        "precise aiming for competitive games",
        "accurate tracking for esports shooters",
    ),
    (
        "travel friendly pointer for a laptop bag",
        "small cursor controller to carry on trips",
    ),
    (
        "capturing wildlife far away",
        "photographing birds and animals at long range",
    ),
    (
        "vlogging with a flip screen",
        "filming yourself for youtube with a swivel screen",
    ),
    (
        "sharp travel snapshots without a phone",
        "crisp holiday photos better than a smartphone",
    ),
    (
        "tracking heart rate during marathon training",
        "monitoring pulse while preparing for a long-distance race",
    ),
    (
        "wrist notifications without a phone",
        "seeing messages and alerts on your arm",
    ),
    (
        "sleep tracking on the wrist",
        "measuring how well you rest at night",
    ),
    (
        "reliable internet in every room of a big house",
        "strong wireless coverage across a large home",
    ),
    (
        "low lag connection for online gaming",
        "low ping for multiplayer games",
    ),
    (
        "covering a garden office with signal",
        "getting internet out to a backyard shed",
    ),
    (
        "reading comics and ebooks on the sofa",
        "enjoying digital books and graphic novels on the couch",
    ),
    ("sketching with a stylus", "drawing digitally with a pen"),
    (
        "keeping kids entertained in the car",
        "amusing children on road trips",
    ),
    (
        "morning brew for a busy household",
        "breakfast caffeine for a big family",
    ),
    (
        "cafe style shots at home",
        "barista quality drinks in your own kitchen",
    ),
    (
        "caffeine fix without a trip to the barista",
        "making lattes myself instead of buying them",
    ),
    ("smoothies before work", "fruit shakes for breakfast"),
    (
        "crushing ice for frozen drinks",
        "making margaritas and slushies",
    ),
    (
        "pureeing soups and baby food",
        "mashing vegetables into silky purees for infants",
    ),
    (
        "picking up pet hair from carpets",
        "removing dog and cat fur from rugs",
    ),
    (
        "keeping floors tidy while away",
        "automatic floor cleaning when nobody is home",
    ),
    ("quick cleanups of crumbs", "fast tidying after messy meals"),
    (
        "relief from pollen allergies in the bedroom",
        "hay fever relief while sleeping",
    ),
    (
        "removing wildfire smoke indoors",
        "clearing smoky haze inside during fire season",
    ),
    (
        "fresher air in a nursery",
        "clean breathing for a baby's room",
    ),
    ("searing steaks evenly", "browning meat with even heat"),
    (
        "cooking eggs without sticking",
        "omelettes that slide right off",
    ),
    (
        "outfitting a first apartment kitchen",
        "stocking a new home with pots for the first time",
    ),
    (
        "slicing tomatoes paper thin",
        "cutting very thin slices of vegetables",
    ),
    (
        "prepping vegetables quickly",
        "fast chopping of onions and carrots",
    ),
    (
        "a gift for someone who loves cooking",
        "present for a home cook",
    ),
    (
        "hot water for tea in a minute",
        "boiling water fast for a cuppa",
    ),
    (
        "precise pouring for filter brews",
        "controlled pour for pour-over coffee",
    ),
    (
        "boiling water in a dorm room",
        "heating water in student housing",
    ),
    (
        "crispy fries with little oil",
        "crunchy chips with hardly any grease",
    ),
    ("quick weeknight dinners", "fast evening meals after work"),
    (
        "reheating pizza so it stays crunchy",
        "warming up leftovers so they stay crisp",
    ),
    (
        "staying cool on hot summer nights",
        "sleeping without overheating in a heatwave",
    ),
    (
        "cosy warmth through winter",
        "keeping toasty in bed when it is freezing",
    ),
    (
        "soft sleep for sensitive skin",
        "gentle fabric for people with eczema",
    ),
    (
        "shelter for a weekend in the mountains",
        "overnight cover on an alpine weekend trip",
    ),
    (
        "staying dry during stormy nights outside",
        "keeping rain out during a thunderstorm",
    ),
    (
        "sleeping under the stars with the family",
        "family campouts in the wilderness",
    ),
    (
        "staying warm on frosty nights outdoors",
        "keeping cozy in freezing temperatures outside",
    ),
    (
        "light bedroll for thru-hiking",
        "ultralight bedding for long-distance trails",
    ),
    (
        "cosy overnight at a campsite",
        "comfortable rest when car camping",
    ),
    (
        "carrying gear on multi-day treks",
        "hauling equipment on a week-long expedition",
    ),
    (
        "hauling a laptop and lunch on a bike commute",
        "carrying a computer to work by bicycle",
    ),
    (
        "light load for summit scrambles",
        "minimal kit for a peak ascent",
    ),
    (
        "ankle support on rocky trails",
        "stable footing over rough stony paths",
    ),
    (
        "dry feet crossing streams",
        "keeping socks dry when wading through creeks",
    ),
    (
        "grip on muddy descents",
        "traction on slippery downhill paths",
    ),
    (
        "head protection for the daily ride to work",
        "staying safe while commuting by bicycle",
    ),
    (
        "safety gear for mountain trails",
        "protection for downhill mtb riding",
    ),
    (
        "something safe for a child learning to ride",
        "protecting a toddler on a first balance bicycle",
    ),
    (
        "hands-free light for night hikes",
        "illumination for walking trails after dark",
    ),
    (
        "seeing the trail before sunrise",
        "lighting the path on early morning runs",
    ),
    (
        "reading in a tent after dark",
        "a beam for books at the campsite at night",
    ),
    (
        "keeping drinks icy cold all day",
        "beverages that stay chilled for hours",
    ),
    (
        "staying hydrated on long hikes",
        "enough to drink on a long trek",
    ),
    (
        "hot tea during a winter commute",
        "warm drinks on a chilly journey to work",
    ),
    (
        "sitting comfortably through long workdays",
        "comfortable seating for eight hour shifts",
    ),
    (
        "easing lower back pain at a desk",
        "relief for lumbar aches while working",
    ),
    (
        "posture support for a home office",
        "keeping a healthy back when working remotely",
    ),
    (
        "switching between sitting and upright work",
        "alternating positions at work throughout the day",
    ),
    (
        "less time sitting during the day",
        "reducing a sedentary lifestyle at work",
    ),
    (
        "a height adjustable workstation",
        "a table that raises and lowers",
    ),
    (
        "reducing eye strain while reading at night",
        "easier on the eyes for evening study",
    ),
    (
        "bright light for detailed crafts",
        "strong illumination for sewing and model making",
    ),
    (
        "warm glow for a cosy workspace",
        "soft amber ambience for a snug study corner",
    ),
    ("planning the week by hand", "handwritten weekly planning"),
    (
        "sketching ideas with fountain pens",
        "drawing with ink that does not bleed through",
    ),
    ("keeping a daily diary", "writing down thoughts every day"),
];

/// Words too common to count as shared with a title.
const STOPWORDS: &[&str] = &[
    "a", "an", "and", "at", "by", "for", "from", "in", "is", "it", "of", "on", "so", "that", "the",
    "to", "with", "who", "while", "your",
];

fn paraphrase(need: &str) -> Option<&'static str> {
    PARAPHRASES
        .iter()
        .find(|(n, _)| *n == need)
        .map(|(_, p)| *p)
}

fn words(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Whether the query shares a substantive word with the title.
fn shares_title_word(query: &str, title: &str) -> bool {
    let title: HashSet<String> = words(title).into_iter().collect();
    words(query)
        .iter()
        .any(|w| !STOPWORDS.contains(&w.as_str()) && title.contains(w))
}

/// Optimal-string-alignment edit distance (Damerau–Levenshtein with
/// adjacent transpositions).
pub fn edit_distance(a: &str, b: &str) -> usize {
    strsim::osa_distance(a, b)
}

const KEY_ROWS: &[&str] = &["1234567890", "qwertyuiop", "asdfghjkl", "zxcvbnm"];

/// A keyboard neighbour of `c` on the same row (case kept).
fn neighbour(c: char, rng: &mut ChaCha8Rng) -> char {
    let lower = c.to_ascii_lowercase();
    for row in KEY_ROWS {
        let keys: Vec<char> = row.chars().collect();
        if let Some(i) = keys.iter().position(|k| *k == lower) {
            let mut options = Vec::new();
            if i > 0 {
                options.push(keys[i - 1]);
            }
            if i + 1 < keys.len() {
                options.push(keys[i + 1]);
            }
            let k = *options.choose(rng).expect("every row has two keys");
            return if c.is_ascii_uppercase() {
                k.to_ascii_uppercase()
            } else {
                k
            };
        }
    }
    c
}

/// Applies `edits` random edits (deletion, substitution by a keyboard
/// neighbour, adjacent transposition) to letters and digits of `s`, never
/// to its first character. `None` when the result equals `s` under
/// identifier normalisation or `s` is too short.
fn typo(s: &str, edits: usize, rng: &mut ChaCha8Rng) -> Option<String> {
    let mut chars: Vec<char> = s.chars().collect();
    for _ in 0..edits {
        let positions: Vec<usize> = (1..chars.len())
            .filter(|&i| chars[i].is_ascii_alphanumeric())
            .collect();
        if positions.len() < 3 {
            return None;
        }
        let pos = *positions.choose(rng)?;
        match rng.gen_range(0..3) {
            0 => {
                chars.remove(pos);
            }
            1 => chars[pos] = neighbour(chars[pos], rng),
            _ => {
                let next = pos + 1;
                if next < chars.len()
                    && chars[next].is_ascii_alphanumeric()
                    && chars[next] != chars[pos]
                {
                    chars.swap(pos, next);
                } else {
                    chars[pos] = neighbour(chars[pos], rng);
                }
            }
        }
    }
    let out: String = chars.into_iter().collect();
    (identifier_key(&out) != identifier_key(s)).then_some(out)
}

/// Whether a phrase starts with an -ing verb ("blocking out ...").
fn starts_with_gerund(phrase: &str) -> bool {
    phrase
        .split_whitespace()
        .next()
        .is_some_and(|w| w.len() > 5 && w.ends_with("ing") && w != "something")
}

fn article(noun: &str) -> &'static str {
    if noun.ends_with('s') && !noun.ends_with("ss") {
        "some"
    } else if noun.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

/// The generated catalog, with the indexes the rules need.
struct Catalog {
    items: Vec<(Product, Truth)>,
    by_category: BTreeMap<&'static str, Vec<usize>>,
    /// Lower-cased title-noun words of each category.
    noun_words: HashMap<&'static str, HashSet<String>>,
    model_keys: Vec<String>,
    sku_keys: Vec<String>,
    brands: Vec<String>,
}

impl Catalog {
    fn new(g: &Generator) -> Self {
        let items: Vec<(Product, Truth)> = (0..g.products).map(|i| g.product(i)).collect();
        let mut by_category: BTreeMap<&'static str, Vec<usize>> = BTreeMap::new();
        let mut noun_words: HashMap<&'static str, HashSet<String>> = HashMap::new();
        let mut brands: Vec<String> = Vec::new();
        for (i, (p, t)) in items.iter().enumerate() {
            by_category.entry(t.category).or_default().push(i);
            noun_words
                .entry(t.category)
                .or_default()
                .extend(words(t.noun));
            if !brands.contains(&p.brand) {
                brands.push(p.brand.clone());
            }
        }
        let model_keys = items
            .iter()
            .map(|(p, _)| identifier_key(&p.model))
            .collect();
        let sku_keys = items.iter().map(|(p, _)| identifier_key(&p.sku)).collect();
        Catalog {
            items,
            by_category,
            noun_words,
            model_keys,
            sku_keys,
            brands,
        }
    }

    /// Whether `s` is the unique nearest product to the edited model key.
    fn model_typo_is_recoverable(&self, s: usize, edited: &str) -> bool {
        let key = identifier_key(edited);
        let own = edit_distance(&key, &self.model_keys[s]);
        (0..self.items.len()).filter(|&i| i != s).all(|i| {
            edit_distance(&key, &self.model_keys[i]).min(edit_distance(&key, &self.sku_keys[i]))
                > own
        })
    }

    /// Whether `brand` is the unique nearest brand to the edited one.
    fn brand_typo_is_recoverable(&self, brand: &str, edited: &str) -> bool {
        let e = edited.to_lowercase();
        let own = edit_distance(&e, &brand.to_lowercase());
        self.brands
            .iter()
            .filter(|b| b.as_str() != brand)
            .all(|b| edit_distance(&e, &b.to_lowercase()) > own)
    }

    /// Judgments over `s`'s category: `grade(index)` per product, zeros
    /// dropped, sorted by grade (descending) then product id.
    fn judge(&self, s: usize, grade: impl Fn(usize) -> u8) -> Vec<Judgment> {
        let mut out: Vec<Judgment> = self.by_category[self.items[s].1.category]
            .iter()
            .filter_map(|&i| {
                let g = grade(i);
                (g > 0).then(|| Judgment {
                    product_id: self.items[i].0.product_id.clone(),
                    grade: g,
                })
            })
            .collect();
        out.sort_by(|a, b| {
            b.grade
                .cmp(&a.grade)
                .then_with(|| a.product_id.cmp(&b.product_id))
        });
        out
    }

    /// Exact and typo grading: 3 the seed, 1 its category-and-brand series.
    fn judge_identifier(&self, s: usize) -> Vec<Judgment> {
        let brand = &self.items[s].0.brand;
        self.judge(s, |i| {
            if i == s {
                3
            } else if &self.items[i].0.brand == brand {
                1
            } else {
                0
            }
        })
    }

    /// Need grading: 3 same need, 2 same category (both among `eligible`).
    fn judge_need(&self, s: usize, eligible: impl Fn(usize) -> bool) -> Vec<Judgment> {
        let need = self.items[s].1.need;
        self.judge(s, |i| match (eligible(i), self.items[i].1.need == need) {
            (false, _) => 0,
            (true, true) => 3,
            (true, false) => 2,
        })
    }

    /// Noun grading: 3 same title noun, 2 same category (both among `eligible`).
    fn judge_noun(&self, s: usize, eligible: impl Fn(usize) -> bool) -> Vec<Judgment> {
        let noun = self.items[s].1.noun;
        self.judge(s, |i| match (eligible(i), self.items[i].1.noun == noun) {
            (false, _) => 0,
            (true, true) => 3,
            (true, false) => 2,
        })
    }
}

/// Whether a string attribute of `p` contains `word` as a whole word.
fn attribute_mentions(p: &Product, word: &str) -> bool {
    p.attributes.values().any(|v| match v {
        Value::String(s) => words(s).iter().any(|w| w == word),
        _ => false,
    })
}

/// One hard filter that product `p` meets, of the given kind (0 price cap,
/// 1 in stock, 2 minimum rating, 3 attribute equality); `None` when `p`
/// cannot anchor that kind.
fn filter_for(p: &Product, kind: usize, rng: &mut ChaCha8Rng) -> Option<Map<String, Value>> {
    let mut f = Map::new();
    match kind {
        0 => {
            let dollars = (p.price_cents + 99) / 100;
            let step = match dollars {
                ..=100 => 10,
                101..=500 => 50,
                _ => 100,
            };
            let cap = (dollars + step - 1) / step * step;
            f.insert("max_price_cents".into(), Value::from(cap * 100));
        }
        1 => {
            if !matches!(p.availability.as_str(), "in_stock" | "low_stock") {
                return None;
            }
            f.insert("in_stock_only".into(), Value::Bool(true));
        }
        2 => {
            let r = f64::from(p.rating?);
            if r < 3.5 {
                return None;
            }
            let min = ((r * 2.0).floor() / 2.0).min(4.5);
            f.insert("min_rating".into(), Value::from(min));
        }
        _ => {
            let options: Vec<(&String, &Value)> = p
                .attributes
                .iter()
                .filter(|(_, v)| matches!(v, Value::String(_) | Value::Bool(true)))
                .collect();
            let (k, v) = options.choose(rng)?;
            let mut a = Map::new();
            a.insert((*k).clone(), (*v).clone());
            f.insert("attributes".into(), Value::Object(a));
        }
    }
    Some(f)
}

fn rng_for(opts: &QuerySetOptions, intent: Intent) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed ^ 0x5EED_E7A1_0000_0000);
    rng.set_stream(intent as u64 + 1);
    rng
}

/// Generates the judged query set: `per_intent` queries of every intent,
/// deterministic for the same options (see the module docs for the rules).
pub fn generate(opts: &QuerySetOptions) -> Vec<EvalQuery> {
    let cat = Catalog::new(&Generator::new(opts.seed, opts.products));
    let n = cat.items.len();
    let mut out = Vec::with_capacity(opts.per_intent * Intent::GENERATED.len());
    for intent in Intent::GENERATED {
        let mut rng = rng_for(opts, intent);
        let mut order: Vec<usize> = (0..n).collect();
        order.shuffle(&mut rng);
        let mut made: Vec<EvalQuery> = Vec::new();
        let mut used: HashSet<String> = HashSet::new();
        for s in order {
            if made.len() >= opts.per_intent {
                break;
            }
            let k = made.len();
            let (p, t) = &cat.items[s];
            // (query, filters, judgments, de-duplication key)
            type Made = (String, Option<Map<String, Value>>, Vec<Judgment>, String);
            let made_query: Option<Made> = match intent {
                Intent::ExactSku => {
                    Some((p.sku.clone(), None, cat.judge_identifier(s), p.sku.clone()))
                }
                Intent::ExactModel => Some((
                    p.model.clone(),
                    None,
                    cat.judge_identifier(s),
                    p.model.clone(),
                )),
                Intent::Typo => {
                    let edits = if rng.gen_bool(0.6) { 1 } else { 2 };
                    let q = match k % 3 {
                        0 => typo(&p.brand, edits, &mut rng)
                            .filter(|b| cat.brand_typo_is_recoverable(&p.brand, b))
                            .map(|b| format!("{b} {}", p.model)),
                        1 => typo(&p.model, edits, &mut rng)
                            .filter(|m| cat.model_typo_is_recoverable(s, m))
                            .map(|m| format!("{} {m}", p.brand)),
                        _ => typo(&p.model, edits, &mut rng)
                            .filter(|m| cat.model_typo_is_recoverable(s, m)),
                    };
                    q.map(|q| (q.clone(), None, cat.judge_identifier(s), q))
                }
                Intent::Descriptive => {
                    let verbatim = t.need.to_string();
                    let para = paraphrase(t.need).map(str::to_string);
                    let mut forms = vec![Some(verbatim), para];
                    if k % 2 == 1 {
                        forms.reverse();
                    }
                    forms
                        .into_iter()
                        .flatten()
                        .find(|q| !shares_title_word(q, &p.title) && !used.contains(q))
                        .map(|q| (q.clone(), None, cat.judge_need(s, |_| true), q))
                }
                Intent::Conversational => {
                    let noun = t.noun.to_lowercase();
                    let a = article(&noun);
                    let need = t.need;
                    // "for <need>" reads well only when the need starts with
                    // an -ing verb; noun-phrase needs are set apart instead.
                    let q = match (k % 3, starts_with_gerund(need)) {
                        (0, true) => {
                            format!("I'm looking for {a} {noun} for {need}, any suggestions?")
                        }
                        (1, true) => format!("Can you recommend {a} {noun} for {need}?"),
                        (_, true) => {
                            format!("Hi! I need {a} {noun} for {need}. What would you suggest?")
                        }
                        (0, false) => {
                            format!("I'm looking for {a} {noun} ({need}), any suggestions?")
                        }
                        (1, false) => format!("Can you recommend {a} {noun}? Use case: {need}."),
                        (_, false) => {
                            format!("Hi! I need {a} {noun}. It's for this: {need}. What would you suggest?")
                        }
                    };
                    Some((q, None, cat.judge_need(s, |_| true), t.need.to_string()))
                }
                Intent::Filtered => filter_for(p, k % 4, &mut rng).map(|f| {
                    let ok = |i: usize| {
                        super::satisfies(&CatalogRow::from(&cat.items[i].0), &f).unwrap_or(false)
                    };
                    let (q, j) = if (k / 4).is_multiple_of(2) {
                        (t.need.to_string(), cat.judge_need(s, ok))
                    } else {
                        (t.noun.to_lowercase(), cat.judge_noun(s, ok))
                    };
                    let key = format!("{q}|{}", Value::Object(f.clone()));
                    (q, Some(f), j, key)
                }),
                Intent::Negated => {
                    let noun = t.noun.to_lowercase();
                    let nouns = &cat.noun_words[t.category];
                    let by_brand = k.is_multiple_of(2);
                    let word = if by_brand {
                        let b = p.brand.to_lowercase();
                        (!b.contains(' ')).then_some(b)
                    } else {
                        let mut values: Vec<String> = p
                            .attributes
                            .values()
                            .filter_map(|v| v.as_str())
                            .map(str::to_lowercase)
                            .filter(|v| {
                                v.len() >= 3
                                    && v.chars().all(|c| c.is_ascii_alphabetic())
                                    && !nouns.contains(v)
                            })
                            .collect();
                        values.sort();
                        values.choose(&mut rng).cloned()
                    };
                    word.map(|w| {
                        let excluded = |i: usize| {
                            let q = &cat.items[i].0;
                            if by_brand {
                                q.brand.to_lowercase() == w
                            } else {
                                attribute_mentions(q, &w)
                            }
                        };
                        let j = cat.judge(s, |i| {
                            if excluded(i) {
                                1
                            } else if cat.items[i].1.noun == t.noun {
                                3
                            } else {
                                2
                            }
                        });
                        let q = format!("{noun} -{w}");
                        (q.clone(), None, j, q)
                    })
                }
                // Written by hand for other catalogs; never generated.
                Intent::Short | Intent::Brand => None,
            };
            let Some((query, filters, judgments, key)) = made_query else {
                continue;
            };
            if !used.insert(key) {
                continue;
            }
            made.push(EvalQuery {
                id: format!("{}-{:03}", intent.as_str(), k + 1),
                query,
                filters,
                intent,
                judgments,
            });
        }
        out.extend(made);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_transpositions_once() {
        assert_eq!(edit_distance("kestrel", "kestrel"), 0);
        assert_eq!(edit_distance("kestrel", "ketsrel"), 1);
        assert_eq!(edit_distance("kestrel", "kestel"), 1);
        assert_eq!(edit_distance("kestrel", "kestrwl"), 1);
        assert_eq!(edit_distance("abc", ""), 3);
    }

    #[test]
    fn every_need_has_a_paraphrase_without_title_nouns() {
        let cat = Catalog::new(&Generator::new(DEFAULT_SEED, 400));
        for (_, t) in &cat.items {
            let p = paraphrase(t.need).unwrap_or_else(|| panic!("no paraphrase for {:?}", t.need));
            assert!(
                !shares_title_word(p, t.noun),
                "{p:?} uses a word of {:?}",
                t.noun
            );
        }
    }

    #[test]
    fn typos_change_the_identifier() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for _ in 0..200 {
            let t = typo("KSHP-1040 Pro", 2, &mut rng);
            if let Some(t) = t {
                assert_ne!(identifier_key(&t), "kshp1040pro");
                assert!(t.starts_with('K'));
            }
        }
    }
}
