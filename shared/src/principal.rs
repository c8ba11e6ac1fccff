//! Who is calling: one type, one validator, one header, for every transport.
//!
//! Receipts are bound to a [`Principal`], and every scoped call compares the
//! caller's principal with the receipt's. So a principal is only ever made
//! from what a platform vouches for, and each platform has its own namespace,
//! so that no caller of one kind can name a caller of another:
//!
//! | principal | made from | by |
//! |---|---|---|
//! | `jwt:<issuer>#<sub>` | a validated JWT's `iss` and `sub` | the API Gateway JWT authorizer; over AgentCore, the gateway's inbound JWT authorizer (read by the identity interceptor) |
//! | `iam:<arn>` | the SigV4 caller's ARN | an API Gateway IAM-authorized route |
//! | `local:<name>` | the [`HEADER`] of a local request | `mosaic serve`, for development only |
//! | `anonymous` | nothing | only where anonymous calls are configured |
//!
//! `anonymous` has no namespace prefix, so no value a caller sends (a `sub`
//! of `anonymous`, a local name `anonymous`) can become it: those are
//! `jwt:<issuer>#anonymous` and `local:anonymous`, principals like any other.
//!
//! [`validate`] is the one rule every part of a principal passes; the
//! transports decide only what a failure means for them (a 401 for an
//! authorizer's claims, a 400 naming the header for the local server).
//!
//! Over AgentCore the principal travels from the identity interceptor to the
//! functions in a propagated header, which a client could also send; see
//! [`proof`] for what makes the interceptor's header trustworthy and a
//! client's worthless.

use std::fmt;

/// The header that carries a principal: the local server reads a name from
/// it (`local:<name>`), and over AgentCore the identity interceptor sets the
/// full namespaced principal in it for the functions (with [`PROOF_HEADER`]).
pub const HEADER: &str = "x-mosaic-principal";

/// The propagated header that carries the identity interceptor's proof for
/// the principal in [`HEADER`] (see [`proof`]).
pub const PROOF_HEADER: &str = "x-mosaic-principal-proof";

/// The longest principal, namespace included, in characters (a JWT one:
/// `jwt:`, an issuer, `#`, a subject).
pub const MAX_CHARS: usize = 4 + 255 + 1 + 255;

/// Who is calling. Receipts are bound to it; scoped calls from another
/// principal are refused like any other scope miss.
///
/// The transports build it only through the namespaced constructors
/// ([`jwt`](Self::jwt), [`iam`](Self::iam), [`local`](Self::local),
/// [`anonymous`](Self::anonymous)) or [`parse`](Self::parse). In-process
/// callers that own the database anyway (the `mosaic` CLI, evaluation,
/// tests) may name a principal directly.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal(pub String);

/// The kinds of principal parts [`validate`] knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// A JWT's `iss`: an issuer URL, which never holds a `#` (OpenID
    /// issuers have no fragment), so `jwt:<issuer>#<sub>` splits uniquely.
    Issuer,
    /// A JWT's `sub`.
    Subject,
    /// An IAM caller's ARN.
    Arn,
    /// A local development name.
    LocalName,
}

impl Part {
    fn as_str(self) -> &'static str {
        match self {
            Part::Issuer => "issuer",
            Part::Subject => "subject",
            Part::Arn => "ARN",
            Part::LocalName => "local name",
        }
    }

    /// The longest value, in characters.
    pub fn max_chars(self) -> usize {
        match self {
            Part::LocalName => 128,
            Part::Issuer | Part::Subject => 255,
            Part::Arn => 400,
        }
    }

    fn allows(self, c: char) -> bool {
        match self {
            // As the local server always accepted.
            Part::LocalName => c.is_ascii_alphanumeric() || "._:@-".contains(c),
            Part::Issuer => c.is_ascii_graphic() && c != '#',
            Part::Subject | Part::Arn => c.is_ascii_graphic(),
        }
    }

    /// What the part must look like, for error messages.
    pub fn rule(self) -> String {
        let chars = match self {
            Part::LocalName => "A-Z a-z 0-9 . _ : @ -",
            Part::Issuer => "printable ASCII other than # and space",
            Part::Subject | Part::Arn => "printable ASCII other than space",
        };
        format!("1 to {} characters of {chars}", self.max_chars())
    }
}

/// Why a principal part was refused. Names the part and the rule, never the
/// value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid(pub Part);

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the caller's {} must be {}",
            self.0.as_str(),
            self.0.rule()
        )
    }
}

impl std::error::Error for Invalid {}

/// The one rule for every part of a principal: non-empty, bounded, and of
/// the part's characters (no whitespace or control characters anywhere; an
/// ARN must start with `arn:`).
pub fn validate(part: Part, value: &str) -> Result<(), Invalid> {
    let n = value.chars().count();
    let ok = (1..=part.max_chars()).contains(&n)
        && value.chars().all(|c| part.allows(c))
        && (part != Part::Arn || value.starts_with("arn:"));
    if ok {
        Ok(())
    } else {
        Err(Invalid(part))
    }
}

