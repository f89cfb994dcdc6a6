//! What the CLI takes from its environment, read once into [`Env`] so the
//! rest of the program (and its tests) never reads process state.

use std::collections::HashMap;
use std::path::PathBuf;

/// The portal that opens links when `PLANNOTATOR_SHARE_URL` is unset.
pub const DEFAULT_SHARE_URL: &str = "https://share.plannotator.ai";
/// The paste API when `PLANNOTATOR_PASTE_URL` is unset (upstream's hosted one).
pub const DEFAULT_PASTE_URL: &str = "https://plannotator-paste.plannotator.workers.dev";

/// The environment as the CLI sees it.
#[derive(Debug, Clone, Default)]
pub struct Env {
    vars: HashMap<String, String>,
    home: Option<PathBuf>,
}

impl Env {
    /// The process environment.
    pub fn from_process() -> Self {
        Env {
            vars: std::env::vars().collect(),
            home: dirs::home_dir(),
        }
    }

    /// A fixed environment (tests).
    #[cfg(test)]
    pub fn from_vars(vars: &[(&str, &str)], home: Option<PathBuf>) -> Self {
        Env {
            vars: vars
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            home,
        }
    }

    /// The home directory, if there is one.
    pub fn home(&self) -> Option<&std::path::Path> {
        self.home.as_deref()
    }

    /// `$XDG_DATA_HOME`, when it names an absolute path (the XDG rule: a
    /// relative one is ignored).
    pub fn data_home(&self) -> Option<PathBuf> {
        self.var("XDG_DATA_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    }

    fn var(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// Portal base for new links, when `PLANNOTATOR_SHARE_URL` names one
    /// (else the paste server's discovery decides, see `discovery.rs`).
    pub fn share_url(&self) -> Option<String> {
        self.var("PLANNOTATOR_SHARE_URL").map(str::to_owned)
    }

    /// Whether plain `http://` to hosts other than this machine is allowed
    /// for every command (`PLANSHARE_INSECURE=1` or `true`), as `--insecure`
    /// allows it for one.
    pub fn insecure(&self) -> bool {
        self.var("PLANSHARE_INSECURE")
            .is_some_and(|v| v.trim() == "1" || v.trim().eq_ignore_ascii_case("true"))
    }

    /// A planshare tenant's API key (`PLANSHARE_API_KEY`): creates are then
    /// stored for that tenant (its limits, quota and listing).
    pub fn api_key(&self) -> Option<String> {
        self.var("PLANSHARE_API_KEY").map(|k| k.trim().to_owned())
    }

    /// Paste API for short links (`PLANNOTATOR_PASTE_URL`).
    pub fn paste_url(&self) -> String {
        self.var("PLANNOTATOR_PASTE_URL")
            .unwrap_or(DEFAULT_PASTE_URL)
            .to_owned()
    }

    /// Why sharing is disabled, if it is: `PLANNOTATOR_SHARE=disabled`, else
    /// `{"share":"disabled"}` in `~/.plannotator/config.json` (the variable wins).
    pub fn share_disabled(&self) -> Option<&'static str> {
        match self.var("PLANNOTATOR_SHARE") {
            Some(v) if v.eq_ignore_ascii_case("disabled") => {
                return Some("PLANNOTATOR_SHARE=disabled");
            }
            Some(_) => return None,
            None => {}
        }
        let path = self.home.as_ref()?.join(".plannotator").join("config.json");
        let text = std::fs::read_to_string(path).ok()?;
        let config: serde_json::Value = serde_json::from_str(&text).ok()?;
        (config.get("share").and_then(|v| v.as_str()) == Some("disabled"))
            .then_some("\"share\": \"disabled\" in ~/.plannotator/config.json")
    }

    /// Whether this is a remote session (SSH, a devcontainer, or
    /// `PLANNOTATOR_REMOTE=1`), where the person opens links on another machine.
    pub fn is_remote(&self) -> bool {
        if let Some(v) = self.var("PLANNOTATOR_REMOTE") {
            return v == "1" || v.eq_ignore_ascii_case("true");
        }
        [
            "SSH_TTY",
            "SSH_CONNECTION",
            "SSH_CLIENT",
            "REMOTE_CONTAINERS",
            "CODESPACES",
        ]
        .iter()
        .any(|name| self.var(name).is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        let env = Env::from_vars(&[], None);
        assert_eq!(env.share_url(), None);
        assert_eq!(env.paste_url(), DEFAULT_PASTE_URL);
        assert!(!env.insecure());
        let env = Env::from_vars(
            &[
                ("PLANNOTATOR_SHARE_URL", "https://s.example"),
                ("PLANNOTATOR_PASTE_URL", "http://127.0.0.1:19433"),
            ],
            None,
        );
        assert_eq!(env.share_url().as_deref(), Some("https://s.example"));
        assert_eq!(env.paste_url(), "http://127.0.0.1:19433");
    }

    #[test]
    fn insecure_is_one_or_true() {
        for yes in ["1", "true", "TRUE", " 1 "] {
            assert!(
                Env::from_vars(&[("PLANSHARE_INSECURE", yes)], None).insecure(),
                "{yes:?}"
            );
        }
        for no in ["", "0", "false", "yes", "no"] {
            assert!(
                !Env::from_vars(&[("PLANSHARE_INSECURE", no)], None).insecure(),
                "{no:?}"
            );
        }
    }

    #[test]
    fn sharing_can_be_disabled_by_variable_or_config_file() {
        assert!(
            Env::from_vars(&[("PLANNOTATOR_SHARE", "disabled")], None)
                .share_disabled()
                .is_some()
        );
        assert!(
            Env::from_vars(&[("PLANNOTATOR_SHARE", "enabled")], None)
                .share_disabled()
                .is_none()
        );
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(home.path().join(".plannotator")).unwrap();
        std::fs::write(
            home.path().join(".plannotator/config.json"),
            r#"{"share":"disabled"}"#,
        )
        .unwrap();
        let home = Some(home.path().to_path_buf());
        assert!(Env::from_vars(&[], home.clone()).share_disabled().is_some());
        // The variable wins over the file.
        assert!(
            Env::from_vars(&[("PLANNOTATOR_SHARE", "on")], home)
                .share_disabled()
                .is_none()
        );
    }

    #[test]
    fn remote_sessions_are_detected() {
        assert!(!Env::from_vars(&[], None).is_remote());
        assert!(Env::from_vars(&[("PLANNOTATOR_REMOTE", "1")], None).is_remote());
        assert!(Env::from_vars(&[("PLANNOTATOR_REMOTE", "true")], None).is_remote());
        assert!(Env::from_vars(&[("SSH_CONNECTION", "1.2.3.4 5 6.7.8.9 22")], None).is_remote());
        assert!(Env::from_vars(&[("REMOTE_CONTAINERS", "true")], None).is_remote());
        assert!(
            !Env::from_vars(
                &[("PLANNOTATOR_REMOTE", "0"), ("SSH_TTY", "/dev/pts/0")],
                None
            )
            .is_remote()
        );
    }
}
