//! The review service on the memory store with SQLite: the rules that need
//! no HTTP to be seen.
