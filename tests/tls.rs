//! Verified TLS to the local PostgreSQL, which `scripts/db.sh` serves with a
//! private test CA and a certificate for `localhost` only.
//!
//! Connection strings ask for TLS with `sslmode=require` (chain and host
//! name verified) and add the test CA with `sslrootcert`; without that CA,
//! or at an address the certificate does not name, the connection must fail.

use mosaic::db;
use mosaic::RetrievalProfile;

fn port() -> u16 {
    let server = std::env::var("MOSAIC_TEST_RUNTIME_SERVER")
        .unwrap_or_else(|_| "postgres://mosaic_runtime:mosaic_runtime@127.0.0.1:54329".into());
    let cfg: tokio_postgres::Config = server.parse().expect("MOSAIC_TEST_RUNTIME_SERVER");
    cfg.get_ports().first().copied().unwrap_or(5432)
}

fn test_ca() -> String {
    std::env::var("MOSAIC_TEST_TLS_CA").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../.mosaic/pg/tls/ca.crt").to_string()
    })
}

fn url(host: &str, query: &str) -> String {
    format!(
        "postgres://mosaic_runtime:mosaic_runtime@{host}:{}/postgres?{query}",
        port()
    )
}

async fn session_is_tls(client: &tokio_postgres::Client) -> bool {
    client
        .query_one(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .await
        .unwrap()
        .get(0)
}

#[tokio::test]
async fn sslmode_require_with_the_test_ca_connects_over_tls() {
    let client = db::connect(&url(
        "localhost",
        &format!("sslmode=require&sslrootcert={}", test_ca()),
    ))
    .await
    .unwrap();
    assert!(session_is_tls(&client).await);

    // libpq's spelling means the same here.
    let client = db::connect(&url(
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={}", test_ca()),
    ))
    .await
    .unwrap();
    assert!(session_is_tls(&client).await);
}

#[tokio::test]
async fn plain_tcp_stays_plain() {
    let client = db::connect(&url("127.0.0.1", "sslmode=disable"))
        .await
        .unwrap();
    assert!(!session_is_tls(&client).await);
}

#[tokio::test]
async fn a_certificate_from_an_untrusted_ca_is_refused() {
    // The Mozilla roots and the RDS bundle only.
    let e = db::connect(&url("localhost", "sslmode=require"))
        .await
        .unwrap_err();
    assert!(e.to_lowercase().contains("certificate"), "{e}");
    assert!(
        !e.contains("mosaic_runtime:"),
        "no credentials in errors: {e}"
    );
}

#[tokio::test]
async fn a_certificate_for_another_name_is_refused() {
    // The certificate names `localhost`, not the address 127.0.0.1.
    let e = db::connect(&url(
        "127.0.0.1",
        &format!("sslmode=require&sslrootcert={}", test_ca()),
    ))
    .await
    .unwrap_err();
    assert!(e.to_lowercase().contains("certificate"), "{e}");
}

#[tokio::test]
async fn the_service_pool_uses_the_same_tls() {
    let ctx = mosaic::Ctx::from_url(
        &url(
            "localhost",
            &format!("sslmode=require&sslrootcert={}", test_ca()),
        ),
        2,
        RetrievalProfile::default(),
    )
    .unwrap();
    let conn = ctx.pool.get().await.unwrap();
    assert!(session_is_tls(&conn).await);

    let refused = mosaic::Ctx::from_url(
        &url("localhost", "sslmode=require"),
        1,
        RetrievalProfile::default(),
    )
    .unwrap();
    assert!(refused.pool.get().await.is_err());
}
