//! `planshare paste put|get|delete`, retries and transport safety.

use std::time::Duration;

use testkit::TestApp;

use crate::support::{Endless, Stub, planshare};

#[tokio::test]
async fn put_get_delete_round_trip_against_the_server() {
    let app = TestApp::spawn(&[]).await;
    let env = [("PLANNOTATOR_PASTE_URL", app.base_url.as_str())];
    let put = planshare(&["paste", "put", "-"], &env, "Xc6xCsJAEATQ\n").await;
    assert_eq!(put.code, 0, "{}", put.stderr);
    let created: serde_json::Value = serde_json::from_str(&put.stdout).unwrap();
    let id = created["id"].as_str().unwrap();
    let token = created["deleteToken"].as_str().unwrap();

    let get = planshare(&["paste", "get", id], &env, "").await;
    assert_eq!((get.code, get.stdout.as_str()), (0, "Xc6xCsJAEATQ\n"));

    let wrong_token = "A".repeat(43);
    let wrong = planshare(&["paste", "delete", id, "--token", &wrong_token], &env, "").await;
    assert_eq!(
        wrong.code, 6,
        "a wrong token looks like an absent paste: {}",
        wrong.stderr
    );
    // Delete tokens are base64url, so one in 64 begins with `-`: a value, not an option.
    let dashed_token = format!("-{}", "A".repeat(42));
    let dashed = planshare(&["paste", "delete", id, "--token", &dashed_token], &env, "").await;
    assert_eq!(
        dashed.code, 6,
        "a token beginning with '-' is read as the token: {}",
        dashed.stderr
    );
    // Not even shaped like a delete token: refused as a credential.
    let malformed = planshare(&["paste", "delete", id, "--token", "wrong"], &env, "").await;
    assert_eq!(malformed.code, 12, "{}", malformed.stderr);
    assert!(
        malformed.stderr.contains("not authorised"),
        "{}",
        malformed.stderr
    );
    let delete = planshare(&["paste", "delete", id, "--token", token], &env, "").await;
    assert_eq!(
        (delete.code, delete.stdout.as_str()),
        (0, ""),
        "{}",
        delete.stderr
    );

    let gone = planshare(&["paste", "get", id], &env, "").await;
    assert_eq!(gone.code, 6);
    assert_eq!(gone.stdout, "");
    assert_eq!(gone.stderr, "planshare: paste not found or expired\n");
}

