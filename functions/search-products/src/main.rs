//! The `search-products` Lambda function.
//!
//! Not deployable yet: the Lambda handler for this operation has not been
//! wired. Running it prints this notice and exits with status 2 rather than
//! pretending to serve.

fn main() {
    eprintln!(
        "search-products: the Lambda handler for this operation is not implemented in this build; \
         use `mosaic serve` for the local HTTP API"
    );
    std::process::exit(2);
}
