//! `tenancy`: what tenant resolution costs. Two planshare servers on the fs
//! store — one as configured normally, one with `PLANSHARE_TENANCY_BYPASS=1`
//! (every request served as the default tenant, keys and hosts not looked
//! at) — measured interleaved, round after round:
//!
//! - `anonymous`: upstream's requests (`POST /api/paste`, `GET /api/paste/{id}`)
//!   on the default tenant, tenancy on vs bypassed;
//! - `api key`: the same requests with `Authorization: Bearer pst_…` of a
//!   tenant (its key checked from the cache; its creates are also indexed and
//!   quota-accounted in the SQLite catalog, which the bypassed server skips).
//!
//! The report gives medians across rounds and each ratio to the bypassed run.

use crate::DEFAULT_SERVER_BIN;
use crate::run::{READY_POLL, READY_TIMEOUT, check_server_bin, planshare_command, temp_dir};
use anyhow::{Context as _, bail};
use clap::Args;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HeaderName, HeaderValue};
use hyper::{Method, StatusCode, Uri};
use loadtests::backend::StoreConfig;
use loadtests::client::Conn;
use loadtests::generator::{self, Phase, Workload};
use loadtests::process::{ServerProcess, free_port};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

const ADMIN_TOKEN: &str = "loadtest-admin-token";
const SEEDED: usize = 200;

#[derive(Debug, Args)]
pub(crate) struct TenancyArgs {
    /// The planshare server binary.
    #[arg(long, default_value = DEFAULT_SERVER_BIN)]
    server_bin: PathBuf,
    /// Measured seconds per phase.
    #[arg(long, default_value_t = 5.0)]
    duration: f64,
    /// Unrecorded warm-up seconds before each phase.
    #[arg(long, default_value_t = 1.0)]
    warmup: f64,
    /// Connections per phase.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// Characters of base64url `data` per paste.
    #[arg(long, default_value_t = 8192)]
    size: usize,
    /// Rounds; each figure is the median across rounds.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
}

/// One measured configuration.
struct Mode {
    label: &'static str,
    server: usize,
    headers: Arc<Vec<(HeaderName, HeaderValue)>>,
    fetch: Workload,
}

