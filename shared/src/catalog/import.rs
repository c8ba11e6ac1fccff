//! Importing a user's catalog from JSON Lines (products and evidence) or CSV
//! (products).
//!
//! Every row is validated before anything is written, and a bad row is
//! reported with its file, line number and field. The write is one
//! transaction: staged with `COPY`, merged into the catalog (a changed product
//! gets a new revision), and followed by a projection refresh of the products
//! it touched. Any error rolls all of it back.

use super::load::{copy_evidence, copy_products, refresh_projection, Progress};
use super::{Evidence, Product, AVAILABILITY};
use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io::BufRead;
use std::path::Path;
use tokio_postgres::Client;

/// A rejected import: where, which field, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportError {
    pub file: String,
    pub line: Option<u64>,
    pub field: Option<String>,
    pub message: String,
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": field `{field}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ImportError {}

/// What an import wrote.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ImportReport {
    pub products: u64,
    pub evidence: u64,
    pub projection_rows: u64,
    /// Products the import removed from the catalog ([`ImportOptions::replace`]).
    pub removed: u64,
}

/// How an import treats the catalog's products that its file does not name.
#[derive(Debug, Clone, Copy, Default)]
pub struct ImportOptions {
    /// Remove them, with their evidence and vectors: the products file is
    /// the whole catalog (a feed's full export). Off: they stay as they are.
    pub replace: bool,
}

struct RowCtx<'a> {
    file: &'a str,
    line: u64,
}

impl RowCtx<'_> {
    fn err(&self, field: Option<&str>, message: impl Into<String>) -> ImportError {
        ImportError {
            file: self.file.to_string(),
            line: Some(self.line),
            field: field.map(str::to_string),
            message: message.into(),
        }
    }
}

const PRODUCT_FIELDS: &[&str] = &[
    "product_id",
    "sku",
    "model",
    "brand",
    "title",
    "domain",
    "category_key",
    "description",
    "price_cents",
    "currency",
    "rating",
    "review_count",
    "availability",
    "attributes",
    "aliases",
    "source_uri",
    "updated_at",
    "revision",
];
const EVIDENCE_FIELDS: &[&str] = &[
    "evidence_id",
    "product_id",
    "kind",
    "source_uri",
    "source_revision",
    "title",
    "body",
    "rating",
    "updated_at",
];

fn check_fields(
    obj: &Map<String, Value>,
    allowed: &[&str],
    ctx: &RowCtx,
) -> Result<(), ImportError> {
    match obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(ctx.err(Some(k), "unknown field")),
        None => Ok(()),
    }
}

fn req_str(
    obj: &Map<String, Value>,
    f: &str,
    max: usize,
    ctx: &RowCtx,
) -> Result<String, ImportError> {
    match obj.get(f) {
        Some(Value::String(s)) if !s.trim().is_empty() && s.chars().count() <= max => Ok(s.clone()),
        Some(Value::String(s)) if s.trim().is_empty() => Err(ctx.err(Some(f), "must not be empty")),
        Some(Value::String(_)) => Err(ctx.err(Some(f), format!("longer than {max} characters"))),
        None | Some(Value::Null) => Err(ctx.err(Some(f), "is required")),
        Some(_) => Err(ctx.err(Some(f), "must be a string")),
    }
}

/// Whether a JSON value holds a NUL in any string (jsonb cannot).
fn holds_nul(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains('\0'),
        Value::Array(a) => a.iter().any(holds_nul),
        Value::Object(m) => m.iter().any(|(k, v)| k.contains('\0') || holds_nul(v)),
        _ => false,
    }
}

/// Refuses a row with a NUL in any string, naming its field: PostgreSQL's
/// text and jsonb cannot hold one.
fn check_nul(obj: &Map<String, Value>, ctx: &RowCtx) -> Result<(), ImportError> {
    // The row's own keys are the known field names (`check_fields`).
    match obj.iter().find(|(_, v)| holds_nul(v)) {
        Some((k, _)) => Err(ctx.err(
            Some(k),
            "contains a NUL character, which the database's text cannot hold",
        )),
        None => Ok(()),
    }
}

/// A value a search filter names exactly (domain, category, brand): what the
/// request validator would refuse or trim in a filter could never be
/// matched, so it is refused here, with its line and field.
fn filter_str(
    obj: &Map<String, Value>,
    f: &str,
    max: usize,
    ctx: &RowCtx,
) -> Result<String, ImportError> {
    let s = req_str(obj, f, max, ctx)?;
    if s.trim() != s {
        return Err(ctx.err(
            Some(f),
            "has leading or trailing whitespace, which a filter can never match",
        ));
    }
    if crate::search::request::holds_refused(&s, crate::search::request::TextKind::Token) {
        return Err(ctx.err(
            Some(f),
            "contains control or bidirectional formatting characters, which a filter refuses",
        ));
    }
    // A filter of invisible characters alone is no filter to the request
    // validator, so such a value could never be asked for.
    if crate::search::request::normalize_query(&s).is_empty() {
        return Err(ctx.err(
            Some(f),
            "has no visible character (only invisible ones), which a filter can never match",
        ));
    }
    Ok(s)
}

fn opt_str(obj: &Map<String, Value>, f: &str, ctx: &RowCtx) -> Result<Option<String>, ImportError> {
    match obj.get(f) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ctx.err(Some(f), "must be a string")),
    }
}

