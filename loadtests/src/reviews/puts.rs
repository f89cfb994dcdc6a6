//! Comment PUT throughput against paste creates: the same closed-loop
//! generator, the same concurrency and data size, on the same server, the
//! two interleaved round after round. The PUTs are spread over reviews ×
//! links; each worker writes as its own writers in turn, each PUT
//! replacing that writer's set.

use super::api::Api;
use anyhow::{Context as _, bail};
use hyper::header::HeaderValue;
use loadtests::generator::{self, CommentWriter, Phase, PhaseResult, Workload};
use loadtests::live::PutFigures;
use loadtests::process::ServerProcess;
use std::sync::Arc;
use std::time::Duration;

/// What the throughput measurement is asked to do.
pub(crate) struct PutPlan {
    pub(crate) reviews: usize,
    pub(crate) links_per_review: usize,
    pub(crate) concurrency: usize,
    pub(crate) size: usize,
    pub(crate) warmup: Duration,
    pub(crate) duration: Duration,
    pub(crate) rounds: usize,
}

fn line(label: &str, result: &PhaseResult) {
    eprintln!(
        "{label}: {:.0} req/s, p99 {:.2} ms, CPU {} µs/req, {} errors",
        result.requests_per_second(),
        result.latency_ms(0.99),
        result
            .cpu_us_per_request()
            .map_or_else(|| "–".to_owned(), |v| format!("{v:.0}")),
        result.errors
    );
    if !result.error_kinds.is_empty() {
        eprintln!("  errors: {:?}", result.error_kinds);
    }
}

pub(crate) async fn measure(
    server: &mut ServerProcess,
    store: &str,
    plan: &PutPlan,
) -> anyhow::Result<PutFigures> {
    let addr = server.addr();
    eprintln!(
        "puts: {} reviews × {} links ...",
        plan.reviews, plan.links_per_review
    );
    let mut api = Api::connect(addr).await?;
    let mut writers = Vec::with_capacity(plan.reviews * plan.links_per_review);
    for _ in 0..plan.reviews {
        let review = api.create_review(plan.size).await?;
        for _ in 0..plan.links_per_review {
            let token = api.mint_link(&review).await?;
            writers.push(CommentWriter {
                path: review.path("/comments")?,
                authorization: HeaderValue::from_str(&format!("Bearer {token}"))?,
                name: format!("w{}", writers.len()),
            });
        }
    }
    drop(api);
    if writers.len() < plan.concurrency {
        bail!(
            "{} writers for concurrency {}: raise --put-reviews or --links-per-review",
            writers.len(),
            plan.concurrency
        );
    }
    let comments = Workload::Comments {
        writers: Arc::new(writers),
        size: plan.size,
    };
    let create = Workload::Create { size: plan.size };
    let mut figures = PutFigures {
        store: store.to_owned(),
        concurrency: plan.concurrency,
        size: plan.size,
        writers: plan.reviews * plan.links_per_review,
        reviews: plan.reviews,
        create_rps: Vec::new(),
        comment_rps: Vec::new(),
        create_cpu_us: Vec::new(),
        comment_cpu_us: Vec::new(),
        create_p99_ms: Vec::new(),
        comment_p99_ms: Vec::new(),
        errors: 0,
    };
    for round in 1..=plan.rounds {
        // Odd rounds create first, even rounds PUT first.
        let order: [bool; 2] = if round % 2 == 1 {
            [true, false]
        } else {
            [false, true]
        };
        for is_create in order {
            server.ensure_running()?;
            let phase = Phase {
                addr,
                concurrency: plan.concurrency,
                warmup: plan.warmup,
                duration: plan.duration,
                pid: Some(server.pid()),
                headers: Arc::new(Vec::new()),
            };
            let (label, workload) = if is_create {
                ("create", &create)
            } else {
                ("comment PUT", &comments)
            };
            let result = generator::run_phase(&phase, workload)
                .await
                .with_context(|| format!("{label} phase on {}", server.name()))?;
            line(&format!("[round {round}] {label} {store}"), &result);
            figures.errors += result.errors;
            let (rps, cpu, p99) = if is_create {
                (
                    &mut figures.create_rps,
                    &mut figures.create_cpu_us,
                    &mut figures.create_p99_ms,
                )
            } else {
                (
                    &mut figures.comment_rps,
                    &mut figures.comment_cpu_us,
                    &mut figures.comment_p99_ms,
                )
            };
            rps.push(result.requests_per_second());
            cpu.push(result.cpu_us_per_request().unwrap_or(f64::NAN));
            p99.push(result.latency_ms(0.99));
        }
    }
    Ok(figures)
}
