//! A JWT's signature, checked against its issuer's published keys (feature
//! `lambda`; the identity interceptor's, [`crate::interceptor`]).
//!
//! The interceptor makes a principal proof from a bearer token's `iss` and
//! `sub`. The gateway's inbound authorizer has checked the token before, but
//! whoever may invoke the interceptor directly could hand it any claims; so
//! the interceptor checks the signature itself, and a proof needs a token
//! the issuer signed.
//!
//! * [`KeySet`]: the issuer's JSON Web Key Set (RFC 7517), reduced to the
//!   keys this module can check: RSA (`RS256`, `RS384`, `RS512`, PKCS#1 v1.5,
//!   2048 bits or more) and ECDSA (`ES256` on P-256, `ES384` on P-384).
//!   [`KeySet::verify`] takes the token's header `alg` and `kid`, finds the
//!   key by `kid` (and by type: a key never serves another algorithm's
//!   family, and a key that names its `alg` serves only that one), checks
//!   the signature over `header.payload`, and returns the payload's claims.
//!   `none`, the HMAC algorithms (a public key is no shared secret) and
//!   anything else are refused.
//! * [`Jwks`]: where the keys come from. A fixed set, or fetched over HTTPS
//!   (the web's public roots) from the issuer: its OpenID discovery
//!   document's `jwks_uri` (the document must name the issuer as its own),
//!   or a JWKS URL given outright. Fetched on first use, after [`MAX_AGE`],
//!   and when a token names a `kid` the set lacks (an issuer rotating its
//!   keys), at most once per [`REFRESH_EVERY`], within [`FETCH_BUDGET`]; a
//!   token no key held can check is refused, never let through. Keys no
//!   fetch has confirmed for [`MAX_STALE`] check nothing. Plain
//!   `http` only when the configured URL is itself a loopback `http` one
//!   (tests).
//!
//! The claims' meaning (`iss`, `aud` or `client_id`, `exp`, `nbf`, `sub`)
//! is the caller's to check.

use aws_lc_rs::signature::{self, RsaPublicKeyComponents, UnparsedPublicKey};
use base64::Engine as _;
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The least time between two fetches of the issuer's keys.
pub const REFRESH_EVERY: Duration = Duration::from_secs(30);

/// How long one fetch of the keys may take, discovery included: within
/// the interceptor's 5 s function timeout, with time left to answer.
pub const FETCH_BUDGET: Duration = Duration::from_secs(3);

/// How long fetched keys serve before they are fetched again.
pub const MAX_AGE: Duration = Duration::from_secs(3600);

/// How long fetched keys may serve at most while the issuer cannot be
/// reached: past it every token is refused (`KeysUnavailable`) until a fetch
/// succeeds, so a key the issuer withdrew during an outage of its key set
/// (or of the way to it) stops serving after this long, not never.
pub const MAX_STALE: Duration = Duration::from_secs(6 * 3600);

/// The largest discovery document or key set read.
const MAX_DOCUMENT: usize = 256 * 1024;

/// The largest response head read.
const MAX_HEAD: usize = 16 * 1024;

/// The signature algorithms a key set can check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Alg {
    Rs256,
    Rs384,
    Rs512,
    Es256,
    Es384,
}

impl Alg {
    fn parse(name: &str) -> Option<Alg> {
        Some(match name {
            "RS256" => Alg::Rs256,
            "RS384" => Alg::Rs384,
            "RS512" => Alg::Rs512,
            "ES256" => Alg::Es256,
            "ES384" => Alg::Es384,
            _ => return None,
        })
    }
}

/// One public key of the set.
#[derive(Debug, Clone)]
enum PublicKey {
    Rsa {
        n: Vec<u8>,
        e: Vec<u8>,
    },
    /// The uncompressed point (0x04 ‖ x ‖ y) on P-256 or P-384.
    Ec {
        p384: bool,
        point: Vec<u8>,
    },
}

#[derive(Debug, Clone)]
struct Key {
    kid: Option<String>,
    /// The `alg` the key names, if it names one.
    alg: Option<Alg>,
    key: PublicKey,
}

impl Key {
    fn serves(&self, alg: Alg) -> bool {
        let family = matches!(
            (&self.key, alg),
            (PublicKey::Rsa { .. }, Alg::Rs256 | Alg::Rs384 | Alg::Rs512)
                | (PublicKey::Ec { p384: false, .. }, Alg::Es256)
                | (PublicKey::Ec { p384: true, .. }, Alg::Es384)
        );
        family && self.alg.is_none_or(|a| a == alg)
    }