fn opt_int(
    obj: &Map<String, Value>,
    f: &str,
    min: i64,
    max: i64,
    ctx: &RowCtx,
) -> Result<Option<i64>, ImportError> {
    match obj.get(f) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(v) if (min..=max).contains(&v) => Ok(Some(v)),
            _ => Err(ctx.err(
                Some(f),
                format!("must be a whole number from {min} to {max}"),
            )),
        },
        Some(_) => Err(ctx.err(Some(f), "must be a number")),
    }
}

fn opt_rating(obj: &Map<String, Value>, ctx: &RowCtx) -> Result<Option<f32>, ImportError> {
    match obj.get("rating") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(v) if (0.0..=5.0).contains(&v) => Ok(Some(v as f32)),
            _ => Err(ctx.err(Some("rating"), "must be between 0 and 5")),
        },
        Some(_) => Err(ctx.err(Some("rating"), "must be a number")),
    }
}

fn opt_time(obj: &Map<String, Value>, ctx: &RowCtx) -> Result<DateTime<Utc>, ImportError> {
    match opt_str(obj, "updated_at", ctx)? {
        None => Ok(Utc::now()),
        Some(s) => DateTime::parse_from_rfc3339(&s)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|_| ctx.err(Some("updated_at"), "must be an RFC 3339 timestamp")),
    }
}

/// The source system's revision, kept as an opaque string: a positive whole
/// number (the sample catalog's form) or any text of 1-128 characters (a
/// date, a version, a content hash). Absent: `"1"`.
fn source_revision(obj: &Map<String, Value>, ctx: &RowCtx) -> Result<String, ImportError> {
    const F: &str = "source_revision";
    match obj.get(F) {
        None | Some(Value::Null) => Ok("1".into()),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(v) if v >= 1 => Ok(v.to_string()),
            _ => Err(ctx.err(Some(F), "a number must be a whole number from 1")),
        },
        Some(Value::String(s)) => {
            let s = s.trim();
            if s.is_empty() || s.chars().count() > 128 || s.chars().any(char::is_control) {
                Err(ctx.err(
                    Some(F),
                    "must be 1-128 characters without control characters",
                ))
            } else {
                Ok(s.to_string())
            }
        }
        Some(_) => Err(ctx.err(Some(F), "must be a string or a whole number")),
    }
}

fn check_id(value: &str, field: &str, max: usize, ctx: &RowCtx) -> Result<(), ImportError> {
    let ok = value.len() <= max
        && value
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._:-".contains(c));
    if ok {
        Ok(())
    } else {
        Err(ctx.err(
            Some(field),
            format!("must be 1-{max} letters, digits or . _ : - starting with a letter or digit"),
        ))
    }
}

fn product_from(obj: &Map<String, Value>, ctx: &RowCtx) -> Result<Product, ImportError> {
    check_fields(obj, PRODUCT_FIELDS, ctx)?;
    check_nul(obj, ctx)?;
    let product_id = req_str(obj, "product_id", 64, ctx)?;
    check_id(&product_id, "product_id", 64, ctx)?;
    let availability = req_str(obj, "availability", 32, ctx)?;
    if !AVAILABILITY.contains(&availability.as_str()) {
        return Err(ctx.err(
            Some("availability"),
            format!("must be one of {}", AVAILABILITY.join(", ")),
        ));
    }
    // The price filter's own bound (`max_price_cents`).
    let price_cents = opt_int(obj, "price_cents", 0, 1_000_000_000_000, ctx)?
        .ok_or_else(|| ctx.err(Some("price_cents"), "is required"))?;
    let currency = opt_str(obj, "currency", ctx)?.unwrap_or_else(|| "USD".into());
    if currency.len() != 3 || !currency.chars().all(|c| c.is_ascii_uppercase()) {
        return Err(ctx.err(
            Some("currency"),
            "must be a three-letter ISO 4217 code such as USD",
        ));
    }
    let attributes = match obj.get("attributes") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => {
            if let Some(k) = m
                .iter()
                .find_map(|(k, v)| (!super::attribute::is_valid(v)).then_some(k))
            {
                return Err(ctx.err(
                    Some("attributes"),
                    format!(
                        "value of `{k}` must be a string, number or boolean, or a list of them"
                    ),
                ));
            }
            m.clone()
        }
        Some(_) => return Err(ctx.err(Some("attributes"), "must be an object")),
    };
    let aliases = match obj.get("aliases") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| ctx.err(Some("aliases"), "must be an array of strings"))?,
        Some(_) => return Err(ctx.err(Some("aliases"), "must be an array of strings")),
    };
    Ok(Product {
        sku: req_str(obj, "sku", 64, ctx)?,
        model: req_str(obj, "model", 128, ctx)?,
        brand: filter_str(obj, "brand", 128, ctx)?,
        title: req_str(obj, "title", 512, ctx)?,
        domain: filter_str(obj, "domain", 64, ctx)?,
        category_key: filter_str(obj, "category_key", 64, ctx)?,
        description: opt_str(obj, "description", ctx)?.unwrap_or_default(),
        price_cents,
        currency,
        rating: opt_rating(obj, ctx)?,
        review_count: opt_int(obj, "review_count", 0, i64::from(i32::MAX), ctx)?.unwrap_or(0)
            as i32,
        availability,
        attributes,
        aliases,
        source_uri: opt_str(obj, "source_uri", ctx)?
            .unwrap_or_else(|| format!("import://products/{product_id}")),
        updated_at: opt_time(obj, ctx)?,
        // Room for a billion changes after it (each import's change adds one).
        revision: opt_int(obj, "revision", 1, i64::from(i32::MAX / 2), ctx)?.unwrap_or(1) as i32,
        product_id,
    })
}

