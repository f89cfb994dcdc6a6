//! A 201 means durable: SIGKILL the real binary while it takes writes, start
//! it again on the same directory, and read back every acknowledged paste.

use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn start(dir: &std::path::Path, port: u16) -> Killed {
    let child = Killed(
        Command::new(env!("CARGO_BIN_EXE_planshare-server"))
            .env_clear()
            .env("PLANSHARE_HOST", "127.0.0.1")
            .env("PLANSHARE_PORT", port.to_string())
            .env("PLANSHARE_DATA_DIR", dir)
            .env("PLANSHARE_LOG", "warn")
            .env("PLANSHARE_RATE_LIMITS", "off")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let client = reqwest::Client::new();
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(20) {
        let probe = client
            .get(format!("http://127.0.0.1:{port}/readyz"))
            .send()
            .await;
        if probe.is_ok_and(|r| r.status() == 200) {
            return child;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("server did not become ready");
}

#[tokio::test]
async fn every_acknowledged_paste_survives_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let port = testkit::free_port();
    let mut server = start(dir.path(), port).await;
    let acknowledged = Arc::new(Mutex::new(Vec::<(String, String)>::new()));
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_millis(1_500);
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let (client, acknowledged) = (client.clone(), acknowledged.clone());
            tokio::spawn(async move {
                let mut n = 0;
                while Instant::now() < deadline + Duration::from_secs(1) {
                    n += 1;
                    let data = format!("w{w}n{n}{}", "Q".repeat(2000));
                    let sent = client
                        .post(format!("http://127.0.0.1:{port}/api/paste"))
                        .body(serde_json::json!({ "data": data }).to_string())
                        .send()
                        .await;
                    let Ok(response) = sent else { break };
                    if response.status() != 201 {
                        break;
                    }
                    let Ok(body) = response.json::<serde_json::Value>().await else {
                        break;
                    };
                    let id = body["id"].as_str().unwrap().to_owned();
                    acknowledged.lock().unwrap().push((id, data));
                }
            })
        })
        .collect();
    tokio::time::sleep_until(deadline.into()).await;
    server.0.kill().unwrap(); // SIGKILL mid-write
    let _ = server.0.wait();
    for writer in writers {
        writer.await.unwrap();
    }
    let acknowledged = acknowledged.lock().unwrap().clone();
    assert!(
        acknowledged.len() > 20,
        "only {} writes before the kill",
        acknowledged.len()
    );

    let _restarted = start(dir.path(), port).await;
    for (id, data) in &acknowledged {
        let response = client
            .get(format!("http://127.0.0.1:{port}/api/paste/{id}"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "acknowledged paste {id} lost");
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(body["data"].as_str().unwrap(), data, "paste {id} changed");
    }
}

/// A review under comment load, SIGKILLed: every acknowledged comment set
/// (or a later one of the same writer) is there after the restart, with its
/// event in the log; streams resume from their last id.
#[tokio::test]
async fn every_acknowledged_review_comment_survives_sigkill_and_streams_resume() {
    use serde_json::{Value, json};

    let dir = tempfile::tempdir().unwrap();
    let port = testkit::free_port();
    let base = format!("http://127.0.0.1:{port}");
    let mut server = start(dir.path(), port).await;
    let client = reqwest::Client::new();
    let created: Value = client
        .post(format!("{base}/api/v1/reviews"))
        .json(&json!({"version": {"data": "plan-v1", "digest": "d".repeat(43)}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["id"].as_str().unwrap().to_owned();
    let owner = created["ownerToken"].as_str().unwrap().to_owned();
    let review = format!("{base}/api/v1/reviews/{id}");
    let mut writers = Vec::new();
    for _ in 0..4 {
        let link: Value = client
            .post(format!("{review}/links"))
            .bearer_auth(&owner)
            .json(&json!({}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        writers.push(link["token"].as_str().unwrap().to_owned());
    }
    // The highest counter each writer had acknowledged.
    let acknowledged = Arc::new(Mutex::new(vec![0u64; writers.len()]));
    let deadline = Instant::now() + Duration::from_millis(1_500);
    let tasks: Vec<_> = writers
        .iter()
        .enumerate()
        .map(|(w, token)| {
            let (client, acknowledged) = (client.clone(), acknowledged.clone());
            let (review, token) = (review.clone(), token.clone());
            tokio::spawn(async move {
                let mut n = 0u64;
                while Instant::now() < deadline + Duration::from_secs(1) {
                    n += 1;
                    let sent = client
                        .put(format!("{review}/comments"))
                        .bearer_auth(&token)
                        .json(&json!({"name": format!("writer {w}"), "version": 1,
                                      "data": format!("{n:08}{}", "C".repeat(1500))}))
                        .send()
                        .await;
                    let Ok(response) = sent else { break };
                    if response.status() != 200 {
                        break;
                    }
                    acknowledged.lock().unwrap()[w] = n;
                }
            })
        })
        .collect();
    tokio::time::sleep_until(deadline.into()).await;
    server.0.kill().unwrap(); // SIGKILL mid-write
    let _ = server.0.wait();
    for task in tasks {
        task.await.unwrap();
    }
    let acknowledged = acknowledged.lock().unwrap().clone();
    assert!(
        acknowledged.iter().all(|n| *n > 3),
        "too few writes: {acknowledged:?}"
    );

    let _restarted = start(dir.path(), port).await;
    let read: Value = client
        .get(&review)
        .bearer_auth(&owner)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    for (w, &n) in acknowledged.iter().enumerate() {
        let set = read["comments"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == format!("writer {w}"))
            .unwrap_or_else(|| panic!("writer {w}'s comments are lost"));
        let stored: u64 = set["data"].as_str().unwrap()[..8].parse().unwrap();
        assert!(stored >= n, "writer {w}: acknowledged {n}, found {stored}");
    }
    // The log holds an event for every change it acknowledged, in order,
    // and a stream resumes after any id with no gap.
    let seq = read["seq"].as_u64().unwrap();
    let comments: u64 = acknowledged.iter().sum();
    assert!(
        seq >= 1 + 4 + comments,
        "seq {seq} for {comments} acknowledged sets"
    );
    let page: Value = client
        .get(format!("{review}/events?after={}&wait=0", seq - 3))
        .bearer_auth(&owner)
        .header("accept", "application/json")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<u64> = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids, [seq - 2, seq - 1, seq]);
}
