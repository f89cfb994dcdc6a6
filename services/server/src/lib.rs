//! `planshare-server`: the composition root. It reads the settings, opens the
//! store and the tenant catalog, builds the API router (plus `/metrics`, and
//! the portal on the same origin) and serves it on a listener with bounded
//! connections and a graceful shutdown (HTTPS when `server.tls_cert` and
//! `server.tls_key` are set), and the admin API on its own listener when
//! `admin.addr` is set.
//!
//! No business logic lives here: routes and their behaviour are in
//! `paste-api`, storage in `paste-store`, the tenant catalog in `tenancy`,
//! the portal in `portal`. Tests start the server in-process
//! through [`serve()`] with a listener bound to port 0.

pub mod backup;
pub mod doctor;
mod log_writer;
pub mod serve;
pub mod settings;
mod shared_socket;
pub mod telemetry;
pub mod tls;
mod write_timeout;

pub use serve::{Server, serve};
pub use settings::Settings;