/// The most bytes of text (`DocumentText::total`) whose full-text document
/// can never pass PostgreSQL's limit on a tsvector: 144 KiB. A longer text
/// may still fit (prose makes about 1-3 bytes of document a byte); when an
/// import's projection refresh meets the limit, only the products past
/// this bound are tried one by one to name the one that passes it
/// (`import`). The bound assumes a UTF-8 database and the stock `english`
/// configuration, whose lowercasing lengthens no one-byte character.
///
/// The limit (`MAXSTRPOS`, checked by `to_tsvector` and by `||`) is
/// 1,048,575 bytes of lexemes and positions; the 4-byte entry of each
/// lexeme is not counted. Each distinct lexeme takes its bytes, at most one
/// byte of alignment, 2 bytes of position count and 2 per position. The
/// positions below 16,383 belong to one lexeme each (one lexeme a token in
/// the `english` configuration, the four parts of the document shifted
/// apart by `||`), and a lexeme holds 16,383 (where later positions are
/// clamped) at most once: 32,764 bytes, plus 2 a lexeme. So a lexeme of `l`
/// bytes costs at most `l + 5` besides those 32,764 bytes. Lexemes of one or
/// two bytes are at most 128 + 128² + 1,920 distinct strings (ASCII, or one
/// two-byte character), at most 128,896 bytes. A longer lexeme comes from a
/// token of `b >= 2` bytes (stemming never lengthens a word; lowercasing
/// lengthens a character by at most one byte, and only a two-byte one, as
/// `Ⱥ` to `ⱥ`), so `l <= 1.5 b` and `l + 5 <= 4 b`. Tokens overlap only in
/// a hyphenated word (the whole word, then its parts, which leave out the
/// hyphens) and a URL (the whole URL, ASCII only, then its host and path):
/// a hyphenated word of `b` bytes and its parts cost at most
/// `1.5 b + 5 + 4 (b - 1) <= 6 b`, a URL and its host and path at most
/// `2 b + 15 <= 6 b`. So `n` bytes of text make a document of at most
/// `6 n + 32,764 + 128,896` bytes: 1,046,396 at this bound. (The costliest
/// texts found, hyphenated pairs of distinct short words, make 3.1-3.4 bytes
/// of document a byte: 461,696 bytes at this bound.)
pub const DOCUMENT_TEXT_MAX_BYTES: usize = 147_456;

/// The bytes of text the projection builds a product's full-text document
/// from (`search.refresh_projection`, migration 0028): its brand, model,
/// SKU and aliases; its title; its category and attribute values; its
/// description; each counted with a separator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DocumentText {
    pub description: usize,
    pub aliases: usize,
    pub attributes: usize,
    /// Everything: the three above, the title, brand, model, SKU and
    /// category, and the separators.
    pub total: usize,
}

/// How many bytes of text PostgreSQL reads a JSON number's text as (at
/// most): `jsonb` keeps it as a `numeric`, which writes out its exponent
/// (`1e300` reads as 301 digits).
fn number_text_bytes(n: &serde_json::Number) -> usize {
    let s = n.to_string();
    match s.find(['e', 'E']) {
        None => s.len(),
        Some(at) => {
            let exponent = s[at + 1..]
                .trim_start_matches('+')
                .parse::<i64>()
                .map_or(usize::MAX, |e| {
                    usize::try_from(e.unsigned_abs()).unwrap_or(usize::MAX)
                });
            s.len().saturating_add(exponent).saturating_add(2)
        }
    }
}

/// An attribute value's text in the document (`search.attribute_text`; a
/// true flag reads as its name, a false one not at all).
fn attribute_text_bytes(key: &str, value: &Value) -> usize {
    match value {
        Value::Bool(true) => key.len(),
        Value::Bool(false) | Value::Null => 0,
        Value::String(s) => s.len(),
        Value::Number(n) => number_text_bytes(n),
        // A list's items joined with ", " ("true"/"false" for flags).
        Value::Array(items) => items.iter().fold(0usize, |sum, item| {
            let text = match item {
                Value::Bool(_) => 5,
                Value::Array(_) => 0,
                other => attribute_text_bytes(key, other),
            };
            sum.saturating_add(text).saturating_add(2)
        }),
        Value::Object(_) => value.to_string().len(),
    }
}

/// The bytes of text a product's full-text document is built from.
pub fn document_text(p: &Product) -> DocumentText {
    let aliases = p
        .aliases
        .iter()
        .fold(0usize, |sum, a| sum.saturating_add(a.len() + 1));
    let attributes = p.attributes.iter().fold(0usize, |sum, (k, v)| {
        sum.saturating_add(attribute_text_bytes(k, v))
            .saturating_add(1)
    });
    let description = p.description.len();
    // Three spaces join brand, model, SKU and the aliases; one joins the
    // category and the attribute values.
    let fixed =
        p.brand.len() + p.model.len() + p.sku.len() + p.title.len() + p.category_key.len() + 4;
    DocumentText {
        description,
        aliases,
        attributes,
        total: fixed
            .saturating_add(description)
            .saturating_add(aliases)
            .saturating_add(attributes),
    }
}

/// The field that holds most of a product's searchable text, of those
/// without a length bound of their own.
fn largest_text_field(text: &DocumentText) -> &'static str {
    [
        ("description", text.description),
        ("aliases", text.aliases),
        ("attributes", text.attributes),
    ]
    .into_iter()
    .fold(
        ("description", 0),
        |best, f| if f.1 > best.1 { f } else { best },
    )
    .0
}

