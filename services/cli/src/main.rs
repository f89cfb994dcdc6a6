//! `planshare`: make share links from a plan and its annotations (`share`),
//! read them back (`open`), run live reviews (`review`), serve them to
//! agents over MCP (`mcp`), reach the paste API directly (`paste`), and
//! administer a planshare server's tenants and keys (`admin`).
//!
//! This binary never links the server stack: it uses `share-codec` and
//! `plan-doc` for the formats, `api-types` for the wire bodies, and reqwest.
//! Output contract: results go to stdout, messages to stderr, and every
//! failure exits with its own code (see `error.rs`).

mod admin;
mod annotations;
mod client;
mod discovery;
mod env;
mod error;
mod hook;
mod mcp;
mod open;
mod paste;
mod review;
mod share;
mod terminal;

use std::io::Write as _;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::env::Env;
use crate::error::CliError;

/// Share plan reviews as links, and read them back.
#[derive(Parser)]
#[command(name = "planshare", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Make a link from a plan (and annotations); prints the link.
    Share(share::ShareArgs),
    /// Read any share link back: the feedback, the plan, or everything as JSON.
    Open(open::OpenArgs),
    /// Store, read or delete raw pastes (for scripts).
    #[command(subcommand)]
    Paste(paste::PasteCommand),
    /// Administer a planshare server: tenants, API keys, usage (admin API).
    Admin(admin::AdminCli),
    /// Live reviews: start, push versions, manage links, watch, decide.
    #[command(subcommand)]
    Review(review::ReviewCommand),
    /// Hooks for coding agents: `hook claude-code` sends Claude Code's plans
    /// to a review and answers with the decision.
    #[command(subcommand)]
    Hook(hook::HookCommand),
    /// Serve the review loop to an agent over MCP (stdio): start_review,
    /// push_version, wait_for_decision, list_threads, reply, resolve.
    Mcp(mcp::McpArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let env = Env::from_process();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return fail(&CliError::Output(format!("cannot start: {e}"))),
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Share(args) => share::run(args, &env).await,
            Command::Open(args) => match args.review_link() {
                Some((link, format, api)) => review::open(link, format, api, &env).await,
                None => open::run(args, &env).await,
            },
            Command::Paste(command) => paste::run(command, &env).await,
            Command::Admin(cli) => admin::run(cli, &env).await,
            Command::Review(command) => review::run(command, &env).await,
            Command::Hook(command) => hook::run(command, &env).await,
            Command::Mcp(args) => mcp::run(args, &env).await,
        }
    });
    match result.and_then(|output| write_stdout(&output)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => fail(&error),
    }
}

fn write_stdout(text: &str) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| CliError::Output(e.to_string()))
}

fn fail(error: &CliError) -> ExitCode {
    let _ = writeln!(std::io::stderr(), "planshare: {error}");
    ExitCode::from(error.exit_code())
}