impl Principal {
    pub const ANONYMOUS: &'static str = "anonymous";

    /// The anonymous principal; transports use it only where anonymous
    /// calls are configured.
    pub fn anonymous() -> Self {
        Principal(Self::ANONYMOUS.to_string())
    }

    /// `jwt:<issuer>#<sub>`: a caller a JWT authorizer validated.
    pub fn jwt(issuer: &str, sub: &str) -> Result<Self, Invalid> {
        validate(Part::Issuer, issuer)?;
        validate(Part::Subject, sub)?;
        Ok(Principal(format!("jwt:{issuer}#{sub}")))
    }

    /// `iam:<arn>`: a caller SigV4 authenticated.
    pub fn iam(arn: &str) -> Result<Self, Invalid> {
        validate(Part::Arn, arn)?;
        Ok(Principal(format!("iam:{arn}")))
    }

    /// `local:<name>`: a development caller of `mosaic serve`.
    pub fn local(name: &str) -> Result<Self, Invalid> {
        validate(Part::LocalName, name)?;
        Ok(Principal(format!("local:{name}")))
    }

    /// A namespaced principal as [`as_str`](Self::as_str) wrote it, checked
    /// part by part. `anonymous` is not accepted: no header names it.
    pub fn parse(s: &str) -> Result<Self, Invalid> {
        if let Some(rest) = s.strip_prefix("jwt:") {
            let (issuer, sub) = rest.split_once('#').ok_or(Invalid(Part::Issuer))?;
            return Self::jwt(issuer, sub);
        }
        if let Some(arn) = s.strip_prefix("iam:") {
            return Self::iam(arn);
        }
        if let Some(name) = s.strip_prefix("local:") {
            return Self::local(name);
        }
        Err(Invalid(Part::Subject))
    }

    /// The name of a `local:<name>` principal ([`local`](Self::local)).
    pub fn local_name(&self) -> Option<&str> {
        self.0.strip_prefix("local:")
    }