    fn check(&self, alg: Alg, message: &[u8], sig: &[u8]) -> bool {
        match &self.key {
            PublicKey::Rsa { n, e } => {
                let params = match alg {
                    Alg::Rs256 => &signature::RSA_PKCS1_2048_8192_SHA256,
                    Alg::Rs384 => &signature::RSA_PKCS1_2048_8192_SHA384,
                    Alg::Rs512 => &signature::RSA_PKCS1_2048_8192_SHA512,
                    _ => return false,
                };
                RsaPublicKeyComponents { n, e }
                    .verify(params, message, sig)
                    .is_ok()
            }
            PublicKey::Ec { point, .. } => {
                let params = match alg {
                    Alg::Es256 => &signature::ECDSA_P256_SHA256_FIXED,
                    Alg::Es384 => &signature::ECDSA_P384_SHA384_FIXED,
                    _ => return false,
                };
                UnparsedPublicKey::new(params, point)
                    .verify(message, sig)
                    .is_ok()
            }
        }
    }
}

/// An issuer's signing keys (see the module documentation).
#[derive(Debug, Clone, Default)]
pub struct KeySet {
    keys: Vec<Key>,
}

fn b64(s: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(s.trim_end_matches('='))
        .ok()
}

impl KeySet {
    /// The usable keys of a JWK Set document (`{"keys": [...]}`): signing
    /// keys (`use` absent or `sig`) of the types above; others are skipped.
    /// `Err` when the document is no key set at all.
    pub fn from_jwks(doc: &Value) -> Result<KeySet, String> {
        let keys = doc
            .get("keys")
            .and_then(Value::as_array)
            .ok_or("the key set has no \"keys\" array")?;
        let text = |k: &Value, f: &str| k.get(f).and_then(Value::as_str).map(str::to_string);
        let mut out = Vec::new();
        for k in keys {
            if text(k, "use").is_some_and(|u| u != "sig") {
                continue;
            }
            let alg = match text(k, "alg") {
                None => None,
                Some(a) => match Alg::parse(&a) {
                    Some(a) => Some(a),
                    None => continue,
                },
            };
            let key = match text(k, "kty").as_deref() {
                Some("RSA") => {
                    let (Some(n), Some(e)) = (
                        text(k, "n").and_then(|n| b64(&n)),
                        text(k, "e").and_then(|e| b64(&e)),
                    ) else {
                        continue;
                    };
                    PublicKey::Rsa { n, e }
                }
                Some("EC") => {
                    let (width, p384) = match text(k, "crv").as_deref() {
                        Some("P-256") => (32, false),
                        Some("P-384") => (48, true),
                        _ => continue,
                    };
                    let (Some(x), Some(y)) = (
                        text(k, "x").and_then(|x| b64(&x)),
                        text(k, "y").and_then(|y| b64(&y)),
                    ) else {
                        continue;
                    };
                    if x.len() != width || y.len() != width {
                        continue;
                    }
                    let mut point = vec![4u8];
                    point.extend(x);
                    point.extend(y);
                    PublicKey::Ec { p384, point }
                }
                _ => continue,
            };
            out.push(Key {
                kid: text(k, "kid"),
                alg,
                key,
            });
        }
        Ok(KeySet { keys: out })
    }

    /// How many keys the set holds.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The token's claims when one of the set's keys signed it; otherwise
    /// why not. [`Refusal::UnknownKey`] says a fresher set might know it.
    pub fn verify(&self, token: &str) -> Result<Map<String, Value>, Refusal> {
        let token = Token::parse(token)?;
        self.check(&token)
    }

    fn check(&self, token: &Token) -> Result<Map<String, Value>, Refusal> {
        let mut candidates = self
            .keys
            .iter()
            .filter(|k| k.serves(token.alg))
            .filter(|k| match (&token.kid, &k.kid) {
                (Some(want), Some(have)) => want == have,
                // A token without a kid: any key of the right type.
                (None, _) => true,
                (Some(_), None) => false,
            })
            .peekable();
        if candidates.peek().is_none() {
            return Err(Refusal::UnknownKey);
        }
        match candidates.any(|k| k.check(token.alg, token.signed.as_bytes(), &token.signature)) {
            true => Ok(token.claims.clone()),
            false => Err(Refusal::BadSignature),
        }
    }
}

/// Why a token was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Not three base64url parts with a JSON header and JSON object claims.
    Malformed,
    /// `alg` is none of those above (`none` and `HS256` included).
    Algorithm,
    /// No key of the set has the token's `kid` and type.
    UnknownKey,
    /// A key matched, and the signature is not its.
    BadSignature,
    /// The issuer's keys could not be fetched.
    KeysUnavailable,
}

impl Refusal {
    pub fn reason(self) -> &'static str {
        match self {
            Refusal::Malformed => "the bearer token is not a JWT",
            Refusal::Algorithm => "the token's signature algorithm is not accepted",
            Refusal::UnknownKey => "no key of the issuer's matches the token",
            Refusal::BadSignature => "the token's signature is not the issuer's",
            Refusal::KeysUnavailable => "the issuer's keys could not be fetched",
        }
    }
}