pub(crate) async fn tenancy(args: TenancyArgs) -> anyhow::Result<()> {
    check_server_bin(&args.server_bin)?;
    let work = temp_dir()?;
    let mut servers = Vec::new();
    for (name, bypass) in [
        ("planshare (tenancy on)", false),
        ("planshare (bypassed)", true),
    ] {
        let port = free_port()?;
        let dir = work.path().join(if bypass { "bypass" } else { "on" });
        let mut command = planshare_command(&args.server_bin, port, &dir, &StoreConfig::Fs)?;
        command.env("PLANSHARE_ADMIN_TOKEN", ADMIN_TOKEN);
        if bypass {
            command.env("PLANSHARE_TENANCY_BYPASS", "1");
        }
        let mut server = ServerProcess::spawn(name, command, port)?;
        server.wait_ready(READY_TIMEOUT, READY_POLL).await?;
        servers.push(server);
    }
    let key = tenant_key(servers[0].addr()).await?;
    let keyed: Arc<Vec<(HeaderName, HeaderValue)>> = Arc::new(vec![(
        AUTHORIZATION,
        HeaderValue::from_str(&format!("Bearer {key}"))?,
    )]);
    let none = Arc::new(Vec::new());

    eprintln!("seeding {SEEDED} pastes per mode ...");
    let quiet = |_: usize, _: usize| {};
    let mut modes = Vec::new();
    for (label, server, headers) in [
        ("anonymous, bypassed", 1, &none),
        ("anonymous, tenancy on", 0, &none),
        ("api key, bypassed", 1, &keyed),
        ("api key, tenancy on", 0, &keyed),
    ] {
        let ids = generator::seed_with(
            servers[server].addr(),
            args.size,
            SEEDED,
            args.concurrency.min(8),
            Arc::clone(headers),
            quiet,
        )
        .await
        .with_context(|| format!("seeding {label}"))?;
        modes.push(Mode {
            label,
            server,
            headers: Arc::clone(headers),
            fetch: Workload::fetch(&ids)?,
        });
    }

    let duration = Duration::try_from_secs_f64(args.duration).context("--duration")?;
    let warmup = Duration::try_from_secs_f64(args.warmup).context("--warmup")?;
    // (scenario, mode) -> req/s per round, CPU µs per request per round.
    let mut rps: Vec<Vec<f64>> = vec![Vec::new(); modes.len() * 2];
    let mut cpu: Vec<Vec<f64>> = vec![Vec::new(); modes.len() * 2];
    let total = args.rounds * modes.len() * 2;
    let mut done = 0;
    for _ in 0..args.rounds {
        for (s, scenario) in ["create", "fetch"].into_iter().enumerate() {
            for (m, mode) in modes.iter().enumerate() {
                done += 1;
                let server = &mut servers[mode.server];
                server.ensure_running()?;
                eprint!("[{done}/{total}] {scenario} {} ... ", mode.label);
                let workload = match scenario {
                    "create" => Workload::Create { size: args.size },
                    _ => mode.fetch.clone(),
                };
                let phase = Phase {
                    addr: server.addr(),
                    concurrency: args.concurrency,
                    warmup,
                    duration,
                    pid: Some(server.pid()),
                    headers: Arc::clone(&mode.headers),
                };
                let result = generator::run_phase(&phase, &workload).await?;
                if result.errors > 0 {
                    bail!(
                        "{scenario} {}: {} errors: {:?}",
                        mode.label,
                        result.errors,
                        result.error_kinds
                    );
                }
                let per_request = result.cpu_us_per_request().unwrap_or(f64::NAN);
                eprintln!(
                    "{:.0} req/s, {per_request:.0} µs CPU/req",
                    result.requests_per_second()
                );
                rps[s * modes.len() + m].push(result.requests_per_second());
                cpu[s * modes.len() + m].push(per_request);
            }
        }
    }
    drop(servers);

    println!(
        "| scenario | requests | req/s (median) | vs bypassed | CPU µs/req | vs bypassed |\n|---|---|---|---|---|---|"
    );
    for (s, scenario) in ["create", "fetch"].into_iter().enumerate() {
        for (m, mode) in modes.iter().enumerate() {
            let i = s * modes.len() + m;
            // Modes come in pairs: bypassed, then tenancy on.
            let base = s * modes.len() + (m / 2) * 2;
            let (r, c) = (median(&rps[i]), median(&cpu[i]));
            let (rb, cb) = (median(&rps[base]), median(&cpu[base]));
            println!(
                "| {scenario} {} B | {} | {r:.0} | {:.3} | {c:.0} | {:.3} |",
                args.size,
                mode.label,
                r / rb,
                c / cb
            );
        }
    }
    println!(
        "\n{} rounds × {} s (+{} s warm-up), concurrency {}, fs store; `api key, bypassed` sends the key \
         to the bypassed server, which ignores it.",
        args.rounds, args.duration, args.warmup, args.concurrency
    );
    drop(work);
    Ok(())
}

fn median(values: &[f64]) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Creates a tenant with generous limits through the admin API and returns
/// a key of it.
async fn tenant_key(addr: std::net::SocketAddr) -> anyhow::Result<String> {
    let mut conn = Conn::connect(addr).await?;
    let admin = |body: &str| {
        (
            vec![
                (
                    AUTHORIZATION,
                    HeaderValue::from_static("Bearer loadtest-admin-token"),
                ),
                (CONTENT_TYPE, HeaderValue::from_static("application/json")),
            ],
            bytes::Bytes::from(body.to_owned()),
        )
    };
    let (headers, body) = admin(
        r#"{"name":"Load","namespace":"load","settings":{"rate_per_sec":1000000,"rate_burst":1000000,"max_paste_size":5242880,"id_length":16}}"#,
    );
    let reply = conn
        .request(
            Method::POST,
            Uri::from_static("/admin/v1/tenants"),
            &headers,
            body,
        )
        .await?;
    if reply.status != StatusCode::CREATED {
        bail!("creating the tenant: HTTP {}", reply.status);
    }
    let tenant: serde_json::Value = serde_json::from_slice(&reply.body)?;
    let id = tenant["id"].as_str().context("tenant id")?;
    let (headers, body) = admin(r#"{"name":"load"}"#);
    let reply = conn
        .request(
            Method::POST,
            format!("/admin/v1/tenants/{id}/keys").parse()?,
            &headers,
            body,
        )
        .await?;
    if reply.status != StatusCode::CREATED {
        bail!("creating the key: HTTP {}", reply.status);
    }
    let key: serde_json::Value = serde_json::from_slice(&reply.body)?;
    Ok(key["key"].as_str().context("key")?.to_owned())
}
