//! Where links open (the paste server's discovery), what review commands
//! say against a paste service with no review API or none at all, and
//! `PLANSHARE_INSECURE`.

use axum::http::Method;
use testkit::TestApp;

use crate::support::{Stub, planshare};

const PLAN: &str = "# Plan\n\n## Step 1\n\nAdd auth middleware.\n";
const UPSTREAM_404: &str =
    r#"{"error":"Not found. Valid paths: POST /api/paste, GET /api/paste/:id"}"#;
const NO_REVIEW_API: &str = "has no review API: reviews need a planshare server; set PLANNOTATOR_PASTE_URL to one (e.g. http://localhost:19433)";

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// A port nothing listens on.
fn closed_port() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    url
}

#[tokio::test]
async fn links_open_on_the_portal_the_paste_server_names() {
    // The portal on the server's own origin (the default).
    let app = TestApp::spawn(&[]).await;
    let env = [("PLANNOTATOR_PASTE_URL", app.base_url.as_str())];
    let run = planshare(&["share", "-", "--hash"], &env, PLAN).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.starts_with(&format!("{}/#", app.base_url)),
        "{}",
        run.stdout
    );
    assert_eq!(run.stderr, "");

    // PLANNOTATOR_SHARE_URL and --share-url win over discovery.
    let named = [
        ("PLANNOTATOR_PASTE_URL", app.base_url.as_str()),
        ("PLANNOTATOR_SHARE_URL", "https://mine.example"),
    ];
    let run = planshare(&["share", "-", "--hash"], &named, PLAN).await;
    assert!(
        run.stdout.starts_with("https://mine.example/#"),
        "{}",
        run.stdout
    );
    let run = planshare(
        &[
            "share",
            "-",
            "--hash",
            "--share-url",
            "https://flag.example",
        ],
        &named,
        PLAN,
    )
    .await;
    assert!(
        run.stdout.starts_with("https://flag.example/#"),
        "{}",
        run.stdout
    );

    // Review links too: the reviewer's page is on the server's portal.
    let dir = tempfile::tempdir().unwrap();
    let plan = write(&dir, "plan.md", PLAN);
    let run = planshare(&["review", "start", &plan, "--json"], &env, "").await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let owner = out["owner"].as_str().unwrap();
    assert!(
        owner.starts_with(&format!("{}/r/", app.base_url)),
        "{owner}"
    );
    assert!(!owner.contains("&paste="), "same origin: {owner}");
    app.shutdown().await.unwrap();

    // A portal configured elsewhere.
    let app = TestApp::spawn(&[("PLANSHARE_SHARE_BASE_URL", "https://share.example")]).await;
    let env = [("PLANNOTATOR_PASTE_URL", app.base_url.as_str())];
    let run = planshare(&["share", "-", "--hash"], &env, PLAN).await;
    assert!(
        run.stdout.starts_with("https://share.example/#"),
        "{}",
        run.stdout
    );
    let run = planshare(&["review", "start", &plan], &env, "").await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("  https://share.example/r/"),
        "{}",
        run.stdout
    );
    app.shutdown().await.unwrap();

    // No portal at all: shares stay on upstream's, with a warning.
    let app = TestApp::spawn(&[("PLANSHARE_PORTAL", "off")]).await;
    let env = [("PLANNOTATOR_PASTE_URL", app.base_url.as_str())];
    let run = planshare(&["share", "-", "--hash"], &env, PLAN).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.starts_with("https://share.plannotator.ai/#"),
        "{}",
        run.stdout
    );
    assert!(run.stderr.contains("serves no portal"), "{}", run.stderr);
    app.shutdown().await.unwrap();
}

#[tokio::test]
async fn an_upstream_paste_service_keeps_upstreams_portal_and_has_no_reviews() {
    // Upstream's paste service answers its generic 404 to everything but
    // its two routes.
    let stub = Stub::start(vec![], (404, vec![], UPSTREAM_404.to_owned())).await;
    let api_key = format!("pst_live_{}", "k".repeat(40));
    let env = [
        ("PLANNOTATOR_PASTE_URL", stub.url.as_str()),
        ("PLANSHARE_API_KEY", api_key.as_str()),
    ];
    let run = planshare(&["share", "-", "--hash"], &env, PLAN).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.starts_with("https://share.plannotator.ai/#"),
        "{}",
        run.stdout
    );
    assert_eq!(run.stderr, "", "no warning: this is today's behaviour");
    // Discovery was asked once, without credentials.
    let asked = stub.recorded();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].method, Method::GET);
    assert_eq!(asked[0].uri.path(), "/api/v1/discovery");
    assert!(!asked[0].headers.contains_key("authorization"));

    // `review start`: refused before anything is created.
    let dir = tempfile::tempdir().unwrap();
    let plan = write(&dir, "plan.md", PLAN);
    let run = planshare(&["review", "start", &plan], &env, "").await;
    assert_eq!(run.code, 18, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        format!(
            "planshare: the paste service at {} {NO_REVIEW_API}\n",
            stub.url
        )
    );
    assert_eq!(run.stdout, "");
    assert!(
        stub.recorded().iter().all(|r| r.method == Method::GET),
        "nothing was created"
    );

    // With the portal named, no discovery: the review API's 404 says it.
    let named = [
        ("PLANNOTATOR_PASTE_URL", stub.url.as_str()),
        ("PLANNOTATOR_SHARE_URL", "https://portal.example"),
    ];
    let run = planshare(&["review", "start", &plan], &named, "").await;
    assert_eq!(run.code, 18, "{}", run.stderr);
    assert!(run.stderr.contains(NO_REVIEW_API), "{}", run.stderr);

    // A review link whose API is such a service: every command says it.
    let key = share_codec::ShareKey::from_bytes([4; 32]);
    let link = share_codec::review_url(
        "https://portal.example",
        "abcdefgh",
        &key,
        &"t".repeat(43),
        Some(&stub.url),
    );
    for args in [
        vec!["open", link.as_str()],
        vec!["review", "watch", link.as_str()],
        vec!["review", "links", link.as_str()],
        vec!["review", "decide", link.as_str(), "--approve"],
        vec!["review", "push", plan.as_str(), "--review", link.as_str()],
    ] {
        let run = planshare(&args, &[], "").await;
        assert_eq!(run.code, 18, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.contains(NO_REVIEW_API),
            "{args:?}: {}",
            run.stderr
        );
        assert!(!run.stderr.contains(&"t".repeat(43)), "{}", run.stderr);
    }
}