#[tokio::test]
async fn retries_honour_retry_after_and_reuse_the_idempotency_key() {
    let busy = (
        503,
        vec![("retry-after", "1".to_owned())],
        r#"{"error":"busy"}"#.to_owned(),
    );
    let created = (201, vec![], r#"{"id":"abcdefgh"}"#.to_owned());
    let stub = Stub::start(vec![busy.clone(), busy], created).await;
    let run = planshare(
        &["paste", "put", "-"],
        &[("PLANNOTATOR_PASTE_URL", &stub.url)],
        "data",
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "{\"id\":\"abcdefgh\"}\n");
    let requests = stub.recorded();
    assert_eq!(requests.len(), 3);
    let keys: Vec<_> = requests
        .iter()
        .map(|r| r.headers["idempotency-key"].clone())
        .collect();
    assert!(
        keys.iter().all(|k| *k == keys[0]),
        "same key on every attempt: {keys:?}"
    );
    for pair in requests.windows(2) {
        assert!(
            pair[1].at - pair[0].at >= Duration::from_millis(990),
            "waited for Retry-After"
        );
    }
}

#[tokio::test]
async fn a_service_that_stays_down_gets_three_attempts_then_exit_7() {
    let down = (
        503,
        vec![],
        r#"{"error":"storage is temporarily unavailable"}"#.to_owned(),
    );
    let stub = Stub::start(vec![], down).await;
    let run = planshare(
        &["paste", "get", "abcdefgh"],
        &[("PLANNOTATOR_PASTE_URL", &stub.url)],
        "",
    )
    .await;
    assert_eq!(run.code, 7, "{}", run.stderr);
    assert_eq!(run.stdout, "");
    assert_eq!(stub.recorded().len(), 3);
    assert!(run.stderr.contains("HTTP 503"), "{}", run.stderr);
}

#[tokio::test]
async fn an_unreachable_service_is_exit_7() {
    let port = testkit::free_port();
    let url = format!("http://127.0.0.1:{port}");
    let run = planshare(
        &["paste", "get", "abcdefgh"],
        &[("PLANNOTATOR_PASTE_URL", &url)],
        "",
    )
    .await;
    assert_eq!(run.code, 7, "{}", run.stderr);
    assert!(run.stderr.contains("cannot connect"), "{}", run.stderr);
}

#[tokio::test]
async fn plain_http_to_another_host_is_refused_unless_insecure() {
    let run = planshare(
        &[
            "paste",
            "get",
            "abcdefgh",
            "--paste-url",
            "http://paste.example.com",
        ],
        &[],
        "",
    )
    .await;
    assert_eq!(run.code, 10, "{}", run.stderr);
    assert!(run.stderr.contains("plain HTTP"), "{}", run.stderr);
}

#[tokio::test]
async fn oversized_payloads_report_the_services_message() {
    let app = TestApp::spawn(&[("PASTE_MAX_SIZE", "10")]).await;
    let run = planshare(
        &["paste", "put", "-"],
        &[("PLANNOTATOR_PASTE_URL", &app.base_url)],
        "0123456789A",
    )
    .await;
    assert_eq!(run.code, 8, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        "planshare: Payload too large (max 0 KB encrypted)\n"
    );
}

fn in_progress() -> crate::support::Scripted {
    (
        409,
        vec![("retry-after", "1".to_owned())],
        r#"{"error":"a request with this Idempotency-Key is still in progress, retry later","code":"idempotency-in-progress"}"#.to_owned(),
    )
}

#[tokio::test]
async fn a_create_still_in_progress_is_retried_with_the_same_key() {
    let created = (201, vec![], r#"{"id":"abcdefgh"}"#.to_owned());
    let stub = Stub::start(vec![in_progress(), in_progress()], created).await;
    let run = planshare(
        &["paste", "put", "-"],
        &[("PLANNOTATOR_PASTE_URL", &stub.url)],
        "data",
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "{\"id\":\"abcdefgh\"}\n");
    let requests = stub.recorded();
    assert_eq!(requests.len(), 3);
    let keys: Vec<_> = requests
        .iter()
        .map(|r| r.headers["idempotency-key"].clone())
        .collect();
    assert!(
        keys.iter().all(|k| *k == keys[0]),
        "same key on every attempt: {keys:?}"
    );
    for pair in requests.windows(2) {
        assert!(
            pair[1].at - pair[0].at >= Duration::from_millis(990),
            "waited for Retry-After"
        );
    }
}

#[tokio::test]
async fn a_create_in_progress_on_every_attempt_is_exit_7_and_other_conflicts_are_not_retried() {
    let stub = Stub::start(vec![], in_progress()).await;
    let env = [("PLANNOTATOR_PASTE_URL", stub.url.as_str())];
    let run = planshare(&["paste", "put", "-"], &env, "data").await;
    assert_eq!(run.code, 7, "{}", run.stderr);
    assert_eq!(stub.recorded().len(), 3);
    assert!(run.stderr.contains("still in progress"), "{}", run.stderr);

    let conflict = (
        409,
        vec![("retry-after", "1".to_owned())],
        r#"{"error":"key\u001b[2J already exists","code":"conflict"}"#.to_owned(),
    );
    let stub = Stub::start(vec![], conflict).await;
    let env = [("PLANNOTATOR_PASTE_URL", stub.url.as_str())];
    let run = planshare(&["paste", "put", "-"], &env, "data").await;
    assert_eq!(run.code, 11, "{}", run.stderr);
    assert_eq!(
        run.stderr, "planshare: paste service error: HTTP 409: key\\u{1b}[2J already exists\n",
        "the server's text is printed with its control characters escaped"
    );
    assert_eq!(stub.recorded().len(), 1, "not retried");
}

#[tokio::test]
async fn an_endless_answer_is_cut_off_past_6_mib() {
    let endless = Endless::start().await;
    let run = planshare(
        &["paste", "get", "abcdefgh"],
        &[("PLANNOTATOR_PASTE_URL", &endless.url)],
        "",
    )
    .await;
    assert_eq!((run.code, run.stdout.as_str()), (8, ""), "{}", run.stderr);
    assert_eq!(
        run.stderr,
        "planshare: the paste service's answer is larger than 6 MiB, the most planshare reads\n"
    );
    // The client stopped reading at the limit: what the server got out
    // before the connection closed is the limit plus the sockets' buffers.
    let written = endless.written().await;
    assert!(written < 32 * 1024 * 1024, "{written} bytes were sent");
}

#[tokio::test]
async fn a_redirect_is_reported_and_not_followed() {
    let target = Stub::start(vec![], (200, vec![], r#"{"data":"x"}"#.to_owned())).await;
    let redirect = (
        302,
        vec![("location", format!("{}/internal/admin", target.url))],
        String::new(),
    );
    let redirecting = Stub::start(vec![], redirect).await;
    let link = format!(
        "https://share.plannotator.ai/p/abcdefgh#key={}&paste={}",
        "A".repeat(43),
        share_codec::encode_paste_api_param(&redirecting.url)
    );
    let run = planshare(&["open", &link], &[], "").await;
    assert_eq!((run.code, run.stdout.as_str()), (11, ""), "{}", run.stderr);
    assert_eq!(redirecting.recorded().len(), 1);
    assert_eq!(target.recorded().len(), 0, "the redirect was followed");
    assert_eq!(
        run.stderr,
        format!(
            "planshare: paste service error: HTTP 302 redirect to \"{}/internal/admin\" not followed: give the paste API's own URL\n",
            target.url
        )
    );
}
