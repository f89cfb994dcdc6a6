//! Rebuilds the crate when a migration changes: `sqlx::migrate!` embeds the
//! files at compile time, and cargo does not track them otherwise.

fn main() {
    println!("cargo:rerun-if-changed=../../migrations/sqlite");
    println!("cargo:rerun-if-changed=../../migrations/postgres");
}