/// A token split and decoded, not yet checked.
struct Token {
    alg: Alg,
    kid: Option<String>,
    /// `header.payload` as sent: what the signature covers.
    signed: String,
    signature: Vec<u8>,
    claims: Map<String, Value>,
}

impl Token {
    fn parse(token: &str) -> Result<Token, Refusal> {
        let mut parts = token.split('.');
        let (Some(h), Some(p), Some(s), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(Refusal::Malformed);
        };
        let json = |part: &str| -> Result<Map<String, Value>, Refusal> {
            match b64(part).map(|b| serde_json::from_slice::<Value>(&b)) {
                Some(Ok(Value::Object(m))) => Ok(m),
                _ => Err(Refusal::Malformed),
            }
        };
        let header = json(h)?;
        let claims = json(p)?;
        let alg = header
            .get("alg")
            .and_then(Value::as_str)
            .and_then(Alg::parse)
            .ok_or(Refusal::Algorithm)?;
        let kid = match header.get("kid") {
            None => None,
            Some(Value::String(k)) => Some(k.clone()),
            Some(_) => return Err(Refusal::Malformed),
        };
        let signature = b64(s).filter(|s| !s.is_empty()).ok_or(Refusal::Malformed)?;
        Ok(Token {
            alg,
            kid,
            signed: format!("{h}.{p}"),
            signature,
            claims,
        })
    }
}

/// Where an issuer's keys come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The OpenID discovery document at `url` (its `jwks_uri`), which must
    /// name `issuer` as its own (OpenID Connect Discovery 1.0, 4.3): a
    /// document of another issuer's would let that issuer's keys speak for
    /// this one.
    Discovery { url: String, issuer: String },
    /// A JWK Set URL.
    Url(String),
}

impl Source {
    fn url(&self) -> &str {
        match self {
            Source::Discovery { url, .. } | Source::Url(url) => url,
        }
    }
}

struct Cached {
    keys: KeySet,
    /// The last fetch tried (for [`REFRESH_EVERY`]).
    tried: Option<Instant>,
    /// The last fetch that succeeded (for [`MAX_AGE`]).
    loaded: Option<Instant>,
}

/// An issuer's keys: fixed, or fetched and kept (see the module
/// documentation).
pub struct Jwks {
    /// Where fetched keys come from; `None` for a fixed set.
    remote: Option<Remote>,
    /// [`REFRESH_EVERY`] (shorter in tests).
    refresh_every: Duration,
    cached: tokio::sync::Mutex<Cached>,
}

impl std::fmt::Debug for Jwks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jwks")
            .field("source", &self.source())
            .finish()
    }
}

/// How fetched keys are fetched.
struct Remote {
    source: Source,
    tls: Arc<rustls::ClientConfig>,
    /// Whether plain HTTP is allowed: only when the configured URL is itself
    /// a loopback `http` one (tests).
    plain: bool,
}

/// Why the keys were not fetched now.
enum NotFetched {
    /// The last try was less than [`REFRESH_EVERY`] ago.
    TooSoon,
    /// The fetch failed (logged).
    Failed,
}

impl Jwks {
    /// A fixed key set (tests; an issuer whose keys are configured).
    pub fn fixed(keys: KeySet) -> Jwks {
        Jwks {
            remote: None,
            refresh_every: REFRESH_EVERY,
            cached: tokio::sync::Mutex::new(Cached {
                keys,
                tried: None,
                loaded: None,
            }),
        }
    }

    /// Keys fetched from `source`, over TLS trusting the web's public roots
    /// (plain HTTP only when `source` itself is a loopback `http` URL: tests).
    pub fn remote(source: Source) -> Result<Jwks, String> {
        let plain = !parse_url(source.url(), true)?.tls;
        let tls = crate::tls::client_config(crate::tls::Roots::Web, None)?;
        Ok(Jwks {
            remote: Some(Remote { source, tls, plain }),
            refresh_every: REFRESH_EVERY,
            cached: tokio::sync::Mutex::new(Cached {
                keys: KeySet::default(),
                tried: None,
                loaded: None,
            }),
        })
    }

    /// The source, if the keys are fetched.
    pub fn source(&self) -> Option<&Source> {
        self.remote.as_ref().map(|r| &r.source)
    }

