//! Reading what a request says, in the API's own terms: who it is for
//! ([`Tenant`], and [`Creator`] for the routes that create), path ids ([`PastePath`], [`TenantPath`], [`KeyPath`]), JSON
//! object bodies ([`JsonBody`]) whose faults are answered with the API's
//! error bodies (no parser positions, no Rust type names), the bearer
//! token, the idempotency key and the JSON content type.

mod headers;
mod json;
mod path;
mod tenant;

pub(crate) use headers::{bearer_token, idempotency_key};
pub(crate) use json::{DataLimit, JsonBody, read_within};
pub(crate) use path::{CompatPastePath, KeyPath, PastePath, TenantPath};
pub(crate) use tenant::{Creator, Tenant, TenantSlot};