/// Whether `e` is PostgreSQL refusing a tsvector past its size limit
/// ("string is too long for tsvector", raised by `to_tsvector` and by `||`;
/// the routine's name does not depend on the server's message language).
fn tsvector_too_long(e: &tokio_postgres::Error) -> bool {
    e.as_db_error().is_some_and(|db| {
        *db.code() == tokio_postgres::error::SqlState::PROGRAM_LIMIT_EXCEEDED
            && (matches!(db.routine(), Some("make_tsvector" | "tsvector_concat"))
                || db.message().contains("tsvector"))
    })
}

/// A product of an import whose text is past [`DOCUMENT_TEXT_MAX_BYTES`].
struct LongText {
    product_id: String,
    line: u64,
    field: &'static str,
    bytes: usize,
}

/// After the projection refresh met the tsvector limit (and was rolled
/// back): refreshes each product past [`DOCUMENT_TEXT_MAX_BYTES`] alone,
/// longest first, each undone after, and names the first whose document
/// PostgreSQL refuses. Only those can pass the limit.
async fn name_the_long_text(
    tx: &tokio_postgres::Transaction<'_>,
    file: &str,
    mut long: Vec<LongText>,
) -> Result<ImportError, anyhow::Error> {
    long.sort_by_key(|p| std::cmp::Reverse(p.bytes));
    for p in long {
        tx.batch_execute("SAVEPOINT one_product").await?;
        let refused = match refresh_projection(tx, Some(std::slice::from_ref(&p.product_id))).await
        {
            Ok(_) => None,
            Err(e) if tsvector_too_long(&e) => Some(e),
            Err(e) => return Err(e.into()),
        };
        // Released as well: a savepoint rolled back to stays open, and the
        // next one would nest inside it.
        tx.batch_execute("ROLLBACK TO SAVEPOINT one_product; RELEASE SAVEPOINT one_product")
            .await?;
        if let Some(e) = refused {
            let said = e
                .as_db_error()
                .map_or(String::new(), |db| db.message().to_string());
            return Ok(ImportError {
                file: file.to_string(),
                line: Some(p.line),
                field: Some(p.field.into()),
                message: format!(
                    "is too long: the product's searchable text ({} bytes: its description, \
                     title, brand, model, SKU, category, aliases and attribute values) makes a \
                     full-text document past PostgreSQL's 1 MB limit ({said})",
                    p.bytes
                ),
            });
        }
    }
    Ok(ImportError {
        file: file.to_string(),
        line: None,
        field: None,
        message: "a product's full-text document passes PostgreSQL's 1 MB limit (\"string is \
                  too long for tsvector\"); shorten the longest descriptions"
            .into(),
    })
}

fn evidence_from(obj: &Map<String, Value>, ctx: &RowCtx) -> Result<Evidence, ImportError> {
    check_fields(obj, EVIDENCE_FIELDS, ctx)?;
    check_nul(obj, ctx)?;
    let evidence_id = req_str(obj, "evidence_id", 96, ctx)?;
    check_id(&evidence_id, "evidence_id", 96, ctx)?;
    let kind = req_str(obj, "kind", 32, ctx)?;
    if kind != "specification" && kind != "review" {
        return Err(ctx.err(Some("kind"), "must be `specification` or `review`"));
    }
    Ok(Evidence {
        evidence_id,
        product_id: req_str(obj, "product_id", 64, ctx)?,
        kind,
        source_uri: req_str(obj, "source_uri", 2048, ctx)?,
        source_revision: source_revision(obj, ctx)?,
        title: req_str(obj, "title", 512, ctx)?,
        body: req_str(obj, "body", 100_000, ctx)?,
        rating: opt_rating(obj, ctx)?,
        updated_at: opt_time(obj, ctx)?,
    })
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// Opens a catalog file; a name ending in `.gz` is read through gzip.
fn open(path: &Path) -> Result<Box<dyn BufRead>, ImportError> {
    let f = std::fs::File::open(path).map_err(|e| ImportError {
        file: file_name(path),
        line: None,
        field: None,
        message: format!("cannot open: {e}"),
    })?;
    let gz = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gz"));
    Ok(if gz {
        Box::new(std::io::BufReader::new(flate2::read::MultiGzDecoder::new(
            f,
        )))
    } else {
        Box::new(std::io::BufReader::new(f))
    })
}

/// A file's bytes with each `\r` that ends a line (`\r\n`, as spreadsheets
/// and Python's `csv` module write CSV) left out, inside a quoted cell too
/// (its line breaks read as `\n`). The CSV reader counts a record's line by
/// the line feeds before it, and ends a record at the `\r`: without this,
/// every record of such a file was said to be on the line before its own.
struct LineFeeds<R> {
    inner: R,
    /// A `\r` that ended the last chunk, not yet known to end a line.
    held_cr: bool,
}

impl<R: BufRead> LineFeeds<R> {
    fn new(inner: R) -> Self {
        LineFeeds {
            inner,
            held_cr: false,
        }
    }
}

impl<R: BufRead> std::io::Read for LineFeeds<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        loop {
            let buf = self.inner.fill_buf()?;
            if buf.is_empty() {
                // The end: a held `\r` ended no line.
                return Ok(match std::mem::take(&mut self.held_cr) {
                    true => {
                        out[0] = b'\r';
                        1
                    }
                    false => 0,
                });
            }
            if std::mem::take(&mut self.held_cr) && buf[0] != b'\n' {
                out[0] = b'\r';
                return Ok(1);
            }
            let (mut read, mut written) = (0, 0);
            while read < buf.len() && written < out.len() {
                let b = buf[read];
                read += 1;
                if b == b'\r' {
                    match buf.get(read) {
                        Some(b'\n') => continue,
                        Some(_) => {}
                        None => {
                            self.held_cr = true;
                            break;
                        }
                    }
                }
                out[written] = b;
                written += 1;
            }
            self.inner.consume(read);
            if written > 0 {
                return Ok(written);
            }
        }
    }
}

