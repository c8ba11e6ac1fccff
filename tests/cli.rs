//! The `mosaic` command against databases it must refuse. This test belongs
//! to the `mosaic-cli` package (see cli/Cargo.toml) so that cargo builds the
//! `mosaic` binary for it.

use mosaic::db::{self, MigrateOptions};
use mosaic_integration_tests::{forget_last_migration, TestDb};
use std::process::{Command, Output};

const MOSAIC: &str = env!("CARGO_BIN_EXE_mosaic");

/// `mosaic ARGS --database-url URL`, run to its end.
fn mosaic(args: &[&str], url: &str) -> Output {
    Command::new(MOSAIC)
        .args(args)
        .args(["--database-url", url])
        .output()
        .expect("run mosaic")
}

#[tokio::test]
async fn the_catalog_writing_commands_refuse_a_database_behind_this_build() {
    // Migrated, then one migration short: what a user who upgrades the
    // binary and forgets `mosaic migrate` has.
    let db = TestDb::empty("cli_behind").await;
    let mut c = db.owner().await;
    db::migrate(&mut c, &MigrateOptions::default())
        .await
        .unwrap();
    let last = forget_last_migration(&c).await;

    let dir = std::env::temp_dir().join(format!("mosaic-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let products = dir.join("products.jsonl");
    std::fs::write(
        &products,
        concat!(
            r#"{"product_id": "P0000001", "sku": "AC-KT0001", "model": "ACKT-1", "brand": "Acme", "#,
            r#""title": "Acme ACKT-1 Kettle", "domain": "home_kitchen", "category_key": "kettles", "#,
            r#""description": "A kettle.", "price_cents": 2500, "currency": "USD", "rating": 4.1, "#,
            r#""review_count": 3, "availability": "in_stock", "attributes": {}}"#,
            "\n"
        ),
    )
    .unwrap();
    let url = db.url();
    for args in [
        vec!["load", "--products", products.to_str().unwrap()],
        vec!["embed", "--embedder", "hashing"],
    ] {
        let out = mosaic(&args, &url);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} succeeded: {stderr}");
        assert!(
            stderr.contains(&format!("lacks 1 migration(s) of this build, from {last}"))
                && stderr.contains("run `mosaic migrate` first"),
            "{args:?}: {stderr}"
        );
    }
    let count = |c: tokio_postgres::Client| async move {
        let n: i64 = c
            .query_one("SELECT count(*) FROM catalog.products", &[])
            .await
            .unwrap()
            .get(0);
        n
    };
    assert_eq!(
        count(db.owner().await).await,
        0,
        "a refused load wrote the catalog"
    );

    // Migrated again, the same load goes through.
    db::migrate(&mut c, &MigrateOptions::default())
        .await
        .unwrap();
    let out = mosaic(&["load", "--products", products.to_str().unwrap()], &url);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(count(db.owner().await).await, 1);
    std::fs::remove_dir_all(&dir).ok();
}