    pub fn is_anonymous(&self) -> bool {
        self.0 == Self::ANONYMOUS
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

pub mod proof {
    //! The identity interceptor's proof that it set a principal.
    //!
    //! # Why a proof
    //!
    //! AgentCore Gateway hands a Lambda target no caller identity of its own:
    //! only the tool name and ids in the client context, and the headers
    //! allow-listed for propagation — "the pre-allowlisted headers provided
    //! in the invoke tool call to gateway or sent from custom interceptor
    //! lambda" (AgentCore developer guide, *Header propagation with
    //! Gateway*). So a principal header alone may have come from the
    //! client, and whoever may invoke a function directly writes the whole
    //! client context. The REQUEST interceptor is the one component that sees
    //! the bearer token the gateway's inbound authorizer validated
    //! (`passRequestHeaders: true`), so it sets the principal — and signs it.
    //! It checks the token's signature against the issuer's keys itself
    //! ([`crate::jwt`] with the `lambda` feature), so a proof is made only
    //! for a token the issuer signed, whoever invokes the interceptor.
    //!
    //! # The proof
    //!
    //! `v1.<expiry>.<mac>`: `expiry` in Unix seconds, `mac` the lower-case
    //! hex HMAC-SHA256, under a key only the interceptor and the four
    //! functions can read (a Secrets Manager secret in AWS), over
    //!
    //! ```text
    //! mosaic-agentcore-principal/v1 \n <principal> \n <gateway tool name> \n <expiry>
    //! ```
    //!
    //! The tool name is the gateway's `<target>___<tool>`: the interceptor
    //! reads it from the `tools/call` request, the function from its client
    //! context, so a proof made for one tool does not serve another. The
    //! fields hold no newline (principals and tool names are checked), so
    //! the message splits one way only.
    //!
    //! A client never sees a proof: the interceptor's output goes to the
    //! gateway, the gateway sends the header to the target only. A client
    //! cannot make one without the key; a proof that leaked (a log, a
    //! function's memory) is good for one principal and one tool for at most
    //! its lifetime ([`DEFAULT_TTL`], checked against the function's clock).
    //! A proof whose expiry lies further ahead than any lifetime the
    //! interceptor can be given ([`MAX_TTL`], plus [`CLOCK_SKEW`]) is
    //! refused, and only one spelling of a proof is accepted (the expiry in
    //! plain decimal digits, the MAC in lower-case hex).

    use super::Principal;
    use hmac::{KeyInit, Mac};
    use std::fmt;

    type HmacSha256 = hmac::Hmac<hmac_sha2::Sha256>;

    /// The lifetime of a proof: the gateway invokes the target right after
    /// the interceptor answers, so this only has to cover that hop and the
    /// clock difference between two Lambda hosts.
    pub const DEFAULT_TTL: u64 = 60;
    /// The longest lifetime the interceptor may be given
    /// (`MOSAIC_PRINCIPAL_PROOF_TTL_SECONDS`).
    pub const MAX_TTL: u64 = 900;
    /// How far the interceptor's clock may run ahead of a function's.
    pub const CLOCK_SKEW: u64 = 60;
    /// The shortest key accepted, in bytes.
    pub const MIN_KEY_BYTES: usize = 32;
    const DOMAIN: &str = "mosaic-agentcore-principal/v1";

    /// The shared key. Never printed.
    #[derive(Clone)]
    pub struct Key(Vec<u8>);

    impl fmt::Debug for Key {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("Key(..)")
        }
    }

    impl Key {
        /// A key from the secret's text (at least [`MIN_KEY_BYTES`] bytes,
        /// surrounding whitespace ignored).
        pub fn new(secret: &str) -> Result<Self, String> {
            let s = secret.trim();
            if s.len() < MIN_KEY_BYTES {
                return Err(format!(
                    "the principal proof key must be at least {MIN_KEY_BYTES} bytes"
                ));
            }
            Ok(Key(s.as_bytes().to_vec()))
        }

        fn mac(&self, principal: &str, tool: &str, expiry: u64) -> HmacSha256 {
            let mut mac = HmacSha256::new_from_slice(&self.0).expect("HMAC takes any key length");
            mac.update(format!("{DOMAIN}\n{principal}\n{tool}\n{expiry}").as_bytes());
            mac
        }

        /// The proof for `principal` calling `tool`, valid until `expiry`.
        pub fn sign(&self, principal: &Principal, tool: &str, expiry: u64) -> String {
            let tag = self
                .mac(principal.as_str(), tool, expiry)
                .finalize()
                .into_bytes();
            format!("v1.{expiry}.{}", hex(&tag))
        }

        /// Checks a proof for `principal` calling `tool` at Unix time `now`.
        pub fn verify(
            &self,
            principal: &Principal,
            tool: &str,
            proof: &str,
            now: u64,
        ) -> Result<(), Refusal> {
            let mut parts = proof.split('.');
            let (Some("v1"), Some(expiry), Some(tag), None) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                return Err(Refusal::Malformed);
            };
            let canonical = !expiry.is_empty()
                && expiry.bytes().all(|b| b.is_ascii_digit())
                && (expiry == "0" || !expiry.starts_with('0'));
            if !canonical {
                return Err(Refusal::Malformed);
            }
            let expiry: u64 = expiry.parse().map_err(|_| Refusal::Malformed)?;
            let tag = unhex(tag).ok_or(Refusal::Malformed)?;
            if tool.contains('\n') {
                return Err(Refusal::Malformed);
            }
            // The MAC first (in constant time), then the clock: an expired
            // proof of someone else's never says which it was.
            self.mac(principal.as_str(), tool, expiry)
                .verify_slice(&tag)
                .map_err(|_| Refusal::BadSignature)?;
            if now > expiry {
                return Err(Refusal::Expired);
            }
            if expiry > now.saturating_add(MAX_TTL + CLOCK_SKEW) {
                return Err(Refusal::TooFarAhead);
            }
            Ok(())
        }
    }

