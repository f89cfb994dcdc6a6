//! Fan-out latency: one review with S subscribers, K comments PUT by a
//! reviewer, paced; for each comment and subscriber, the time from the
//! PUT's `200` arriving at the runner to the `comments` event arriving on
//! that subscriber's stream. Across replicas the review lives on replica A
//! (the PUTs go there) and the subscribers follow it on replica B.

use super::api::Api;
use super::streams::{Counters, Follow, open_all};
use anyhow::Context as _;
use loadtests::generator::comment_body;
use loadtests::live::{FanoutFigures, Latency};
use loadtests::payload::{CreateBodies, Rng};
use loadtests::stats::median;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// How long the last events may take to arrive after the last PUT.
const DRAIN: Duration = Duration::from_secs(5);

/// What one fan-out measurement is asked to do.
pub(crate) struct FanoutPlan {
    pub(crate) subscribers: usize,
    pub(crate) comments: usize,
    pub(crate) pace: Duration,
    pub(crate) size: usize,
}

/// Signed milliseconds from `from` to `to` (negative when `to` came first).
fn signed_ms(from: Instant, to: Instant) -> f64 {
    match to.checked_duration_since(from) {
        Some(d) => d.as_secs_f64() * 1000.0,
        None => -(from.duration_since(to).as_secs_f64() * 1000.0),
    }
}

/// The latencies of every (comment, subscriber) pair: the n-th `comments`
/// event a subscriber saw belongs to the n-th PUT (they are sequential).
/// Returns the samples and how many pairs had no event.
pub(crate) fn pair_latencies(answers: &[Instant], arrivals: &[Vec<Instant>]) -> (Vec<f64>, usize) {
    let mut samples = Vec::with_capacity(answers.len() * arrivals.len());
    let mut missing = 0;
    for seen in arrivals {
        for (i, &answered) in answers.iter().enumerate() {
            match seen.get(i) {
                Some(&arrived) => samples.push(signed_ms(answered, arrived)),
                None => missing += 1,
            }
        }
    }
    (samples, missing)
}

pub(crate) async fn measure(
    put_addr: SocketAddr,
    sub_addr: SocketAddr,
    store: &str,
    topology: &str,
    plan: &FanoutPlan,
) -> anyhow::Result<FanoutFigures> {
    let mut api = Api::connect(put_addr).await?;
    let review = api.create_review(plan.size).await?;
    let reviewer = api.mint_link(&review).await?;
    let specs: Vec<Follow> = (0..plan.subscribers)
        .map(|_| Follow::events(sub_addr, &review.id, &review.owner, true))
        .collect();
    let counters = Arc::new(Counters::default());
    let (stop, stopped) = watch::channel(false);
    let mut tasks = open_all(specs, &counters, &stopped, Duration::from_secs(120), None)
        .await
        .with_context(|| format!("opening {} subscribers", plan.subscribers))?;
    // Let the replay of the review's first events reach every subscriber.
    tokio::time::sleep(Duration::from_millis(500)).await;

    let mut bodies = CreateBodies::new(plan.size, Rng::from_entropy(0xfa_0e));
    let mut answers = Vec::with_capacity(plan.comments);
    let mut sends = Vec::with_capacity(plan.comments);
    let mut put_ms = Vec::with_capacity(plan.comments);
    let mut next = tokio::time::Instant::now();
    for _ in 0..plan.comments {
        tokio::time::sleep_until(next).await;
        next += plan.pace;
        let body = comment_body("reviewer", &bodies.next_body());
        let sent = Instant::now();
        api.put_comments(&review, &reviewer, body).await?;
        let answered = Instant::now();
        answers.push(answered);
        sends.push(sent);
        put_ms.push((answered - sent).as_secs_f64() * 1000.0);
    }
    let expected = (plan.comments * plan.subscribers) as u64;
    let drain_until = Instant::now() + DRAIN;
    while counters.comments.load(Ordering::Relaxed) < expected && Instant::now() < drain_until {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let _ = stop.send(true);
    drop(stop);
    let mut arrivals = Vec::with_capacity(plan.subscribers);
    while let Some(joined) = tasks.join_next().await {
        arrivals.push(joined.context("a subscriber panicked")?);
    }
    // Let the server give the streams' places back before the next step.
    if Api::connect(sub_addr)
        .await?
        .wait_streams_released(Duration::from_secs(60))
        .await?
        .is_none()
    {
        eprintln!("warning: {sub_addr} still counts open streams 60 s after they closed");
    }
    let (samples, missing) = pair_latencies(&answers, &arrivals);
    let (from_send, _) = pair_latencies(&sends, &arrivals);
    Ok(FanoutFigures {
        store: store.to_owned(),
        topology: topology.to_owned(),
        subscribers: plan.subscribers,
        comments: plan.comments,
        early: samples.iter().filter(|&&ms| ms < 0.0).count(),
        latency: Latency::of(&samples),
        from_send: Latency::of(&from_send),
        missing,
        put_p50_ms: median(&put_ms),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_match_the_nth_event_to_the_nth_put() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let answers = [at(100), at(200)];
        let arrivals = vec![
            vec![at(103), at(210)],
            vec![at(99)], // one early, one missing
        ];
        let (samples, missing) = pair_latencies(&answers, &arrivals);
        assert_eq!(missing, 1);
        let rounded: Vec<i64> = samples.iter().map(|ms| ms.round() as i64).collect();
        assert_eq!(rounded, [3, 10, -1]);
    }
}