    /// The token's claims when the issuer signed it: checked against the
    /// keys held, and when none matches its `kid`, against the issuer's
    /// current keys (fetched at most once per [`REFRESH_EVERY`]). Keys held
    /// for [`MAX_AGE`] are fetched again first; if that fetch fails they
    /// still serve (the failure is logged), so a short outage of the issuer
    /// does not stop every call, while a key it withdrew leaves within the
    /// hour. Keys no fetch has confirmed for [`MAX_STALE`] no longer serve.
    pub async fn verify(&self, token: &str) -> Result<Map<String, Value>, Refusal> {
        let token = Token::parse(token)?;
        let mut cached = self.cached.lock().await;
        let mut failed = false;
        if cached.loaded.is_some_and(|at| at.elapsed() >= MAX_AGE) {
            failed = matches!(self.fetch(&mut cached).await, Err(NotFetched::Failed));
        }
        if cached.loaded.is_some_and(|at| at.elapsed() >= MAX_STALE) {
            return Err(Refusal::KeysUnavailable);
        }
        match cached.keys.check(&token) {
            Err(Refusal::UnknownKey) => {}
            done => return done,
        }
        match self.fetch(&mut cached).await {
            Ok(()) => cached.keys.check(&token),
            // Never fetched, or the fetch failed: say so, not "no key".
            Err(NotFetched::Failed) => Err(Refusal::KeysUnavailable),
            Err(NotFetched::TooSoon)
                if failed || (cached.loaded.is_none() && self.remote.is_some()) =>
            {
                Err(Refusal::KeysUnavailable)
            }
            Err(NotFetched::TooSoon) => Err(Refusal::UnknownKey),
        }
    }

    /// Fetches the keys into `cached`, unless tried less than
    /// [`REFRESH_EVERY`] ago or the set is fixed.
    async fn fetch(&self, cached: &mut Cached) -> Result<(), NotFetched> {
        let Some(remote) = &self.remote else {
            return Err(NotFetched::TooSoon);
        };
        if cached
            .tried
            .is_some_and(|at| at.elapsed() < self.refresh_every)
        {
            return Err(NotFetched::TooSoon);
        }
        cached.tried = Some(Instant::now());
        let fetched = tokio::time::timeout(FETCH_BUDGET, fetch_keys(remote))
            .await
            .unwrap_or_else(|_| Err(format!("no key set within {FETCH_BUDGET:?}")));
        match fetched {
            Ok(keys) => {
                tracing::info!(keys = keys.len(), "the issuer's keys fetched");
                cached.keys = keys;
                cached.loaded = Some(Instant::now());
                Ok(())
            }
            Err(e) => {
                tracing::error!(error = %e, "the issuer's keys could not be fetched");
                Err(NotFetched::Failed)
            }
        }
    }
}

/// The key set at `remote`'s source.
async fn fetch_keys(remote: &Remote) -> Result<KeySet, String> {
    let Remote { source, tls, plain } = remote;
    let plain = *plain;
    let url = match source {
        Source::Url(u) => u.clone(),
        Source::Discovery { url, issuer } => {
            let doc = get_json(url, tls, plain).await?;
            if doc.get("issuer").and_then(Value::as_str) != Some(issuer.as_str()) {
                return Err(format!(
                    "{url}: the discovery document is not {issuer}'s (its \"issuer\" differs)"
                ));
            }
            doc.get("jwks_uri")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("{url}: the discovery document has no jwks_uri"))?
                .to_string()
        }
    };
    let keys =
        KeySet::from_jwks(&get_json(&url, tls, plain).await?).map_err(|e| format!("{url}: {e}"))?;
    // A set with no key this module can check would refuse every token:
    // a failed fetch, which keeps the keys held.
    if keys.is_empty() {
        return Err(format!("{url}: no signing key of a supported type"));
    }
    Ok(keys)
}

/// A URL this module fetches: `https://host[:port]/path`, or `http://` to a
/// loopback host.
#[derive(Debug, PartialEq, Eq)]
struct Url {
    tls: bool,
    host: String,
    port: u16,
    path: String,
}

/// `url` as a [`Url`]; `http` only when `plain` allows it, and then only to
/// a loopback host.
fn parse_url(url: &str, plain: bool) -> Result<Url, String> {
    let (tls, rest) = match (url.strip_prefix("https://"), url.strip_prefix("http://")) {
        (Some(r), _) => (true, r),
        (None, Some(r)) if plain => (false, r),
        _ => return Err(format!("{url}: not an https URL")),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let path = path.split('#').next().unwrap_or("/");
    let default = if tls { 443 } else { 80 };
    let bad_port = || format!("{url}: bad port");
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => {
            let (h, rest) = v6
                .split_once(']')
                .ok_or_else(|| format!("{url}: bad host"))?;
            match rest.strip_prefix(':') {
                Some(p) => (h, p.parse().map_err(|_| bad_port())?),
                None if rest.is_empty() => (h, default),
                None => return Err(bad_port()),
            }
        }
        None => match authority.rsplit_once(':') {
            Some((h, p)) => (h, p.parse().map_err(|_| bad_port())?),
            None => (authority, default),
        },
    };
    let host = host.to_string();
    let bad = |c: char| !(c.is_ascii_alphanumeric() || ".-:".contains(c));
    if host.is_empty() || host.contains(bad) || authority.contains('@') {
        return Err(format!("{url}: bad host"));
    }
    if path.chars().any(|c| c.is_ascii_control() || c == ' ') {
        return Err(format!("{url}: bad path"));
    }
    if !tls && !matches!(host.as_str(), "127.0.0.1" | "localhost" | "::1") {
        return Err(format!("{url}: plain http only to a loopback host"));
    }
    Ok(Url {
        tls,
        host,
        port,
        path: path.to_string(),
    })
}