    /// Why a proof was refused (for the log; the caller gets one 401).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Refusal {
        Missing,
        Malformed,
        BadSignature,
        Expired,
        TooFarAhead,
        NoKey,
    }

    impl Refusal {
        pub fn as_str(self) -> &'static str {
            match self {
                Refusal::Missing => "missing",
                Refusal::Malformed => "malformed",
                Refusal::BadSignature => "bad_signature",
                Refusal::Expired => "expired",
                Refusal::TooFarAhead => "expiry_beyond_any_lifetime",
                Refusal::NoKey => "no_key_configured",
            }
        }
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn unhex(s: &str) -> Option<Vec<u8>> {
        if s.len() != 64 || !s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return None;
        }
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
            .collect()
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        fn key() -> Key {
            Key::new("0123456789abcdef0123456789abcdef-test").unwrap()
        }

        #[test]
        fn a_proof_holds_for_its_principal_tool_and_lifetime_only() {
            let k = key();
            let alice = Principal::jwt("https://issuer.example", "alice").unwrap();
            let bob = Principal::jwt("https://issuer.example", "bob").unwrap();
            let tool = "mosaic-search-products___search_products";
            let proof = k.sign(&alice, tool, 1_000);
            assert_eq!(k.verify(&alice, tool, &proof, 1_000), Ok(()));
            assert_eq!(
                k.verify(&bob, tool, &proof, 1_000),
                Err(Refusal::BadSignature)
            );
            assert_eq!(
                k.verify(&alice, "t___explain_retrieval", &proof, 1_000),
                Err(Refusal::BadSignature)
            );
            assert_eq!(k.verify(&alice, tool, &proof, 1_001), Err(Refusal::Expired));
            // Another key's proof; a stretched expiry.
            let other = Key::new("another key of at least thirty-two bytes").unwrap();
            assert_eq!(
                other.verify(&alice, tool, &proof, 0),
                Err(Refusal::BadSignature)
            );
            let stretched = proof.replacen("v1.1000.", "v1.9000.", 1);
            assert_eq!(
                k.verify(&alice, tool, &stretched, 2_000),
                Err(Refusal::BadSignature)
            );
            for bad in ["", "v1", "v2.1000.00", "v1.x.00", "v1.1000.zz", "v1.1.2.3"] {
                assert_eq!(k.verify(&alice, tool, bad, 0), Err(Refusal::Malformed));
            }
            // One spelling: the same expiry and MAC written otherwise.
            let tag = proof.rsplit('.').next().unwrap();
            for respelled in [
                format!("v1.+1000.{tag}"),
                format!("v1.01000.{tag}"),
                format!("v1.1000.{}", tag.to_uppercase()),
            ] {
                assert_eq!(
                    k.verify(&alice, tool, &respelled, 1_000),
                    Err(Refusal::Malformed),
                    "{respelled}"
                );
            }
        }

        #[test]
        fn a_proof_cannot_outlive_any_lifetime_the_interceptor_can_be_given() {
            let k = key();
            let alice = Principal::jwt("https://issuer.example", "alice").unwrap();
            let tool = "mosaic-search-products___search_products";
            let now = 1_000_000;
            let longest = k.sign(&alice, tool, now + MAX_TTL + CLOCK_SKEW);
            assert_eq!(k.verify(&alice, tool, &longest, now), Ok(()));
            let beyond = k.sign(&alice, tool, now + MAX_TTL + CLOCK_SKEW + 1);
            assert_eq!(
                k.verify(&alice, tool, &beyond, now),
                Err(Refusal::TooFarAhead)
            );
            // Valid once the clock catches up: the bound is relative.
            assert_eq!(k.verify(&alice, tool, &beyond, now + 1), Ok(()));
        }

        #[test]
        fn keys_are_long_and_never_printed() {
            assert!(Key::new("short").is_err());
            assert_eq!(format!("{:?}", key()), "Key(..)");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn principals_are_namespaced_and_anonymous_cannot_be_named() {
        assert_eq!(
            Principal::jwt(
                "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Ab",
                "3f6c"
            )
            .unwrap()
            .as_str(),
            "jwt:https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Ab#3f6c"
        );
        let arn = "arn:aws:sts::123456789012:assumed-role/client/session-1";
        assert_eq!(Principal::iam(arn).unwrap().as_str(), format!("iam:{arn}"));
        assert_eq!(Principal::local("alice").unwrap().as_str(), "local:alice");
        for named in [
            Principal::jwt("https://i.example", "anonymous").unwrap(),
            Principal::local("anonymous").unwrap(),
        ] {
            assert!(!named.is_anonymous(), "{named}");
            assert_ne!(named, Principal::anonymous());
        }
        assert!(Principal::parse("anonymous").is_err());
        for p in [
            "jwt:https://i.example#a#b",
            "iam:arn:aws:iam::1:user/x",
            "local:dev_1",
        ] {
            assert_eq!(Principal::parse(p).unwrap().as_str(), p);
        }
        for bad in [
            "jwt:no-sub",
            "user-1",
            "jwt:#s",
            "iam:not-an-arn",
            "local:a b",
            "",
        ] {
            assert!(Principal::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn one_rule_for_every_part() {
        assert!(validate(Part::LocalName, &"a".repeat(128)).is_ok());
        for bad in ["", "a b", "a/b", "é", &"a".repeat(129)] {
            assert_eq!(
                validate(Part::LocalName, bad),
                Err(Invalid(Part::LocalName))
            );
        }
        assert!(validate(Part::Subject, "auth0|5f1c/x=").is_ok());
        for bad in ["", "a b", "a\nb", "jürgen", &"s".repeat(256)] {
            assert!(validate(Part::Subject, bad).is_err(), "{bad:?}");
        }
        assert!(validate(Part::Issuer, "https://i.example/#frag").is_err());
        let e = validate(Part::Issuer, "").unwrap_err().to_string();
        assert!(e.contains("issuer") && e.contains("255"), "{e}");
        assert!(
            Principal::jwt("https://i.example", &"s".repeat(255))
                .unwrap()
                .as_str()
                .chars()
                .count()
                <= MAX_CHARS
        );
    }
}
