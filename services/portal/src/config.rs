//! The settings as given (flags or environment) and their validation, with
//! errors that name both the flag and the variable.

use std::net::SocketAddr;

use anyhow::{Context as _, bail};
use portal::PortalConfig;

/// Where the portal listens unless told otherwise.
pub const DEFAULT_ADDR: &str = "0.0.0.0:19434";

/// Upstream's hosted paste service: where stock Plannotator clients store
/// short links, which therefore carry no `&paste=` (`docs/wire-format.md`,
/// "Links"); as the default, links made by those clients open here as on
/// share.plannotator.ai.
pub const UPSTREAM_PASTE_API: &str = "https://plannotator-paste.plannotator.workers.dev";

/// The settings as given.
pub struct Options {
    /// `--addr` / `PLANSHARE_PORTAL_ADDR`
    pub addr: String,
    /// `--paste-api-url` / `PLANSHARE_PORTAL_PASTE_API_URL`
    pub paste_api_url: String,
    /// `--allowed-paste-apis` / `PLANSHARE_PORTAL_ALLOWED_PASTE_APIS`
    pub allowed_paste_apis: String,
    /// `--callback-origins` / `PLANSHARE_PORTAL_CALLBACK_ORIGINS`
    /// (comma-separated).
    pub callback_origins: String,
    /// `--share-base-url` / `PLANSHARE_SHARE_BASE_URL`
    pub share_base_url: String,
}

/// Validated settings.
#[derive(Debug)]
pub struct Settings {
    /// Where to listen.
    pub addr: SocketAddr,
    /// What the portal serves and tells the app.
    pub portal: PortalConfig,
}

/// Checks one URL setting with the portal's own rules.
/// A comma- (or space-) separated list of URLs, trailing `/` dropped.
fn origin_list(list: &str) -> Vec<String> {
    list.split([',', ' ', '\t', '\n'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.trim_end_matches('/').to_owned())
        .collect()
}

fn check_url(flag: &str, var: &str, config: &PortalConfig) -> anyhow::Result<()> {
    config.validate().map_err(|message| {
        // `portal.x: "…" is not …` → `--x / VAR: "…" is not …`
        let reason = message
            .split_once(": ")
            .map_or(message.as_str(), |(_, r)| r);
        anyhow::anyhow!("invalid {flag} / {var}: {reason}")
    })
}

impl Options {
    /// The settings, or an error naming the flag and variable at fault.
    pub fn validate(self) -> anyhow::Result<Settings> {
        let addr_text = self.addr.trim();
        let addr: SocketAddr = addr_text.parse().with_context(|| {
            format!(
                "invalid --addr / PLANSHARE_PORTAL_ADDR {addr_text:?}: expected ip:port such as {DEFAULT_ADDR} or 127.0.0.1:8080"
            )
        })?;
        let paste_api_url = self.paste_api_url.trim().to_owned();
        if paste_api_url.is_empty() {
            bail!(
                "--paste-api-url / PLANSHARE_PORTAL_PASTE_API_URL is empty: the standalone portal \
                 serves no paste API, name one such as https://paste.example.com"
            );
        }
        check_url(
            "--paste-api-url",
            "PLANSHARE_PORTAL_PASTE_API_URL",
            &PortalConfig {
                paste_api_url: paste_api_url.clone(),
                ..PortalConfig::default()
            },
        )?;
        let allowed_paste_apis = origin_list(&self.allowed_paste_apis);
        check_url(
            "--allowed-paste-apis",
            "PLANSHARE_PORTAL_ALLOWED_PASTE_APIS",
            &PortalConfig {
                allowed_paste_apis: allowed_paste_apis.clone(),
                ..PortalConfig::default()
            },
        )?;
        let callback_origins = origin_list(&self.callback_origins);
        check_url(
            "--callback-origins",
            "PLANSHARE_PORTAL_CALLBACK_ORIGINS",
            &PortalConfig {
                callback_origins: callback_origins.clone(),
                ..PortalConfig::default()
            },
        )?;
        let share_base_url = self.share_base_url.trim().to_owned();
        check_url(
            "--share-base-url",
            "PLANSHARE_SHARE_BASE_URL",
            &PortalConfig {
                share_base_url: share_base_url.clone(),
                ..PortalConfig::default()
            },
        )?;
        Ok(Settings {
            addr,
            // `enabled` (default true) means nothing here.
            portal: PortalConfig {
                paste_api_url,
                allowed_paste_apis,
                share_base_url,
                callback_origins,
                ..PortalConfig::default()
            },
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn options() -> Options {
        Options {
            addr: DEFAULT_ADDR.into(),
            paste_api_url: UPSTREAM_PASTE_API.into(),
            allowed_paste_apis: String::new(),
            callback_origins: String::new(),
            share_base_url: String::new(),
        }
    }

    #[test]
    fn defaults_are_valid() {
        let settings = options().validate().unwrap();
        assert_eq!(settings.addr.port(), 19434);
        assert_eq!(settings.portal.paste_api_url, UPSTREAM_PASTE_API);
        assert!(settings.portal.allowed_paste_apis.is_empty());
    }

    #[test]
    fn allowed_apis_are_split_on_commas_and_spaces() {
        let settings = Options {
            allowed_paste_apis: " https://a.example/, http://127.0.0.1:19433 ,,https://b.example"
                .into(),
            ..options()
        }
        .validate()
        .unwrap();
        assert_eq!(
            settings.portal.allowed_paste_apis,
            [
                "https://a.example",
                "http://127.0.0.1:19433",
                "https://b.example"
            ]
        );
    }

    #[test]
    fn errors_name_the_flag_and_the_variable() {
        let cases = [
            (
                Options {
                    addr: "localhost".into(),
                    ..options()
                },
                "PLANSHARE_PORTAL_ADDR",
            ),
            (
                Options {
                    paste_api_url: "javascript:alert(1)".into(),
                    ..options()
                },
                "PLANSHARE_PORTAL_PASTE_API_URL",
            ),
            (
                Options {
                    paste_api_url: " ".into(),
                    ..options()
                },
                "PLANSHARE_PORTAL_PASTE_API_URL",
            ),
            (
                Options {
                    allowed_paste_apis: "https://ok.example,ftp://x".into(),
                    ..options()
                },
                "PLANSHARE_PORTAL_ALLOWED_PASTE_APIS",
            ),
            (
                Options {
                    share_base_url: "share.example".into(),
                    ..options()
                },
                "PLANSHARE_SHARE_BASE_URL",
            ),
        ];
        for (options, var) in cases {
            let error = format!("{:#}", options.validate().unwrap_err());
            assert!(error.contains(var), "{error}");
            assert!(error.contains("--"), "{error}");
        }
    }
}
