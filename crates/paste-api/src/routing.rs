//! What every family's route table is made of: the row that declares a
//! route's load-shedding policy and the credential it takes, and the
//! method fallbacks the tables share. The edge reads the rows
//! ([`RoutePolicies`]); a test holds each row's [`Auth`] to the OpenAPI
//! document's `security` for the same operation, and every documented
//! operation to a row.

use std::collections::HashMap;

use axum::routing::MethodRouter;
use utoipa_axum::router::UtoipaMethodRouter;

use crate::error::ApiError;
use crate::state::AppState;

/// Whether a request counts against `http.max_in_flight`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shedding {
    /// It takes a place, or is shed when there is none.
    Applies,
    /// Probes, scrapes and event streams: served without a place (an
    /// overloaded instance must still say so; streams have caps of their
    /// own).
    Exempt,
    /// Bodies that may be large: the handler takes a place once the body
    /// has arrived, so that bodies trickling in do not hold the places of
    /// requests that are ready to be served. Bodies under way are bounded
    /// on their own (per client, by rate and by memory).
    AfterBody,
}

/// The credential a route takes, as its OpenAPI `security` states it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Auth {
    /// None: probes, discovery, the document.
    Anyone,
    /// A tenant's API key, or none where the tenant allows anonymous use.
    KeyOrAnonymous,
    /// A tenant's API key.
    Key,
    /// A tenant's API key, or the paste's delete token.
    KeyOrDeleteToken,
    /// A review link's token.
    ReviewToken,
    /// The admin token.
    AdminToken,
}

#[cfg_attr(
    not(test),
    allow(dead_code, reason = "read by the checks against the document")
)]
impl Auth {
    /// The OpenAPI `security` requirement this stands for: the schemes of
    /// each alternative (an empty alternative: no credential).
    pub(crate) fn security(self) -> &'static [&'static [&'static str]] {
        match self {
            Auth::Anyone => &[],
            Auth::KeyOrAnonymous => &[&["apiKey"], &[]],
            Auth::Key => &[&["apiKey"]],
            Auth::KeyOrDeleteToken => &[&["apiKey"], &["deleteToken"]],
            Auth::ReviewToken => &[&["reviewToken"]],
            Auth::AdminToken => &[&["adminToken"]],
        }
    }
}

/// One row of a route table: a method on a path (as axum matches it), how
/// it is shed and who may call it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RouteRow {
    pub(crate) method: &'static str,
    pub(crate) path: &'static str,
    pub(crate) shedding: Shedding,
    #[cfg_attr(
        not(test),
        allow(dead_code, reason = "read by the checks against the document")
    )]
    pub(crate) auth: Auth,
}

/// A row (a `const fn`, so tables are constants).
pub(crate) const fn row(
    method: &'static str,
    path: &'static str,
    shedding: Shedding,
    auth: Auth,
) -> RouteRow {
    RouteRow {
        method,
        path,
        shedding,
        auth,
    }
}

/// The rows of every table, by path, as the edge looks them up.
#[derive(Debug, Default)]
pub(crate) struct RoutePolicies {
    by_path: HashMap<&'static str, Vec<RouteRow>>,
}

impl RoutePolicies {
    pub(crate) fn new(tables: &[&[RouteRow]]) -> Self {
        let mut by_path: HashMap<&'static str, Vec<RouteRow>> = HashMap::new();
        for row in tables.iter().flat_map(|t| t.iter()) {
            by_path.entry(row.path).or_default().push(*row);
        }
        RoutePolicies { by_path }
    }

    /// How a request for `method` on the matched `route` is shed: its
    /// row's policy (`HEAD` as `GET`); on a route whose rows are all
    /// exempt, any method is (a 405 from a probe is not shed either);
    /// anything else takes a place.
    pub(crate) fn shedding(&self, method: &http::Method, route: &str) -> Shedding {
        let Some(rows) = self.by_path.get(route) else {
            return Shedding::Applies;
        };
        let method = if method == http::Method::HEAD {
            "GET"
        } else {
            method.as_str()
        };
        if let Some(row) = rows.iter().find(|r| r.method == method) {
            return row.shedding;
        }
        if rows.iter().all(|r| r.shedding == Shedding::Exempt) {
            Shedding::Exempt
        } else {
            Shedding::Applies
        }
    }

    /// Every row, for the checks against the document.
    #[cfg(test)]
    pub(crate) fn rows(&self) -> impl Iterator<Item = &RouteRow> {
        self.by_path.values().flatten()
    }
}

/// Changes the axum side of a documented route.
pub(crate) fn map_method_router(
    (schemas, paths, method_router): UtoipaMethodRouter<AppState>,
    map: impl FnOnce(MethodRouter<AppState>) -> MethodRouter<AppState>,
) -> UtoipaMethodRouter<AppState> {
    (schemas, paths, map(method_router))
}

/// A documented route whose other methods answer 405 with `Allow`.
pub(crate) fn with_method_fallback(
    route: UtoipaMethodRouter<AppState>,
    allow: &'static str,
) -> UtoipaMethodRouter<AppState> {
    map_method_router(route, |m| {
        m.fallback(move || async move { ApiError::MethodNotAllowed { allow } })
    })
}

/// Upstream's generic 404, for any path or method not served.
pub(crate) async fn route_not_found() -> ApiError {
    ApiError::RouteNotFound
}