/// The file's name without a trailing `.gz`, to tell its format.
fn inner_name(path: &Path) -> &Path {
    match path.extension() {
        Some(e) if e.eq_ignore_ascii_case("gz") => path.file_stem().map_or(path, Path::new),
        _ => path,
    }
}

fn read_jsonl<T>(
    path: &Path,
    parse: impl Fn(&Map<String, Value>, &RowCtx) -> Result<T, ImportError>,
) -> Result<Vec<(u64, T)>, ImportError> {
    let file = file_name(path);
    let mut out = Vec::new();
    for (i, line) in open(path)?.lines().enumerate() {
        let ctx = RowCtx {
            file: &file,
            line: i as u64 + 1,
        };
        let line = line.map_err(|e| ctx.err(None, format!("cannot read: {e}")))?;
        if line.trim().is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(&line)
            .map_err(|e| {
                ctx.err(
                    None,
                    format!("not valid JSON: {e} (the file is read as JSON Lines: one JSON object a line; a products file may also be .csv)"),
                )
            })?;
        let obj = value.as_object().ok_or_else(|| {
            ctx.err(
                None,
                "must be a JSON object (the file is read as JSON Lines: one JSON object a line, not one JSON array)",
            )
        })?;
        out.push((ctx.line, parse(obj, &ctx)?));
    }
    Ok(out)
}

/// Reads and validates a products file (`.csv` or JSON Lines, either of
/// them optionally gzip-compressed: `.csv.gz`, `.jsonl.gz`).
pub fn read_products(path: &Path) -> Result<Vec<(u64, Product)>, ImportError> {
    let is_csv = inner_name(path)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
    if !is_csv {
        return read_jsonl(path, product_from);
    }
    let file = file_name(path);
    let mut reader = csv::Reader::from_reader(LineFeeds::new(open(path)?));
    let headers = reader
        .headers()
        .map_err(|e| ImportError {
            file: file.clone(),
            line: Some(1),
            field: None,
            message: e.to_string(),
        })?
        .clone();
    // The reader keeps one value a column name: a repeated column's later
    // cell would overwrite the earlier one unseen. Unnamed columns (the
    // trailing empty ones some spreadsheets write) hold nothing it reads.
    let mut columns = HashSet::new();
    if let Some(name) = headers
        .iter()
        .find(|name| !name.is_empty() && !columns.insert(*name))
    {
        return Err(ImportError {
            file,
            line: Some(1),
            field: Some(name.to_string()),
            message: format!("column `{name}` appears twice in the header"),
        });
    }
    let mut out = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| ImportError {
            file: file.clone(),
            line: e.position().map(|p| p.line()),
            field: None,
            message: format!("malformed CSV: {e}"),
        })?;
        let ctx = RowCtx {
            file: &file,
            line: record.position().map_or(0, |p| p.line()),
        };
        let mut obj = Map::new();
        for (name, cell) in headers.iter().zip(record.iter()) {
            if cell.is_empty() {
                continue;
            }
            let value = match name {
                "price_cents" | "review_count" | "revision" => cell
                    .parse::<i64>()
                    .map(Value::from)
                    .map_err(|_| ctx.err(Some(name), "must be a whole number"))?,
                // `NaN` and `inf` parse, but are no rating (and would
                // read as none: JSON has no such number).
                "rating" => cell
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite())
                    .map(Value::from)
                    .ok_or_else(|| ctx.err(Some(name), "must be a number"))?,
                "attributes" => serde_json::from_str(cell)
                    .map_err(|_| ctx.err(Some(name), "must be a JSON object"))?,
                "aliases" => Value::from(cell.split('|').map(str::trim).collect::<Vec<_>>()),
                _ => Value::from(cell),
            };
            obj.insert(name.to_string(), value);
        }
        out.push((ctx.line, product_from(&obj, &ctx)?));
    }
    Ok(out)
}

/// Reads and validates an evidence file (JSON Lines, optionally gzip-compressed).
pub fn read_evidence(path: &Path) -> Result<Vec<(u64, Evidence)>, ImportError> {
    read_jsonl(path, evidence_from)
}

fn duplicates<T>(
    rows: &[(u64, T)],
    file: &Path,
    field: &str,
    key: impl Fn(&T) -> &str,
) -> Result<(), ImportError> {
    let mut seen = HashSet::new();
    for (line, row) in rows {
        if !seen.insert(key(row)) {
            return Err(ImportError {
                file: file_name(file),
                line: Some(*line),
                field: Some(field.into()),
                message: format!("duplicate value `{}` in this file", key(row)),
            });
        }
    }
    Ok(())
}

/// A staged product wanting a SKU another product keeps.
struct SkuConflict {
    line: u64,
    sku: String,
    holder: String,
}

