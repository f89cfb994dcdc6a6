//! `planshare-loadtest`: measures a built planshare server against a *floor*
//! reference server in the same run, on loopback, and reports ratios.
//!
//! Subcommands: `reference` (serve the floor server), `run` (the throughput,
//! latency and CPU comparison), `startup` (start-up time with many stored
//! pastes), `tenancy` (the cost of tenant resolution), `portal` (the
//! share portal's time to highlights in Chromium), `layouts` (the kernel
//! cost of a durable paste in different on-disk layouts), `attack` (the
//! slow-body and slow-reader attacks) and `reviews` (live reviews: idle
//! event streams, fan-out latency, comment PUTs). See `loadtests/README.md` for usage and the meaning of the figures;
//! the building blocks live in the `loadtests` library (`src/lib.rs`).

// A command-line report is this program's output: printing to stdout (the
// report) and stderr (progress, warnings) is its job.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod attack;
mod layouts;
mod portal;
mod reviews;
mod run;
mod startup;
mod tenancy;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};
use std::future::Future;
use std::net::Ipv4Addr;

/// Where `run` and `startup` look for the server unless told otherwise
/// (relative to the workspace root, where the commands are meant to be run).
const DEFAULT_SERVER_BIN: &str = "target/release/planshare-server";

/// Load runner for planshare: compares it with a minimal reference server.
#[derive(Debug, Parser)]
#[command(name = "planshare-loadtest", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the floor reference server on 127.0.0.1 (used by `run`).
    Reference(ReferenceArgs),
    /// Measure throughput, latency and CPU of planshare against the reference.
    Run(run::RunArgs),
    /// Measure planshare's start-up time with N stored pastes vs none.
    Startup(startup::StartupArgs),
    /// Measure what tenant resolution costs (tenancy on vs bypassed).
    Tenancy(tenancy::TenancyArgs),
    /// Time the share portal in Chromium: navigation → all highlights placed, and → painted.
    Portal(portal::PortalArgs),
    /// Kernel CPU of one durable paste in the fs store's on-disk layout and
    /// in alternatives (no server involved).
    Layouts(layouts::LayoutsArgs),
    /// The slow-body and slow-reader attacks at full size, with what a
    /// normal client and the probes see meanwhile.
    Attack(attack::AttackArgs),
    /// Live reviews: idle event streams (memory, CPU), the fan-out latency
    /// of a comment, and comment PUTs against paste creates.
    Reviews(reviews::ReviewsArgs),
}

#[derive(Debug, Args)]
struct ReferenceArgs {
    /// Port to listen on (127.0.0.1 only).
    #[arg(long)]
    port: u16,
    /// Length of the `data` string in every answer, in characters (= bytes).
    #[arg(long, default_value_t = 8192)]
    size: usize,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Reference(args) => {
            let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, args.port))
                .await
                .with_context(|| format!("binding 127.0.0.1:{}", args.port))?;
            loadtests::reference::serve(listener, args.size).await
        }
        Command::Run(args) => until_ctrl_c(run::run(args)).await,
        Command::Startup(args) => until_ctrl_c(startup::startup(args)).await,
        Command::Tenancy(args) => until_ctrl_c(tenancy::tenancy(args)).await,
        Command::Portal(args) => until_ctrl_c(portal::portal(args)).await,
        Command::Layouts(args) => layouts::layouts(args).await,
        Command::Attack(args) => until_ctrl_c(attack::attack(args)).await,
        Command::Reviews(args) => until_ctrl_c(reviews::reviews(args)).await,
    }
}

/// Runs `work` unless Ctrl-C comes first, in which case `work` is dropped —
/// which drops its server guards and so kills the servers it started.
async fn until_ctrl_c(work: impl Future<Output = anyhow::Result<()>>) -> anyhow::Result<()> {
    tokio::select! {
        result = work => result,
        signal = tokio::signal::ctrl_c() => {
            signal.context("listening for Ctrl-C")?;
            anyhow::bail!("interrupted; the servers started by this run were stopped")
        }
    }
}