/// GET `url` and read its body as JSON (status 200 only, no redirects).
async fn get_json(
    url: &str,
    tls: &Arc<rustls::ClientConfig>,
    plain: bool,
) -> Result<Value, String> {
    let u = parse_url(url, plain)?;
    let body = async {
        let tcp = tokio::net::TcpStream::connect((u.host.as_str(), u.port))
            .await
            .map_err(|e| e.to_string())?;
        if u.tls {
            let name = rustls::pki_types::ServerName::try_from(u.host.clone())
                .map_err(|e| e.to_string())?;
            let stream = tokio_rustls::TlsConnector::from(tls.clone())
                .connect(name, tcp)
                .await
                .map_err(|e| format!("TLS: {e}"))?;
            exchange(stream, &u).await
        } else {
            exchange(tcp, &u).await
        }
    }
    .await
    .map_err(|e| format!("{url}: {e}"))?;
    serde_json::from_slice(&body).map_err(|e| format!("{url}: not JSON: {e}"))
}

/// Reads into `buf` until `done` holds or the peer closes; `Ok(false)` when
/// it closed first. A TLS peer that closes without `close_notify` (many do)
/// is a close, not an error: what counts is whether the answer is whole.
async fn read_until<S: AsyncRead + Unpin>(
    stream: &mut S,
    buf: &mut Vec<u8>,
    limit: usize,
    done: impl Fn(&[u8]) -> bool,
) -> Result<bool, String> {
    let mut chunk = [0u8; 8192];
    while !done(buf) {
        if buf.len() > limit {
            return Err(format!("more than {limit} bytes"));
        }
        match stream.read(&mut chunk).await {
            Ok(0) => return Ok(false),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(false),
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(true)
}

/// One HTTP/1.0 request (so the answer is never chunked) and its body:
/// `Content-Length` bytes when the answer gives one, else up to the close.
async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    u: &Url,
) -> Result<Vec<u8>, String> {
    let host = match u.host.contains(':') {
        true => format!("[{}]", u.host),
        false => u.host.clone(),
    };
    let request = format!(
        "GET {} HTTP/1.0\r\nHost: {host}\r\nAccept: application/json\r\n\
         User-Agent: mosaic-identity-interceptor\r\nConnection: close\r\n\r\n",
        u.path
    );
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let head_end = |b: &[u8]| b.windows(4).position(|w| w == b"\r\n\r\n");
    let mut raw = Vec::new();
    read_until(&mut stream, &mut raw, MAX_HEAD, |b| head_end(b).is_some()).await?;
    let end = head_end(&raw).ok_or("no complete response head")?;
    let head = String::from_utf8_lossy(&raw[..end]).to_string();
    let mut lines = head.lines();
    let status = lines.next().unwrap_or("");
    let mut words = status.split_whitespace();
    match (words.next(), words.next()) {
        (Some(v), Some("200")) if v.starts_with("HTTP/1.") => {}
        _ => return Err(format!("answered {status:?}")),
    }
    let mut length = None;
    for line in lines {
        let (name, value) = line.split_once(':').unwrap_or((line, ""));
        match name.trim().to_ascii_lowercase().as_str() {
            "transfer-encoding" => {
                return Err("a transfer-encoded answer to an HTTP/1.0 request".into())
            }
            "content-length" => {
                let n: usize = value.trim().parse().map_err(|_| "a bad Content-Length")?;
                if n > MAX_DOCUMENT {
                    return Err(format!("more than {MAX_DOCUMENT} bytes"));
                }
                if length.is_some_and(|m| m != n) {
                    return Err("two different Content-Lengths".into());
                }
                length = Some(n);
            }
            _ => {}
        }
    }
    let mut body = raw.split_off(end + 4);
    match length {
        Some(n) => {
            read_until(&mut stream, &mut body, MAX_DOCUMENT, |b| b.len() >= n).await?;
            if body.len() < n {
                return Err(format!(
                    "the answer ended after {} of {n} bytes",
                    body.len()
                ));
            }
            body.truncate(n);
        }
        None => {
            read_until(&mut stream, &mut body, MAX_DOCUMENT, |_| false).await?;
        }
    }
    Ok(body)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use aws_lc_rs::rand::SystemRandom;
    use aws_lc_rs::signature::{EcdsaKeyPair, RsaKeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
    use serde_json::json;

    /// The test keys' public halves (`shared/fixtures/jwt`).
    pub(crate) const JWKS: &str = include_str!("../fixtures/jwt/jwks.json");
    const RSA: &[u8] = include_bytes!("../fixtures/jwt/rsa.pk8");
    const OTHER_RSA: &[u8] = include_bytes!("../fixtures/jwt/other.pk8");
    const EC: &[u8] = include_bytes!("../fixtures/jwt/ec.pk8");

    fn enc(bytes: &[u8]) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    }

    /// A token with `header` and `claims`, signed by the PKCS#8 key `der`
    /// (RSA for RS256, P-256 for ES256).
    pub(crate) fn signed_with(der: &[u8], header: Value, claims: &Value) -> String {
        let signed = format!(
            "{}.{}",
            enc(header.to_string().as_bytes()),
            enc(claims.to_string().as_bytes())
        );
        let rng = SystemRandom::new();
        let sig = match header["alg"].as_str() {
            Some("ES256") => {
                let k = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der).unwrap();
                k.sign(&rng, signed.as_bytes()).unwrap().as_ref().to_vec()
            }
            _ => {
                let k = RsaKeyPair::from_pkcs8(der).unwrap();
                let mut sig = vec![0; k.public_modulus_len()];
                k.sign(
                    &signature::RSA_PKCS1_SHA256,
                    &rng,
                    signed.as_bytes(),
                    &mut sig,
                )
                .unwrap();
                sig
            }
        };
        format!("{signed}.{}", enc(&sig))
    }

    /// A token signed by the test RSA key (`kid` `test-rsa-1`).
    pub(crate) fn signed(claims: &Value) -> String {
        signed_with(RSA, json!({"alg": "RS256", "kid": "test-rsa-1"}), claims)
    }

    fn keys() -> KeySet {
        KeySet::from_jwks(&serde_json::from_str(JWKS).unwrap()).unwrap()
    }

    #[test]
    fn the_issuer_s_signature_is_accepted_and_every_forgery_refused() {
        let keys = keys();
        assert_eq!(keys.len(), 2);
        let claims = json!({"iss": "https://issuer.example", "sub": "u-1", "exp": 2000});
        let rs = signed(&claims);
        assert_eq!(keys.verify(&rs).unwrap()["sub"], "u-1");
        let es = signed_with(EC, json!({"alg": "ES256", "kid": "test-ec-1"}), &claims);
        assert_eq!(keys.verify(&es).unwrap()["sub"], "u-1");
        // Without a kid, any key of the right type may have signed it.
        let no_kid = signed_with(RSA, json!({"alg": "RS256"}), &claims);
        assert!(keys.verify(&no_kid).is_ok());

        // The payload changed after signing: another subject.
        let (head, rest) = rs.split_once('.').unwrap();
        let sig = rest.rsplit_once('.').unwrap().1;
        let victim = enc(
            json!({"iss": "https://issuer.example", "sub": "victim", "exp": 2000})
                .to_string()
                .as_bytes(),
        );
        assert_eq!(
            keys.verify(&format!("{head}.{victim}.{sig}")),
            Err(Refusal::BadSignature)
        );
        // Signed by a key the issuer does not publish, under its kid.
        let other = signed_with(
            OTHER_RSA,
            json!({"alg": "RS256", "kid": "test-rsa-1"}),
            &claims,
        );
        assert_eq!(keys.verify(&other), Err(Refusal::BadSignature));
        // A kid the set lacks.
        let unknown = signed_with(RSA, json!({"alg": "RS256", "kid": "k9"}), &claims);
        assert_eq!(keys.verify(&unknown), Err(Refusal::UnknownKey));
        // An EC key's kid under an RSA algorithm, and the other way round.
        let crossed = signed_with(RSA, json!({"alg": "RS256", "kid": "test-ec-1"}), &claims);
        assert_eq!(keys.verify(&crossed), Err(Refusal::UnknownKey));
        // No signature, an HMAC "signed" with the public key, garbage.
        let body = enc(claims.to_string().as_bytes());
        for (alg, sig) in [("none", ""), ("HS256", "c2ln"), ("RS256", "")] {
            let h = enc(json!({"alg": alg, "kid": "test-rsa-1"})
                .to_string()
                .as_bytes());
            let refusal = keys.verify(&format!("{h}.{body}.{sig}")).unwrap_err();
            let want = match alg {
                "RS256" => Refusal::Malformed,
                _ => Refusal::Algorithm,
            };
            assert_eq!(refusal, want, "{alg}");
        }
        for bad in ["", "a.b", "a.b.c.d", "x.y.z", &format!("{head}.{body}")] {
            assert!(keys.verify(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_key_set_keeps_only_the_keys_it_can_check() {
        let doc = json!({"keys": [
            {"kty": "RSA", "kid": "enc", "use": "enc", "n": "AQAB", "e": "AQAB"},
            {"kty": "oct", "kid": "hmac", "k": "c2VjcmV0"},
            {"kty": "RSA", "kid": "ps", "alg": "PS256", "n": "AQAB", "e": "AQAB"},
            {"kty": "EC", "kid": "k1", "crv": "secp256k1", "x": "AA", "y": "AA"},
            {"kty": "EC", "kid": "short", "crv": "P-256", "x": "AA", "y": "AA"},
            {"kty": "RSA", "kid": "no-e", "n": "AQAB"},
        ]});
        assert_eq!(KeySet::from_jwks(&doc).unwrap().len(), 0);
        assert!(KeySet::from_jwks(&json!({"keys": 3})).is_err());
        assert!(KeySet::from_jwks(&json!([])).is_err());
        // A key that names RS256 serves only RS256.
        let mut one: Value = serde_json::from_str(JWKS).unwrap();
        one["keys"][0]["alg"] = "RS512".into();
        let keys = KeySet::from_jwks(&one).unwrap();
        let t = signed(&json!({"sub": "u"}));
        assert_eq!(keys.verify(&t), Err(Refusal::UnknownKey));
    }

    /// An issuer on loopback, counting requests: `/jwks` the key set
    /// `published` holds (with a Content-Length), `/openid` a discovery
    /// document naming it (issuer `https://issuer.example`), `/other` one
    /// of another issuer's, `/cut` an answer whose body stops short of its
    /// Content-Length, `/close` the key set without a Content-Length, up to
    /// the close; anything else 503.
    async fn issuer(
        published: Arc<std::sync::Mutex<String>>,
    ) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = count.clone();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                let mut head = vec![0u8; 2048];
                let n = s.read(&mut head).await.unwrap_or(0);
                let path = String::from_utf8_lossy(&head[..n])
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or("")
                    .to_string();
                seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let keys = published.lock().unwrap().clone();
                let doc = |iss: &str| {
                    json!({"issuer": iss, "jwks_uri": format!("http://{addr}/jwks")}).to_string()
                };
                let ok = |body: &str| {
                    format!(
                        "HTTP/1.0 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                        body.len()
                    )
                };
                let reply = match path.as_str() {
                    "/jwks" => ok(&keys),
                    "/openid" => ok(&doc("https://issuer.example")),
                    "/other" => ok(&doc("https://other.example")),
                    "/cut" => format!(
                        "HTTP/1.0 200 OK\r\nContent-Length: {}\r\n\r\n{}",
                        keys.len() + 10,
                        keys
                    ),
                    "/close" => format!("HTTP/1.0 200 OK\r\n\r\n{keys}"),
                    _ => "HTTP/1.0 503 Unavailable\r\n\r\n".to_string(),
                };
                let _ = s.write_all(reply.as_bytes()).await;
            }
        });
        (format!("http://{addr}"), count)
    }

    #[tokio::test]
    async fn the_issuer_s_keys_are_fetched_once_and_again_for_an_unknown_key() {
        use std::sync::atomic::Ordering::SeqCst;
        let published = Arc::new(std::sync::Mutex::new(JWKS.to_string()));
        let (base, count) = issuer(published.clone()).await;
        let discovery = |path: &str| Source::Discovery {
            url: format!("{base}{path}"),
            issuer: "https://issuer.example".into(),
        };
        let mut jwks = Jwks::remote(discovery("/openid")).unwrap();
        let claims = json!({"sub": "u-1"});
        // Fetched on first use (the discovery document, then the key set),
        // then kept.
        for _ in 0..3 {
            assert!(jwks.verify(&signed(&claims)).await.is_ok());
        }
        assert_eq!(count.load(SeqCst), 2);
        // A key id the set lacks, within the refresh interval: no fetch.
        let rotated = signed_with(RSA, json!({"alg": "RS256", "kid": "rotated"}), &claims);
        assert_eq!(jwks.verify(&rotated).await, Err(Refusal::UnknownKey));
        assert_eq!(count.load(SeqCst), 2);
        // Past it, the issuer now publishing the rotated key: fetched again.
        jwks.refresh_every = Duration::ZERO;
        let mut doc: Value = serde_json::from_str(JWKS).unwrap();
        doc["keys"][0]["kid"] = "rotated".into();
        *published.lock().unwrap() = doc.to_string();
        assert!(jwks.verify(&rotated).await.is_ok());
        assert_eq!(count.load(SeqCst), 4);
        // A forged signature under a known key id fetches nothing.
        let forged = signed_with(
            OTHER_RSA,
            json!({"alg": "RS256", "kid": "rotated"}),
            &claims,
        );
        assert_eq!(jwks.verify(&forged).await, Err(Refusal::BadSignature));
        assert_eq!(count.load(SeqCst), 4);
        // Keys past their age are fetched again before they serve; when
        // that fetch fails they still serve.
        jwks.cached.lock().await.loaded = Some(Instant::now() - MAX_AGE);
        assert!(jwks.verify(&rotated).await.is_ok());
        assert_eq!(count.load(SeqCst), 6);
        let mut stale = Jwks::remote(discovery("/down")).unwrap();
        {
            let mut c = stale.cached.lock().await;
            c.keys = keys();
            c.loaded = Some(Instant::now() - MAX_AGE);
        }
        assert!(stale.verify(&signed(&claims)).await.is_ok());
        assert_eq!(count.load(SeqCst), 7);
        // Unconfirmed for MAX_STALE, they check nothing, within the refresh
        // interval (no fetch) and on a failed fetch alike; a fetch that
        // succeeds restores them.
        stale.cached.lock().await.loaded = Some(Instant::now() - MAX_STALE);
        let refused = Err(Refusal::KeysUnavailable);
        assert_eq!(stale.verify(&signed(&claims)).await, refused);
        assert_eq!(count.load(SeqCst), 7);
        stale.refresh_every = Duration::ZERO;
        assert_eq!(stale.verify(&signed(&claims)).await, refused);
        assert_eq!(count.load(SeqCst), 8);
        jwks.cached.lock().await.loaded = Some(Instant::now() - MAX_STALE);
        assert!(jwks.verify(&rotated).await.is_ok());
        assert_eq!(count.load(SeqCst), 10);
        // An answer with no usable key is a failed fetch: the keys held
        // still serve.
        *published.lock().unwrap() = json!({"keys": []}).to_string();
        jwks.cached.lock().await.loaded = Some(Instant::now() - MAX_AGE);
        assert!(jwks.verify(&rotated).await.is_ok());
        assert_eq!(count.load(SeqCst), 12);
        *published.lock().unwrap() = doc.to_string();
        // A key set without a Content-Length, read up to the close (the
        // issuer publishes the rotated key by now).
        let close = Jwks::remote(Source::Url(format!("{base}/close"))).unwrap();
        let closed = close.verify(&rotated).await;
        assert!(closed.is_ok(), "{closed:?}");
        // An issuer that cannot be reached, answers 503, cuts its answer
        // short or serves another issuer's discovery document: refused,
        // never let through.
        for source in [
            discovery("/down"),
            discovery("/other"),
            Source::Url(format!("{base}/cut")),
            Source::Url("http://127.0.0.1:1/jwks".into()),
        ] {
            let keys = Jwks::remote(source.clone()).unwrap();
            assert_eq!(
                keys.verify(&signed(&claims)).await,
                Err(Refusal::KeysUnavailable),
                "{source:?}"
            );
            // Again at once: still unavailable, not "no key".
            assert_eq!(
                keys.verify(&signed(&claims)).await,
                Err(Refusal::KeysUnavailable),
                "{source:?}"
            );
        }
        // A fixed set fetches nothing and knows only its keys.
        let fixed = Jwks::fixed(keys());
        assert_eq!(fixed.verify(&rotated).await, Err(Refusal::UnknownKey));
    }

    #[test]
    fn only_https_or_loopback_http_urls_are_fetched() {
        let parse_url = |url: &str| super::parse_url(url, true);
        let ok =
            parse_url("https://cognito-idp.us-east-1.amazonaws.com/pool/.well-known/jwks.json")
                .unwrap();
        assert_eq!(
            (ok.tls, ok.host.as_str(), ok.port, ok.path.as_str()),
            (
                true,
                "cognito-idp.us-east-1.amazonaws.com",
                443,
                "/pool/.well-known/jwks.json"
            )
        );
        let local = parse_url("http://127.0.0.1:8123/jwks").unwrap();
        assert_eq!((local.tls, local.port), (false, 8123));
        assert_eq!(parse_url("https://[::1]:9/k").unwrap().host, "::1");
        assert_eq!(parse_url("http://[::1]/k").unwrap().port, 80);
        assert_eq!(parse_url("https://issuer.example").unwrap().path, "/");
        for bad in [
            "http://issuer.example/jwks",
            "ftp://issuer.example/jwks",
            "https://user@issuer.example/jwks",
            "https://issuer.example:x/jwks",
            "https://issuer .example/jwks",
            "https://issuer.example/a b",
            "https:///jwks",
        ] {
            assert!(parse_url(bad).is_err(), "{bad}");
        }
        // Plain HTTP, even to loopback, only where the configured URL is.
        assert!(super::parse_url("http://127.0.0.1:8123/jwks", false).is_err());
        assert!(super::parse_url("https://issuer.example/jwks", false).is_ok());
    }
}