/// The first staged product (`stage_products`), in the file's order, whose
/// SKU another product of the catalog holds and keeps: one the import
/// leaves out (a product of the import that keeps it while another row
/// wants it is a duplicate of the file, refused before). A SKU whose
/// holder the import gives another one passes, whatever the rows' order:
/// the uniqueness is checked at the end of the upsert (migration 0030).
/// `product_ids` are the staged products in the file's order, `lines`
/// their lines.
async fn sku_conflict(
    tx: &tokio_postgres::Transaction<'_>,
    product_ids: &[String],
    lines: &[u64],
) -> Result<Option<SkuConflict>, tokio_postgres::Error> {
    let rows = tx
        .query(
            "SELECT s.product_id, s.sku, p.product_id
             FROM stage_products s
             JOIN catalog.products p ON p.sku = s.sku AND p.product_id <> s.product_id
             WHERE NOT EXISTS (SELECT 1 FROM stage_products o
                               WHERE o.product_id = p.product_id AND o.sku <> p.sku)",
            &[],
        )
        .await?;
    if rows.is_empty() {
        return Ok(None);
    }
    let mut wanted: HashMap<String, (String, String)> = rows
        .iter()
        .map(|r| (r.get(0), (r.get(1), r.get(2))))
        .collect();
    Ok(product_ids.iter().zip(lines).find_map(|(id, line)| {
        wanted.remove(id).map(|(sku, holder)| SkuConflict {
            line: *line,
            sku,
            holder,
        })
    }))
}

/// The most distinct `domain` values an import may leave the catalog with.
/// A domain is a top-level vertical (the sample catalog has four, the
/// foreign one three): each gets its own vector graph, which every load and
/// import keeps and every search's planning weighs, and the semantic arm
/// walks each graph in catalogs of up to `semantic_domain_walk_max_domains`
/// of them. A feed that puts its categories in `domain` would make hundreds
/// or thousands of graphs; finer groupings belong in `category_key`.
pub const MAX_DOMAINS: usize = 64;

/// The setting that takes the place of [`MAX_DOMAINS`] for an import: a
/// catalog with that many real verticals, which accepts a graph each.
pub const MAX_DOMAINS_VAR: &str = "MOSAIC_MAX_DOMAINS";

/// The domains bound an import applies: [`MAX_DOMAINS_VAR`] when set (a
/// whole number, at least 1), else [`MAX_DOMAINS`].
pub fn max_domains(get: impl Fn(&str) -> Option<String>) -> Result<usize, String> {
    match crate::profile::setting(get, MAX_DOMAINS_VAR) {
        None => Ok(MAX_DOMAINS),
        Some(v) => v
            .parse::<usize>()
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| format!("{MAX_DOMAINS_VAR}={v:?}: use a whole number of at least 1")),
    }
}

/// Refuses an import that brings new domains to a catalog that would then
/// hold more than `max` ([`max_domains`]): the file's domains and those of the
/// catalog's products the import leaves out. `file_domains` maps each of
/// the file's domains to the first line naming it. Only new domains are
/// refused, so a catalog already past the bound still takes imports within
/// its domains.
async fn check_domains(
    tx: &tokio_postgres::Transaction<'_>,
    file: &str,
    file_domains: &std::collections::BTreeMap<String, u64>,
    max: usize,
) -> Result<(), anyhow::Error> {
    if file_domains.is_empty() {
        return Ok(());
    }
    // One index probe a domain (a loose scan of the projection's domain
    // index), not a scan of the catalog.
    let held: HashSet<String> = tx
        .query(crate::search::arms::DOMAINS_SQL, &[])
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let mut new: Vec<(&String, u64)> = file_domains
        .iter()
        .filter(|(d, _)| !held.contains(*d))
        .map(|(d, line)| (d, *line))
        .collect();
    if new.is_empty() || held.len() + new.len() <= max {
        return Ok(());
    }
    // Past the bound at first sight: count again without the domains this
    // import empties (every product of theirs moves to another domain).
    let others: Vec<&String> = held
        .iter()
        .filter(|d| !file_domains.contains_key(*d))
        .collect();
    let kept: i64 = tx
        .query_one(
            "SELECT count(*) FROM unnest($1::text[]) AS d (domain)
             WHERE EXISTS (SELECT 1 FROM search.product_projection pp
                           WHERE pp.domain = d.domain
                             AND NOT EXISTS (SELECT 1 FROM stage_products s
                                             WHERE s.product_id = pp.product_id))",
            &[&others],
        )
        .await?
        .get(0);
    let total = kept as usize + file_domains.len();
    if total <= max {
        return Ok(());
    }
    new.sort_by_key(|(_, line)| *line);
    let line = new.first().map(|(_, line)| *line);
    let named: Vec<String> = new.iter().take(5).map(|(d, _)| format!("`{d}`")).collect();
    let more = match new.len() > named.len() {
        true => format!(" and {} more", new.len() - named.len()),
        false => String::new(),
    };
    Err(ImportError {
        file: file.to_string(),
        line,
        field: Some("domain".into()),
        message: format!(
            "the catalog would hold {total} domains, at most {max} are accepted (new here: \
             {}{more}): a domain is a top-level vertical with its own vector graph; put finer \
             groupings in `category_key`, or set {MAX_DOMAINS_VAR} to accept more graphs",
            named.join(", ")
        ),
    }
    .into())
}

/// Imports products and/or evidence in one transaction. Nothing is written
/// unless every row is valid and every evidence unit names a known product.
pub async fn import(
    client: &mut Client,
    products_path: Option<&Path>,
    evidence_path: Option<&Path>,
    progress: Progress<'_>,
) -> Result<ImportReport, anyhow::Error> {
    import_with(
        client,
        products_path,
        evidence_path,
        ImportOptions::default(),
        progress,
    )
    .await
}