#[tokio::test]
async fn review_start_without_a_paste_service_configured_says_what_to_set() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write(&dir, "plan.md", PLAN);
    // Nothing set: upstream's hosted service, which keeps no reviews. No
    // request is made (this test runs offline).
    let run = planshare(&["review", "start", &plan], &[], "").await;
    assert_eq!(run.code, 18, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        format!(
            "planshare: the paste service at https://plannotator-paste.plannotator.workers.dev {NO_REVIEW_API}\n"
        )
    );
}

#[tokio::test]
async fn review_errors_speak_of_reviews() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write(&dir, "plan.md", PLAN);
    let down = closed_port();
    let run = planshare(
        &["review", "start", &plan],
        &[("PLANNOTATOR_PASTE_URL", down.as_str())],
        "",
    )
    .await;
    assert_eq!(run.code, 7, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        format!("planshare: review service at {down} unavailable: cannot connect\n")
    );

    let key = share_codec::ShareKey::from_bytes([4; 32]);
    let link = share_codec::review_url(&down, "abcdefgh", &key, &"t".repeat(43), None);
    for args in [
        vec!["open", link.as_str()],
        vec!["review", "watch", link.as_str()],
    ] {
        let run = planshare(&args, &[], "").await;
        assert_eq!(run.code, 7, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr
                .starts_with(&format!("planshare: review service at {down} unavailable:")),
            "{args:?}: {}",
            run.stderr
        );
        assert!(!run.stderr.contains("paste service"), "{}", run.stderr);
    }

    // A damaged review link is an invalid review link, not a share link.
    let damaged = link.replace("&t=", "&t=x");
    let run = planshare(&["review", "watch", &damaged], &[], "").await;
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert!(
        run.stderr.starts_with("planshare: invalid review link: "),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("share link"), "{}", run.stderr);
}

#[tokio::test]
async fn planshare_insecure_allows_plain_http_for_every_command() {
    let remote = "http://paste.invalid";
    let run = planshare(
        &["paste", "get", "abcdefgh", "--paste-url", remote],
        &[],
        "",
    )
    .await;
    assert_eq!(run.code, 10, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        "planshare: refusing to use http://paste.invalid over plain HTTP: use https:// (browsers will not decrypt links over plain HTTP on another host anyway), or allow it with --insecure or PLANSHARE_INSECURE=1\n"
    );
    for value in ["1", "true"] {
        let env = [("PLANSHARE_INSECURE", value)];
        // Allowed: the request is made (and fails: the host does not exist).
        let run = planshare(
            &["paste", "get", "abcdefgh", "--paste-url", remote],
            &env,
            "",
        )
        .await;
        assert_eq!(run.code, 7, "{value}: {}", run.stderr);
        let run = planshare(
            &["admin", "tenants", "list", "--url", remote, "--token", "t"],
            &env,
            "",
        )
        .await;
        assert_eq!(run.code, 7, "{value}: {}", run.stderr);
    }
    // Without it, admin refuses as well.
    let run = planshare(
        &["admin", "tenants", "list", "--url", remote, "--token", "t"],
        &[],
        "",
    )
    .await;
    assert_eq!(run.code, 10, "{}", run.stderr);
    assert!(
        run.stderr.contains("PLANSHARE_INSECURE=1"),
        "{}",
        run.stderr
    );
    // Anything else is not a yes.
    let run = planshare(
        &["paste", "get", "abcdefgh", "--paste-url", remote],
        &[("PLANSHARE_INSECURE", "yes")],
        "",
    )
    .await;
    assert_eq!(run.code, 10, "{}", run.stderr);
}

#[tokio::test]
async fn a_paste_server_that_does_not_answer_holds_a_share_up_two_seconds_at_most() {
    // Accepts connections and never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let started = std::time::Instant::now();
    let run = planshare(
        &["share", "-", "--hash"],
        &[("PLANNOTATOR_PASTE_URL", silent.as_str())],
        PLAN,
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(
        run.stdout.starts_with("https://share.plannotator.ai/#"),
        "{}",
        run.stdout
    );
    assert_eq!(
        run.stderr,
        format!(
            "planshare: could not ask the paste service at {silent} where its portal is (it did not answer in time); links open on https://share.plannotator.ai (set PLANNOTATOR_SHARE_URL to choose)\n"
        )
    );

    // Down altogether: the same, at once.
    let down = closed_port();
    let run = planshare(
        &["share", "-", "--hash"],
        &[("PLANNOTATOR_PASTE_URL", down.as_str())],
        PLAN,
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("(cannot connect)"), "{}", run.stderr);
}
