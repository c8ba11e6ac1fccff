//! Development tools of Mosaic Hybrid Retrieval, kept out of the service:
//! the sample catalog (its generator and vocabulary), the retrieval-quality
//! evaluation and the benchmark's building blocks.
//!
//! The `mosaic` command and the integration tests use them; the Lambda
//! functions and the `mosaic` library never depend on this crate, so none
//! of it is compiled into a deployed bootstrap.

pub mod bench;
pub mod eval;
pub mod generator;
mod vocab;

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// What is deployed never links the development tools: neither the
    /// library nor any Lambda function names this crate as a dependency.
    #[test]
    fn neither_the_library_nor_a_function_depends_on_the_devtools() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut manifests = vec![root.join("shared/Cargo.toml")];
        for function in std::fs::read_dir(root.join("functions")).expect("functions/") {
            manifests.push(function.expect("a function").path().join("Cargo.toml"));
        }
        assert!(manifests.len() >= 6, "the library and five functions");
        for manifest in manifests {
            let text = std::fs::read_to_string(&manifest).expect("a manifest");
            let named = text
                .lines()
                .map(str::trim)
                .filter(|l| !l.starts_with('#'))
                .any(|l| l.contains(env!("CARGO_PKG_NAME")));
            assert!(
                !named,
                "{} depends on {}",
                manifest.display(),
                env!("CARGO_PKG_NAME")
            );
        }
    }
}
