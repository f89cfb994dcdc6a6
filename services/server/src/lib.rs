//! `planshare-server`: the composition root. It reads the settings, opens the
//! store, builds the API router and serves it on a listener with bounded
//! connections and a graceful shutdown.
//!
//! No business logic lives here: routes and their behaviour are in
//! `paste-api`, storage in `paste-store`. Tests start the server in-process
//! through [`serve`] with a listener bound to port 0.

pub mod serve;
pub mod settings;
pub mod telemetry;
mod write_timeout;

pub use serve::{Server, serve};
pub use settings::Settings;
