//! Verified TLS to PostgreSQL with rustls (feature `tls`).
//!
//! [`MakeRustlsConnect`] plugs rustls into `tokio-postgres`. It always
//! verifies: the chain must end at a trusted root and the certificate must
//! name the host the client dialled (a DNS name, or an IP address in an IP
//! SAN). There is no "encrypt but trust anything" mode.
//!
//! Trusted roots ([`client_config`]):
//!
//! * the Mozilla root programme ([`webpki_roots`]), which includes the
//!   Amazon Trust Services roots that sign **RDS Proxy** certificates;
//! * the **Amazon RDS** certificate authorities ([`RDS_CA_BUNDLE`], shipped in
//!   `certs/rds-ca-bundle.pem`), which sign Aurora and RDS instance
//!   certificates;
//! * optionally one more PEM file (`MOSAIC_DB_CA_FILE`, or
//!   `sslrootcert=` in a connection string), for a private CA such as the
//!   local cluster's test CA.
//!
//! The crypto provider is aws-lc-rs, passed explicitly to the config
//! builder, so the process-wide default provider is never consulted (and no
//! second provider such as `ring` can make the builder ambiguous).
//!
//! Channel binding (`SCRAM-SHA-256-PLUS`) is not offered: the connection
//! authenticates with plain SCRAM or a password over the verified channel.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use std::future::Future;
use std::io;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};

/// The Amazon RDS certificate authorities and the Amazon Trust Services
/// roots, PEM.
pub const RDS_CA_BUNDLE: &str = include_str!("../certs/rds-ca-bundle.pem");

/// Which roots a TLS client trusts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Roots {
    /// Mozilla roots plus the RDS bundle, plus the extra file if any.
    Public,
    /// Mozilla roots only: a web server (an issuer's signing keys), which
    /// the RDS authorities have no business vouching for.
    Web,
    /// Only the extra file (tests of a private CA).
    ExtraOnly,
}

/// A rustls client configuration trusting `roots`, plus the certificates in
/// `extra_ca` (a PEM file) when given.
pub fn client_config(roots: Roots, extra_ca: Option<&Path>) -> Result<Arc<ClientConfig>, String> {
    let mut store = RootCertStore::empty();
    if roots != Roots::ExtraOnly {
        store.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    }
    if roots == Roots::Public {
        let (added, _) = store.add_parsable_certificates(pem_certificates(
            RDS_CA_BUNDLE.as_bytes(),
            "the RDS CA bundle",
        )?);
        if added == 0 {
            return Err("the RDS CA bundle holds no usable certificate".into());
        }
    }
    if let Some(path) = extra_ca {
        let pem = std::fs::read(path).map_err(|e| format!("CA file {}: {e}", path.display()))?;
        let what = format!("CA file {}", path.display());
        let (added, _) = store.add_parsable_certificates(pem_certificates(&pem, &what)?);
        if added == 0 {
            return Err(format!("{what} holds no usable certificate"));
        }
    }
    if store.is_empty() {
        return Err("no trusted root certificates".into());
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS configuration: {e}"))?
        .with_root_certificates(store)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

fn pem_certificates(pem: &[u8], what: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{what}: not valid PEM ({e})"))
}

/// `tokio-postgres` TLS over rustls, verifying chain and host name.
#[derive(Clone)]
pub struct MakeRustlsConnect {
    config: Arc<ClientConfig>,
}

impl MakeRustlsConnect {
    pub fn new(config: Arc<ClientConfig>) -> Self {
        Self { config }
    }
}

impl std::fmt::Debug for MakeRustlsConnect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MakeRustlsConnect").finish_non_exhaustive()
    }
}

impl<S> MakeTlsConnect<S> for MakeRustlsConnect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type TlsConnect = RustlsConnect;
    type Error = io::Error;

    fn make_tls_connect(&mut self, domain: &str) -> Result<RustlsConnect, io::Error> {
        let name = ServerName::try_from(domain.to_string()).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{domain:?} is not a host name TLS can verify: {e}"),
            )
        })?;
        Ok(RustlsConnect {
            config: self.config.clone(),
            name,
        })
    }
}

/// One pending TLS handshake (see [`MakeRustlsConnect`]).
pub struct RustlsConnect {
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
}

impl<S> TlsConnect<S> for RustlsConnect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<RustlsStream<S>>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        Box::pin(async move {
            let stream = tokio_rustls::TlsConnector::from(self.config)
                .connect(self.name, stream)
                .await?;
            Ok(RustlsStream(Box::new(stream)))
        })
    }
}

/// An established TLS stream to the server.
pub struct RustlsStream<S>(Box<tokio_rustls::client::TlsStream<S>>);

impl<S> TlsStream for RustlsStream<S>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for RustlsStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for RustlsStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rds_bundle_parses_and_is_trusted_with_the_mozilla_roots() {
        let certs = pem_certificates(RDS_CA_BUNDLE.as_bytes(), "bundle").unwrap();
        assert!(certs.len() >= 80, "{} certificates", certs.len());
        let mut store = RootCertStore::empty();
        let (added, ignored) = store.add_parsable_certificates(certs);
        assert_eq!(ignored, 0);
        assert!(added >= 80);
        assert!(client_config(Roots::Public, None).is_ok());
    }

    #[test]
    fn a_missing_or_empty_ca_file_is_a_clear_error() {
        let e =
            client_config(Roots::ExtraOnly, Some(Path::new("/nonexistent/ca.pem"))).unwrap_err();
        assert!(e.contains("/nonexistent/ca.pem"), "{e}");
        let dir = std::env::temp_dir().join(format!("mosaic-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "no certificates here\n").unwrap();
        let e = client_config(Roots::ExtraOnly, Some(&empty)).unwrap_err();
        assert!(e.contains("no usable certificate"), "{e}");
        assert!(client_config(Roots::ExtraOnly, None).is_err());
    }

    #[test]
    fn host_names_and_addresses_are_accepted_and_garbage_is_not() {
        let mut make = MakeRustlsConnect::new(client_config(Roots::Public, None).unwrap());
        let ok = |m: &mut MakeRustlsConnect, h: &str| {
            <MakeRustlsConnect as MakeTlsConnect<tokio::net::TcpStream>>::make_tls_connect(m, h)
                .is_ok()
        };
        assert!(ok(
            &mut make,
            "my-proxy.proxy-abc.eu-west-1.rds.amazonaws.com"
        ));
        assert!(ok(&mut make, "127.0.0.1"));
        assert!(!ok(&mut make, "bad host name!"));
    }
}
