//! Replays every `paste_http` vector recorded from the upstream paste service.
//! Where planshare deliberately differs (the README's list "Where planshare
//! deliberately differs from upstream"), the vector is checked against the
//! planshare behaviour in a test of its own.

use std::collections::HashMap;

use serde_json::Value;
use testkit::TestApp;

fn vectors() -> Vec<Value> {
    testkit::upstream_vectors("paste_http")
}

/// Turns a vector's `config` text (`PASTE_MAX_SIZE=2000, PASTE_ALLOWED_ORIGINS="a, b"`)
/// into environment variables; `defaults (…)` means none.
fn config_env(config: &str) -> Vec<(String, String)> {
    if config.starts_with("defaults") {
        return Vec::new();
    }
    let mut vars = Vec::new();
    let mut rest = config.trim();
    while !rest.is_empty() {
        let (name, after) = rest.split_once('=').unwrap();
        let (value, after) = if let Some(quoted) = after.strip_prefix('"') {
            let end = quoted.find('"').unwrap();
            (&quoted[..end], &quoted[end + 1..])
        } else {
            after.split_once(',').map_or((after, ""), |(v, a)| (v, a))
        };
        vars.push((name.trim().to_owned(), value.to_owned()));
        rest = after.trim_start_matches(',').trim();
    }
    vars
}

/// Vectors whose upstream behaviour planshare changes on purpose; each has
/// its own test below.
const DELIBERATE_DIFFERENCES: &[&str] = &["post_body_json_null"];

#[tokio::test]
async fn every_upstream_paste_http_vector_replays() {
    let vectors = vectors();
    assert!(vectors.len() >= 20, "vectors found: {}", vectors.len());
    // One server per distinct configuration, started on first use, kept for the
    // vectors that follow (they refer to ids created earlier).
    let mut apps: HashMap<String, TestApp> = HashMap::new();
    let mut ids: HashMap<String, String> = HashMap::new();
    let mut replayed = 0;
    for v in &vectors {
        let name = v["name"].as_str().unwrap();
        if DELIBERATE_DIFFERENCES.contains(&name) {
            continue;
        }
        let input = &v["input"];
        let expected = &v["output"];
        let config = input["config"].as_str().unwrap().to_owned();
        if !apps.contains_key(&config) {
            let env = config_env(&config);
            let env: Vec<(&str, &str)> =
                env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            apps.insert(config.clone(), TestApp::spawn(&env).await);
        }
        let app = &apps[&config];

        let mut path = input["path"].as_str().unwrap().to_owned();
        for (recorded, actual) in &ids {
            path = path.replace(recorded.as_str(), actual);
        }
        let method =
            reqwest::Method::from_bytes(input["method"].as_str().unwrap().as_bytes()).unwrap();
        let mut request = app.client.request(method.clone(), app.url(&path));
        if let Some(headers) = input["headers"].as_object() {
            for (k, val) in headers {
                request = request.header(k, val.as_str().unwrap());
            }
        }
        if let Some(body) = input["body"].as_str() {
            request = request.body(body.to_owned());
        } else if let Some(generator) = input["body_generator"].as_str() {
            assert_eq!(
                generator, "{\"data\": \"a\" x 5242880}",
                "{name}: unknown generator"
            );
            request = request.body(format!("{{\"data\":\"{}\"}}", "a".repeat(5_242_880)));
        }
        let response = request.send().await.unwrap();

        let status = response.status().as_u16();
        assert_eq!(
            u64::from(status),
            expected["status"].as_u64().unwrap(),
            "{name}: status"
        );
        let headers = response.headers().clone();
        let body = response.text().await.unwrap();
        let created = status == 201;
        if let Some(want) = expected["headers"].as_object() {
            for (header, value) in want {
                // Our create bodies are longer (16-char ids, deleteToken, expiresAt).
                if header == "content-length" && created {
                    continue;
                }
                let got = headers
                    .get(header.as_str())
                    .map(|h| h.to_str().unwrap().to_owned());
                assert_eq!(got.as_deref(), value.as_str(), "{name}: header {header}");
            }
            // No CORS headers where upstream sends none.
            if !want.contains_key("access-control-allow-origin") {
                assert!(
                    headers.get("access-control-allow-origin").is_none(),
                    "{name}: unexpected CORS"
                );
            }
        }
        if created {
            let ours: Value = serde_json::from_str(&body).unwrap();
            let id = ours["id"].as_str().unwrap();
            assert!(
                id.len() == 16 && id.bytes().all(|b| b.is_ascii_alphanumeric()),
                "{name}: id {id}"
            );
            assert!(
                ours["deleteToken"].as_str().is_some_and(|t| t.len() == 43),
                "{name}: token"
            );
            assert!(ours["expiresAt"].as_u64().is_some(), "{name}: expiresAt");
            if let Some(recorded) = expected["body"].as_str() {
                let theirs: Value = serde_json::from_str(recorded).unwrap();
                ids.insert(theirs["id"].as_str().unwrap().to_owned(), id.to_owned());
            }
        } else {
            assert_eq!(body, expected["body"].as_str().unwrap(), "{name}: body");
        }
        replayed += 1;
    }
    assert_eq!(replayed, vectors.len() - DELIBERATE_DIFFERENCES.len());
}

/// Upstream answers a body of `null` with 500 "Failed to store paste" (it
/// dereferences `null.data`); planshare treats it like any body without
/// `data` (one of the README's deliberate differences).
#[tokio::test]
async fn a_null_body_is_a_400_not_upstreams_500() {
    let vector = vectors()
        .into_iter()
        .find(|v| v["name"] == "post_body_json_null")
        .unwrap();
    assert_eq!(
        vector["output"]["status"], 500,
        "the recorded upstream quirk"
    );
    let app = TestApp::spawn(&[]).await;
    let response = app
        .client
        .post(app.url("/api/paste"))
        .header("origin", "https://share.plannotator.ai")
        .body("null")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    assert_eq!(
        response.headers()["access-control-allow-origin"],
        "https://share.plannotator.ai"
    );
    assert_eq!(
        response.text().await.unwrap(),
        r#"{"error":"Missing or invalid \"data\" field"}"#
    );
}

#[test]
fn vector_configurations_parse_into_environment_variables() {
    assert!(config_env("defaults (PASTE_MAX_SIZE unset = 5242880)").is_empty());
    assert_eq!(
        config_env(
            r#"PASTE_MAX_SIZE=2000, PASTE_ALLOWED_ORIGINS="https://plans.example.com, https://other.example.com""#
        ),
        vec![
            ("PASTE_MAX_SIZE".to_owned(), "2000".to_owned()),
            (
                "PASTE_ALLOWED_ORIGINS".to_owned(),
                "https://plans.example.com, https://other.example.com".to_owned()
            ),
        ]
    );
    assert_eq!(
        config_env(r#"PASTE_TTL_DAYS=0, PASTE_ALLOWED_ORIGINS="*""#),
        vec![
            ("PASTE_TTL_DAYS".to_owned(), "0".to_owned()),
            ("PASTE_ALLOWED_ORIGINS".to_owned(), "*".to_owned())
        ]
    );
}
