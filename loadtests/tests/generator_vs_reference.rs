//! The load generator against the in-process reference server: both
//! scenarios complete without errors, seeding returns the reference id, and
//! latencies and CPU figures are filled in.

use loadtests::generator::{self, Phase, Workload};
use loadtests::reference::{self, REFERENCE_ID};
use std::time::Duration;
use tokio::net::TcpListener;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_and_fetch_against_the_reference() -> anyhow::Result<()> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let server = tokio::spawn(reference::serve(listener, 1000));

    let ids = generator::seed(addr, 1000, 20, 4, |_, _| {}).await?;
    assert_eq!(ids.len(), 20);
    assert!(ids.iter().all(|id| id == REFERENCE_ID));

    let phase = Phase {
        addr,
        concurrency: 4,
        warmup: Duration::from_millis(100),
        duration: Duration::from_millis(300),
        pid: Some(std::process::id()),
        headers: std::sync::Arc::new(Vec::new()),
    };
    for workload in [Workload::Create { size: 1000 }, Workload::fetch(&ids)?] {
        let result = generator::run_phase(&phase, &workload).await?;
        assert_eq!(result.errors, 0, "{:?}", result.error_kinds);
        assert!(result.ok > 0);
        assert!(result.requests_per_second() > 0.0);
        assert!(result.latency_ms(0.99) >= result.latency_ms(0.5));
        assert!(result.cpu_us.is_some());
    }
    server.abort();
    Ok(())
}

#[tokio::test]
async fn a_dead_server_counts_errors_instead_of_failing() -> anyhow::Result<()> {
    // Bind and drop: nothing listens on this port any more.
    let addr = TcpListener::bind("127.0.0.1:0").await?.local_addr()?;
    let phase = Phase {
        addr,
        concurrency: 2,
        warmup: Duration::ZERO,
        duration: Duration::from_millis(100),
        pid: None,
        headers: std::sync::Arc::new(Vec::new()),
    };
    let result = generator::run_phase(&phase, &Workload::Create { size: 10 }).await?;
    assert_eq!(result.ok, 0);
    assert!(result.errors > 0);
    assert!(result.error_kinds.keys().all(|k| k.starts_with("connect")));
    Ok(())
}
