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