/// [`import`], with what to do with the products the file does not name.
pub async fn import_with(
    client: &mut Client,
    products_path: Option<&Path>,
    evidence_path: Option<&Path>,
    options: ImportOptions,
    progress: Progress<'_>,
) -> Result<ImportReport, anyhow::Error> {
    if options.replace && products_path.is_none() {
        anyhow::bail!("a replacing import needs a products file: it is the whole catalog");
    }
    let max_domains = max_domains(|k| std::env::var(k).ok()).map_err(anyhow::Error::msg)?;
    let products = products_path
        .map(read_products)
        .transpose()?
        .unwrap_or_default();
    let evidence = evidence_path
        .map(read_evidence)
        .transpose()?
        .unwrap_or_default();
    if let Some(p) = products_path {
        duplicates(&products, p, "product_id", |r| &r.product_id)?;
        duplicates(&products, p, "sku", |r| &r.sku)?;
    }
    if let Some(p) = evidence_path {
        duplicates(&evidence, p, "evidence_id", |r| &r.evidence_id)?;
    }
    if options.replace && products.is_empty() {
        anyhow::bail!(
            "{}: no products: a replacing import of it would empty the catalog",
            products_path.map(file_name).unwrap_or_default()
        );
    }
    let rows = (products.len() + evidence.len()) as u64;
    progress("checked", rows, rows);

    let tx = client.transaction().await?;
    // The projection's writers take turns: an embed run's updates wait for
    // the import (searches, which only read, do not), so the import's row
    // locks and the index its new domains may need are never taken in the
    // opposite order to theirs (a deadlock that would abort one of them).
    // A load (`load::replace_catalog`) locks the projection before the
    // products as well, so an import and a load queue behind each other.
    tx.batch_execute("LOCK TABLE search.product_projection IN SHARE ROW EXCLUSIVE MODE")
        .await?;
    tx.batch_execute(&format!(
        "CREATE TEMP TABLE stage_products ON COMMIT DROP AS SELECT {} FROM catalog.products WITH NO DATA;
         CREATE TEMP TABLE stage_evidence ON COMMIT DROP AS SELECT {} FROM catalog.evidence WITH NO DATA;",
        super::load::PRODUCT_COLUMNS,
        super::load::EVIDENCE_COLUMNS
    ))
    .await?;
    let n_products = products.len() as u64;
    let n_evidence = evidence.len() as u64;
    let product_ids: Vec<String> = products.iter().map(|(_, p)| p.product_id.clone()).collect();
    let product_lines: Vec<u64> = products.iter().map(|(line, _)| *line).collect();
    let mut file_domains = std::collections::BTreeMap::new();
    let mut long_texts = Vec::new();
    for (line, p) in &products {
        file_domains.entry(p.domain.clone()).or_insert(*line);
        let text = document_text(p);
        if text.total > DOCUMENT_TEXT_MAX_BYTES {
            long_texts.push(LongText {
                product_id: p.product_id.clone(),
                line: *line,
                field: largest_text_field(&text),
                bytes: text.total,
            });
        }
    }
    let evidence_lines: HashMap<String, u64> = evidence
        .iter()
        .rev()
        .map(|(line, e)| (e.product_id.clone(), *line))
        .collect();
    copy_products(
        &tx,
        "stage_products",
        products.into_iter().map(|(_, p)| p),
        progress,
        n_products,
    )
    .await?;
    copy_evidence(
        &tx,
        "stage_evidence",
        evidence.into_iter().map(|(_, e)| e),
        progress,
        n_evidence,
    )
    .await?;

    let products_file = products_path.map(file_name).unwrap_or_default();
    // A replacing import removes the products its file does not name first
    // (their projection rows and evidence go with them): their SKUs and
    // domains are then free for the file's products.
    let removed = match options.replace {
        true => {
            progress("remove", 0, 0);
            let n = tx
                .execute(
                    "DELETE FROM catalog.products p
                     WHERE NOT EXISTS (SELECT 1 FROM stage_products s WHERE s.product_id = p.product_id)",
                    &[],
                )
                .await?;
            progress("remove", n, n);
            n
        }
        false => 0,
    };
    if let Some(c) = sku_conflict(&tx, &product_ids, &product_lines).await? {
        return Err(ImportError {
            file: products_file,
            line: Some(c.line),
            field: Some("sku".into()),
            message: format!(
                "SKU `{}` is held by product `{}`, which is not in this import",
                c.sku, c.holder
            ),
        }
        .into());
    }
    check_domains(&tx, &products_file, &file_domains, max_domains).await?;

    progress("upsert", 0, n_products);
    tx.batch_execute(
        "INSERT INTO catalog.products AS p SELECT * FROM stage_products
         ON CONFLICT (product_id) DO UPDATE SET
             sku = EXCLUDED.sku, model = EXCLUDED.model, brand = EXCLUDED.brand,
             title = EXCLUDED.title, domain = EXCLUDED.domain,
             category_key = EXCLUDED.category_key, description = EXCLUDED.description,
             price_cents = EXCLUDED.price_cents, currency = EXCLUDED.currency,
             rating = EXCLUDED.rating, review_count = EXCLUDED.review_count,
             availability = EXCLUDED.availability, attributes = EXCLUDED.attributes,
             aliases = EXCLUDED.aliases, source_uri = EXCLUDED.source_uri,
             updated_at = EXCLUDED.updated_at,
             revision = greatest(EXCLUDED.revision, p.revision + 1)
         WHERE (p.sku, p.model, p.brand, p.title, p.domain, p.category_key, p.description,
                p.price_cents, p.currency, p.rating, p.review_count, p.availability,
                p.attributes, p.aliases, p.source_uri)
               IS DISTINCT FROM
               (EXCLUDED.sku, EXCLUDED.model, EXCLUDED.brand, EXCLUDED.title, EXCLUDED.domain,
                EXCLUDED.category_key, EXCLUDED.description, EXCLUDED.price_cents,
                EXCLUDED.currency, EXCLUDED.rating, EXCLUDED.review_count, EXCLUDED.availability,
                EXCLUDED.attributes, EXCLUDED.aliases, EXCLUDED.source_uri)",
    )
    .await?;

    progress("upsert", n_products, n_products);

    let orphan = tx
        .query_opt(
            "SELECT s.product_id FROM stage_evidence s
             WHERE NOT EXISTS (SELECT 1 FROM catalog.products p WHERE p.product_id = s.product_id)
             LIMIT 1",
            &[],
        )
        .await?;
    if let Some(row) = orphan {
        let id: String = row.get(0);
        return Err(ImportError {
            file: evidence_path.map(file_name).unwrap_or_default(),
            line: evidence_lines.get(&id).copied(),
            field: Some("product_id".into()),
            message: format!(
                "names product `{id}`, which is neither in the catalog nor in this import"
            ),
        }
        .into());
    }
    tx.batch_execute(
        "INSERT INTO catalog.evidence AS e (evidence_id, product_id, kind, source_uri, source_revision,
                                            title, body, rating, updated_at)
         SELECT * FROM stage_evidence
         ON CONFLICT (evidence_id) DO UPDATE SET
             product_id = EXCLUDED.product_id, kind = EXCLUDED.kind,
             source_uri = EXCLUDED.source_uri, source_revision = EXCLUDED.source_revision,
             title = EXCLUDED.title, body = EXCLUDED.body, rating = EXCLUDED.rating,
             updated_at = EXCLUDED.updated_at",
    )
    .await?;
    // The projection rows, the graphs and the statistics they feed: minutes
    // at a million products.
    progress("projection", 0, n_products);
    tx.batch_execute("SAVEPOINT projection").await?;
    // After a removal the terms are counted again over the whole catalog
    // below, so only the file's projection rows are rewritten here: the
    // refresh's own statistics, by difference or whole, would be counted
    // twice.
    let refreshed = match removed {
        0 => refresh_projection(&tx, Some(&product_ids)).await,
        _ => tx
            .query_one(
                "SELECT search.refresh_projection($1::text[])",
                &[&product_ids],
            )
            .await
            .map(|r| r.get::<_, i64>(0) as u64),
    };
    let projection_rows = match refreshed {
        Ok(rows) => rows,
        Err(e) if tsvector_too_long(&e) => {
            tx.batch_execute("ROLLBACK TO SAVEPOINT projection").await?;
            return Err(name_the_long_text(&tx, &products_file, long_texts)
                .await?
                .into());
        }
        Err(e) => return Err(e.into()),
    };
    progress("projection", projection_rows, n_products);
    if removed > 0 {
        // The removed products' terms, graphs and price bounds are counted
        // out by counting the catalog's again, as a load does. The graphs
        // come last: dropping the graph of a domain the removal emptied
        // locks the projection against searches until the commit. Then
        // the planner's statistics, which the removal made stale.
        progress("statistics", 0, 1);
        tx.batch_execute(
            "SELECT search.refresh_lexeme_stats();
             SELECT search.refresh_vocabulary();
             SELECT search.refresh_price_indexes();
             SELECT search.refresh_domain_indexes();",
        )
        .await?;
        tx.batch_execute(super::load::ANALYZE_CATALOG).await?;
        progress("statistics", 1, 1);
    }
    tx.commit().await?;
    Ok(ImportReport {
        products: n_products,
        evidence: n_evidence,
        projection_rows,
        removed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_ends_of_two_bytes_read_as_line_feeds_whatever_the_chunks() {
        use std::io::Read;
        let text = b"a,b\r\nc,\"d\re\"\r\n\r\nf\rg\r";
        let want = b"a,b\nc,\"d\re\"\n\nf\rg\r".to_vec();
        // Every chunk size the underlying reader may hand out, and every
        // size of read, so a `\r` falls at each chunk's edge.
        for chunk in 1..=text.len() {
            for read in 1..=4 {
                let inner = std::io::BufReader::with_capacity(chunk, &text[..]);
                let mut r = LineFeeds::new(inner);
                let (mut got, mut buf) = (Vec::new(), vec![0u8; read]);
                loop {
                    let n = r.read(&mut buf).unwrap();
                    if n == 0 {
                        break;
                    }
                    got.extend_from_slice(&buf[..n]);
                }
                assert_eq!(got, want, "chunks of {chunk}, reads of {read}");
            }
        }
    }

    #[test]
    fn the_domains_bound_is_the_setting_when_set_and_valid() {
        let with = |v: Option<&str>| {
            let v = v.map(str::to_string);
            max_domains(move |k| (k == MAX_DOMAINS_VAR).then(|| v.clone()).flatten())
        };
        assert_eq!(with(None), Ok(MAX_DOMAINS));
        assert_eq!(with(Some("")), Ok(MAX_DOMAINS));
        assert_eq!(with(Some(" 200 ")), Ok(200));
        for bad in ["0", "-1", "many", "1.5"] {
            let e = with(Some(bad)).unwrap_err();
            assert!(e.starts_with("MOSAIC_MAX_DOMAINS="), "{e}");
        }
    }
}
