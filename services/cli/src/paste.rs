//! `planshare paste put|get|delete`: the paste API without any encoding, for
//! scripts. `put` prints the create response as JSON (id, deleteToken,
//! expiresAt); `get` prints the stored data; `delete` prints nothing. With
//! `PLANSHARE_API_KEY` set, all three act for the key's tenant.

use std::io::Read as _;

use clap::{Args, Subcommand};

use crate::client::PasteClient;
use crate::env::Env;
use crate::error::CliError;
use crate::terminal::json_line;

/// Raw paste operations.
#[derive(Subcommand)]
pub enum PasteCommand {
    /// Store data (a file, or standard input with `-`) and print the create response.
    Put {
        /// File whose contents to store; `-` reads standard input.
        #[arg(default_value = "-")]
        file: String,
        #[command(flatten)]
        api: ApiArgs,
    },
    /// Print the data stored under an id.
    Get {
        /// The paste id.
        id: String,
        #[command(flatten)]
        api: ApiArgs,
    },
    /// Delete a paste with its delete token (or, without one, with
    /// `PLANSHARE_API_KEY` of the paste's tenant).
    Delete {
        /// The paste id.
        id: String,
        /// The deleteToken returned when the paste was created.
        // A token is base64url: one in 64 begins with `-`, which is a value here.
        #[arg(
            long,
            env = "PLANSHARE_DELETE_TOKEN",
            hide_env_values = true,
            allow_hyphen_values = true
        )]
        token: Option<String>,
        #[command(flatten)]
        api: ApiArgs,
    },
}

/// Where the paste API is.
#[derive(Args, Clone, Default)]
pub struct ApiArgs {
    /// Paste API base URL [default: $PLANNOTATOR_PASTE_URL, else upstream's hosted service].
    #[arg(long)]
    pub paste_url: Option<String>,
    /// Allow plain http:// to hosts other than this machine (also
    /// PLANSHARE_INSECURE=1).
    #[arg(long)]
    pub insecure: bool,
}

impl ApiArgs {
    /// The configured paste API: `--paste-url`, else `PLANNOTATOR_PASTE_URL`,
    /// else upstream's hosted service. `share` stores there, and only it is
    /// sent `PLANSHARE_API_KEY`.
    pub fn configured(&self, env: &Env) -> String {
        self.paste_url.clone().unwrap_or_else(|| env.paste_url())
    }

    /// The client for the configured API, with the API key if there is one.
    pub fn client(&self, env: &Env) -> Result<PasteClient, CliError> {
        self.client_for(&self.configured(env), env)
    }

    /// A client for `base`; it authenticates with the API key only when
    /// `base` is the configured API (same scheme, host and port).
    pub fn client_for(&self, base: &str, env: &Env) -> Result<PasteClient, CliError> {
        Ok(PasteClient::new(base, self.insecure || env.insecure())?
            .with_api_key_for(env.api_key(), &self.configured(env)))
    }
}

/// Runs a paste command; returns what to print on stdout.
pub async fn run(command: PasteCommand, env: &Env) -> Result<String, CliError> {
    match command {
        PasteCommand::Put { file, api } => {
            let data = read_input(&file)?;
            let created = api
                .client(env)?
                .create(data.trim_end_matches(['\n', '\r']))
                .await?;
            json_line(&created)
        }
        PasteCommand::Get { id, api } => Ok(api.client(env)?.get(&id).await? + "\n"),
        PasteCommand::Delete { id, token, api } => {
            api.client(env)?.delete(&id, token.as_deref()).await?;
            Ok(String::new())
        }
    }
}

/// Reads a file, or standard input for `-`.
pub fn read_input(file: &str) -> Result<String, CliError> {
    let mut text = String::new();
    let result = if file == "-" {
        std::io::stdin().read_to_string(&mut text).map(|_| ())
    } else {
        std::fs::read_to_string(file).map(|t| text = t)
    };
    result.map_err(|e| {
        CliError::Input(format!(
            "cannot read {}: {e}",
            if file == "-" { "standard input" } else { file }
        ))
    })?;
    Ok(text)
}
