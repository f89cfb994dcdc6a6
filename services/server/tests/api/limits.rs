//! Rate limits and authentication hardening over HTTP, in sections labelled
//! below: the per-key limiter (D1–D3: burst exactness, refill,
//! independence), the per-client-IP limiter (D3, D4: independent buckets per
//! source address, `X-Forwarded-For` believed only from trusted proxies),
//! the failed-auth (B8) and not-found (A16) penalty limiters, malformed
//! credentials and keys in the URL (B2, B3), and the limiters' memory
//! staying bounded across many clients (D5).
//!
//! Each test starts its own server with `PLANSHARE_RATE_LIMITS=on` where it
//! needs the limiters (the test kit turns them off otherwise) and tunes the
//! limiters it does not exercise so that they stay out of the way. Several
//! client source addresses are used: on Linux all of 127.0.0.0/8 is local, so
//! a client socket bound to 127.x.y.z reaches the server on 127.0.0.1 and is
//! seen with that peer address.
//!
//! Timing: every limiter here refills at 1 token per second or slower, and
//! the bounds account for refills: a run that took `e` seconds may see at
//! most `burst + floor(e × rate)` successes, which is exactly `burst` on any
//! run faster than one refill period (all of them, in practice).

use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use reqwest::{Client, Method, RequestBuilder, Response};
use serde_json::{Value, json};
use tenancy::ApiKey;
use testkit::TestApp;
use tokio::task::JoinSet;

use crate::tenants_support::{self as ts, Db};

const LIMITS_ON: &[(&str, &str)] = &[("PLANSHARE_RATE_LIMITS", "on")];

// ---- helpers -----------------------------------------------------------

/// What a test needs of a response.
#[derive(Debug)]
struct Outcome {
    status: u16,
    retry_after: Option<u64>,
    www_authenticate: Option<String>,
    body: String,
}

impl Outcome {
    async fn of(response: Response) -> Outcome {
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .map(|v| v.to_str().unwrap().to_owned())
        };
        let retry_after = header("retry-after").map(|v| {
            v.parse::<u64>()
                .unwrap_or_else(|e| panic!("retry-after {v:?}: {e}"))
        });
        let www_authenticate = header("www-authenticate");
        let status = response.status().as_u16();
        let body = response.text().await.unwrap();
        Outcome {
            status,
            retry_after,
            www_authenticate,
            body,
        }
    }

    /// A 429 of the limiters: the `rate-limited` body and `Retry-After` ≥ 1 s.
    fn assert_limited(&self, what: &str) {
        assert_eq!(self.status, 429, "{what}: {self:?}");
        let secs = self
            .retry_after
            .unwrap_or_else(|| panic!("{what}: 429 without retry-after"));
        assert!(secs >= 1, "{what}: retry-after {secs}");
        let body: Value = serde_json::from_str(&self.body).unwrap();
        assert_eq!(body["code"], "rate-limited", "{what}: {body}");
        assert!(body["error"].is_string(), "{what}: {body}");
    }
}

async fn send(request: RequestBuilder) -> Outcome {
    Outcome::of(request.send().await.unwrap()).await
}

/// Sends `n` requests at once; the outcomes and how long the volley took.
async fn volley(n: usize, make: impl Fn(usize) -> RequestBuilder) -> (Vec<Outcome>, Duration) {
    let started = Instant::now();
    let requests: Vec<RequestBuilder> = (0..n).map(make).collect();
    let mut set = JoinSet::new();
    for request in requests {
        set.spawn(send(request));
    }
    let mut outcomes = Vec::with_capacity(n);
    while let Some(outcome) = set.join_next().await {
        outcomes.push(outcome.unwrap());
    }
    (outcomes, started.elapsed())
}

/// Sends `n` requests one after the other.
async fn in_turn(n: usize, make: impl Fn(usize) -> RequestBuilder) -> (Vec<Outcome>, Duration) {
    let started = Instant::now();
    let mut outcomes = Vec::with_capacity(n);
    for i in 0..n {
        outcomes.push(send(make(i)).await);
    }
    (outcomes, started.elapsed())
}

fn count(outcomes: &[Outcome], status: u16) -> usize {
    outcomes.iter().filter(|o| o.status == status).count()
}

/// Most successes a limiter of `burst` refilling `per_sec` tokens a second
/// can grant within `elapsed`.
fn most_allowed(burst: usize, per_sec: f64, elapsed: Duration) -> usize {
    burst + (elapsed.as_secs_f64() * per_sec).floor() as usize
}

/// Asserts a run of a limiter of `burst` (`per_sec` refill): at least the
/// burst passed, no more than refills allow, every other answer a proper 429.
fn assert_burst(outcomes: &[Outcome], burst: usize, per_sec: f64, elapsed: Duration, what: &str) {
    let ok = count(outcomes, 200);
    let most = most_allowed(burst, per_sec, elapsed);
    assert!(
        (burst..=most).contains(&ok),
        "{what}: {ok} × 200 in {elapsed:?}, expected {burst}..={most}: {outcomes:?}"
    );
    for o in outcomes.iter().filter(|o| o.status != 200) {
        o.assert_limited(what);
    }
}

/// A client whose connections come from `ip` (any 127.x.y.z on Linux).
pub(crate) fn client_from(ip: &str) -> Client {
    Client::builder()
        .local_address(ip.parse::<IpAddr>().unwrap())
        .build()
        .unwrap()
}

/// A fresh pseudo-random number (std's per-instance random hasher keys).
fn random_u64() -> u64 {
    use std::hash::BuildHasher as _;
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    std::collections::hash_map::RandomState::new().hash_one(COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// A random well-formed paste id (16 base62 characters): absent everywhere.
fn random_id() -> String {
    const BASE62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    (0..16)
        .map(|_| char::from(BASE62[(random_u64() % 62) as usize]))
        .collect()
}

/// A random IPv4 address outside loopback (for forwarded headers).
fn random_ip() -> String {
    let [a, b, c, d, ..] = random_u64().to_be_bytes();
    format!("{}.{b}.{c}.{d}", a % 200 + 11)
}

/// A well-formed key nobody issued.
fn unknown_key() -> String {
    ApiKey::generate().unwrap().expose_secret().to_owned()
}

/// `key` with its last checksum character changed: the right shape, a wrong
/// checksum.
fn bad_checksum(key: &str) -> String {
    let last = if key.ends_with('A') { "B" } else { "A" };
    format!("{}{last}", &key[..key.len() - 1])
}

/// Creates a paste on the default tenant from `client`; its id.
async fn compat_paste(app: &TestApp, client: &Client) -> String {
    let response = client
        .post(app.url("/api/paste"))
        .header("content-type", "application/json")
        .body(json!({"data": "limits"}).to_string())
        .send()
        .await
        .unwrap();
    let (status, body) = ts::status_json(response).await;
    assert_eq!(status, 201, "{body}");
    body["id"].as_str().unwrap().to_owned()
}

/// A server with limits on whose per-IP limiter stays out of the way.
async fn generous_ip(db: Db, adjust: impl FnOnce(&mut planshare_server::Settings)) -> ts::Tenanted {
    ts::spawn(db, LIMITS_ON, |s| {
        s.limits.ip_per_sec = 10_000;
        s.limits.ip_burst = 10_000;
        adjust(s);
    })
    .await
}

// ---- D1, D2, D3: the per-key limiter -------------------------------------

/// D1 + D2: a key with `rate_burst` 5 gets exactly 5 of 15 simultaneous
/// requests (the rest 429 + `Retry-After`), and about one more per second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_gets_exactly_its_burst_then_refills_at_its_rate() {
    let app = generous_ip(Db::Sqlite, |_| {}).await;
    let t = ts::tenant(&app, "burst", json!({"rate_per_sec": 1, "rate_burst": 5})).await;

    let (outcomes, elapsed) = volley(15, |_| {
        ts::keyed(&app, Method::GET, "/api/v1/pastes", &t.key)
    })
    .await;
    assert_burst(&outcomes, 5, 1.0, elapsed, "D1 burst");
    if elapsed < Duration::from_secs(1) {
        assert_eq!((count(&outcomes, 200), count(&outcomes, 429)), (5, 10));
    }

    // D2: 1.1 s later one token is back (two if the clock ticked just so).
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let (outcomes, elapsed2) = volley(5, |_| {
        ts::keyed(&app, Method::GET, "/api/v1/pastes", &t.key)
    })
    .await;
    let ok = count(&outcomes, 200);
    // One token a second since the burst, plus one for timer granularity.
    let most = (elapsed + Duration::from_millis(1_100) + elapsed2).as_secs() as usize + 1;
    assert!(
        (1..=most).contains(&ok),
        "D2 refill: {ok} × 200 after 1.1 s, expected 1..={most}: {outcomes:?}"
    );
    for o in outcomes.iter().filter(|o| o.status != 200) {
        o.assert_limited("D2 refill");
    }
}

/// D3: one key's exhaustion does not touch another tenant's key, another key
/// of the same tenant, or anonymous clients.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_are_limited_independently_of_each_other_and_of_anonymous_clients() {
    let app = generous_ip(Db::Sqlite, |_| {}).await;
    let settings = json!({"rate_per_sec": 1, "rate_burst": 5});
    let a = ts::tenant(&app, "indep-a", settings.clone()).await;
    let b = ts::tenant(&app, "indep-b", settings).await;
    let (_, a2) = ts::new_key(&app, &a.id).await;
    let public = compat_paste(&app, &app.client).await;

    let (outcomes, elapsed) = volley(10, |_| {
        ts::keyed(&app, Method::GET, "/api/v1/pastes", &a.key)
    })
    .await;
    assert_burst(&outcomes, 5, 1.0, elapsed, "key A");
    assert!(count(&outcomes, 429) > 0, "key A exhausted");

    for (key, who) in [(&b.key, "tenant B's key"), (&a2, "tenant A's second key")] {
        let (outcomes, _) =
            in_turn(5, |_| ts::keyed(&app, Method::GET, "/api/v1/pastes", key)).await;
        assert_eq!(
            count(&outcomes, 200),
            5,
            "{who} gets its full burst: {outcomes:?}"
        );
    }
    let (outcomes, _) = in_turn(10, |_| {
        app.client.get(app.url(&format!("/api/paste/{public}")))
    })
    .await;
    assert_eq!(count(&outcomes, 200), 10, "anonymous reads: {outcomes:?}");
}

/// D3: the per-IP limiter keeps one bucket per source address: 127.0.0.2 to
/// 127.0.0.6 each get the whole `ip_burst`, then 429.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_source_address_has_its_own_ip_bucket() {
    let app = ts::spawn(Db::Sqlite, LIMITS_ON, |s| {
        s.limits.ip_per_sec = 1;
        s.limits.ip_burst = 5;
    })
    .await;
    let id = compat_paste(&app, &client_from("127.0.0.9")).await;
    let path = format!("/api/paste/{id}");
    for n in 2..=6 {
        let ip = format!("127.0.0.{n}");
        let client = client_from(&ip);
        let (outcomes, elapsed) = in_turn(7, |_| client.get(app.url(&path))).await;
        assert!(
            outcomes[..5].iter().all(|o| o.status == 200),
            "{ip}: the whole burst: {outcomes:?}"
        );
        assert_burst(&outcomes, 5, 1.0, elapsed, &ip);
    }
    // 127.0.0.1 (the test kit's own client) was never touched either.
    let (outcomes, _) = in_turn(5, |_| app.client.get(app.url(&path))).await;
    assert_eq!(count(&outcomes, 200), 5, "127.0.0.1: {outcomes:?}");
}

// ---- D4: forwarded headers -----------------------------------------------

/// D4: from a peer that is not a trusted proxy, forwarded headers are
/// ignored: 50 requests with random `X-Forwarded-For`, `X-Real-IP` and
/// `Forwarded` share the peer's bucket and are limited after the burst.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forwarded_headers_from_an_untrusted_peer_do_not_escape_the_limit() {
    let app = ts::spawn(Db::Sqlite, LIMITS_ON, |s| {
        s.limits.ip_per_sec = 1;
        s.limits.ip_burst = 5;
    })
    .await;
    let id = compat_paste(&app, &client_from("127.0.0.9")).await;
    let path = format!("/api/paste/{id}");
    let (outcomes, elapsed) = in_turn(50, |_| {
        let (a, b, c) = (random_ip(), random_ip(), random_ip());
        app.client
            .get(app.url(&path))
            .header("x-forwarded-for", format!("{a}, {b}"))
            .header("x-real-ip", c.clone())
            .header("forwarded", format!("for={c};proto=https, for=\"{a}\""))
    })
    .await;
    assert_burst(&outcomes, 5, 1.0, elapsed, "spoofed forwarded headers");
}

/// D4: behind a trusted proxy (127.0.0.1) each `X-Forwarded-For` client gets
/// its own bucket; the rightmost hop that is not a trusted proxy counts, so
/// hops a client adds to the left change nothing; `X-Real-IP` and
/// `Forwarded` are never believed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trusted_proxy_s_forwarded_for_is_believed_rightmost_untrusted_hop_first() {
    let app = ts::spawn(Db::Sqlite, LIMITS_ON, |s| {
        s.limits.ip_per_sec = 1;
        s.limits.ip_burst = 5;
        s.limits.trusted_proxies = vec!["127.0.0.1".into()];
    })
    .await;
    let id = compat_paste(&app, &client_from("127.0.0.9")).await;
    let path = format!("/api/paste/{id}");
    let get = || app.client.get(app.url(&path));

    // Headers other than X-Forwarded-For: the proxy's own bucket.
    let (outcomes, elapsed) = in_turn(10, |_| {
        get()
            .header("x-real-ip", random_ip())
            .header("forwarded", format!("for={}", random_ip()))
    })
    .await;
    assert_burst(&outcomes, 5, 1.0, elapsed, "X-Real-IP / Forwarded");

    // Distinct clients through the proxy: one bucket each.
    for n in 1..=4 {
        let client = format!("203.0.113.{n}");
        let (outcomes, elapsed) =
            in_turn(7, |_| get().header("x-forwarded-for", client.as_str())).await;
        assert!(
            outcomes[..5].iter().all(|o| o.status == 200),
            "{client}: the whole burst: {outcomes:?}"
        );
        assert_burst(&outcomes, 5, 1.0, elapsed, &client);
    }

    // A client-supplied hop left of the real one is not believed …
    let (outcomes, elapsed) = in_turn(10, |_| {
        get().header("x-forwarded-for", format!("{}, 198.51.100.7", random_ip()))
    })
    .await;
    assert_burst(
        &outcomes,
        5,
        1.0,
        elapsed,
        "spoofed hop before 198.51.100.7",
    );
    // … nor is one left of a chain ending in trusted proxies (skipped).
    let (outcomes, elapsed) = in_turn(10, |_| {
        get().header(
            "x-forwarded-for",
            format!("{}, 198.51.100.8, 127.0.0.1", random_ip()),
        )
    })
    .await;
    assert_burst(
        &outcomes,
        5,
        1.0,
        elapsed,
        "spoofed hop before 198.51.100.8, proxy",
    );
}

// ---- B8: brute force -------------------------------------------------------

/// One bearer of the brute force: unknown well-formed keys, keys with a bad
/// checksum, keys of the wrong length and bearers that are no key at all.
fn guessed_bearer(i: usize) -> String {
    match i % 4 {
        0 => unknown_key(),
        1 => bad_checksum(&unknown_key()),
        2 => format!("pst_live_{}", random_id()),
        _ => format!("garbage-{:016x}", random_u64()),
    }
}

/// B8: 1000 guessed keys from one address, as fast as four tasks go: at most
/// `failed_auth_burst` (10) × 401, every other answer 429 + `Retry-After`.
/// The block is per client IP (by design: an IP that guesses is not told
/// which of its keys are good), so the valid key from the same address is
/// refused too while requests without credentials still pass; the valid key
/// from another address works. On every catalog database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guessing_keys_gets_an_address_blocked_after_ten_failures() {
    for db in ts::databases().await {
        // Refill lowered to 1/min (burst stays the default 10) so that no
        // token comes back during the run and the counts are exact.
        let app = generous_ip(db, |s| s.limits.failed_auth_per_min = 1).await;
        assert_eq!(app.settings.limits.failed_auth_burst, 10);
        let t = ts::tenant(&app, "brute", json!({})).await;

        let started = Instant::now();
        let mut tasks = JoinSet::new();
        for task in 0..4 {
            let (client, url) = (app.client.clone(), app.url("/api/v1/pastes"));
            tasks.spawn(async move {
                let mut outcomes = Vec::with_capacity(250);
                for i in 0..250 {
                    let request = client.get(&url).bearer_auth(guessed_bearer(task * 250 + i));
                    outcomes.push(send(request).await);
                }
                outcomes
            });
        }
        let mut outcomes = Vec::with_capacity(1000);
        while let Some(part) = tasks.join_next().await {
            outcomes.extend(part.unwrap());
        }
        let elapsed = started.elapsed();
        let (n401, n429) = (count(&outcomes, 401), count(&outcomes, 429));
        assert_eq!(
            n401, 10,
            "{db:?}: 401s before the block ({n429} × 429 in {elapsed:?})"
        );
        assert_eq!(n401 + n429, 1000, "{db:?}: only 401 and 429");
        for o in outcomes.iter().filter(|o| o.status == 429) {
            o.assert_limited("brute force");
            assert!(o.retry_after.unwrap() <= 60, "{o:?}");
        }
        assert!(
            elapsed < Duration::from_secs(15),
            "{db:?}: 1000 guesses took {elapsed:?}"
        );

        let list = || ts::keyed(&app, Method::GET, "/api/v1/pastes", &t.key);
        send(list())
            .await
            .assert_limited("valid key from the blocked address");
        let anonymous = compat_paste(&app, &app.client).await;
        assert!(!anonymous.is_empty(), "no credentials: served");
        let elsewhere = send(
            client_from("127.0.0.2")
                .get(app.url("/api/v1/pastes"))
                .bearer_auth(&t.key),
        )
        .await;
        assert_eq!(
            elsewhere.status, 200,
            "{db:?}: another address: {elsewhere:?}"
        );
    }
}

// ---- B2, B3: malformed credentials, keys in the URL ------------------------

/// B2: every malformed credential on a keyed route is the same 401 with
/// `WWW-Authenticate: Bearer`.
#[tokio::test]
async fn malformed_credentials_get_one_401_with_www_authenticate() {
    let app = ts::spawn(Db::Sqlite, &[], |_| {}).await;
    let t = ts::tenant(&app, "creds", json!({})).await;
    let url = app.url("/api/v1/pastes");
    let key = t.key.as_str();
    let basic_key = format!("Basic {key}");
    let lower_bad = format!("bearer {}", bad_checksum(key));
    let double_space = format!("Bearer  {key}");
    let huge = format!("Bearer pst_live_{}", "A".repeat(10 * 1024));
    let bad_sum = format!("Bearer {}", bad_checksum(key));
    let truncated = format!("Bearer {}", &key[..key.len() - 1]);
    let longer = format!("Bearer {key}x");
    let other_scheme = format!("Token {key}");
    let single: Vec<(&str, &str)> = vec![
        ("empty bearer", "Bearer "),
        ("bare scheme", "Bearer"),
        ("basic", "Basic dXNlcjpwYXNzd29yZA=="),
        ("the key as basic", &basic_key),
        ("another scheme", &other_scheme),
        ("lowercase scheme, bad key", &lower_bad),
        ("two spaces", &double_space),
        ("10 KiB token", &huge),
        ("valid prefix, bad checksum", &bad_sum),
        ("truncated key", &truncated),
        ("key plus a character", &longer),
    ];
    let mut bodies = Vec::new();
    for (what, value) in single {
        let o = send(app.client.get(&url).header("authorization", value)).await;
        assert_eq!(o.status, 401, "{what}: {o:?}");
        assert_eq!(o.www_authenticate.as_deref(), Some("Bearer"), "{what}");
        bodies.push(o.body);
    }
    let own = format!("Bearer {key}");
    for (what, second) in [
        ("the key twice", own.as_str()),
        ("key + garbage", "Bearer x"),
    ] {
        let o = send(
            app.client
                .get(&url)
                .header("authorization", own.as_str())
                .header("authorization", second),
        )
        .await;
        assert_eq!(o.status, 401, "two Authorization headers, {what}: {o:?}");
        assert_eq!(o.www_authenticate.as_deref(), Some("Bearer"));
        bodies.push(o.body);
    }
    bodies.dedup();
    assert_eq!(bodies.len(), 1, "one body for every cause: {bodies:?}");

    // The scheme is case-insensitive (RFC 7235 §2.1): a good key still works.
    let o = send(
        app.client
            .get(&url)
            .header("authorization", format!("bearer {key}")),
    )
    .await;
    assert_eq!(o.status, 200, "lowercase scheme with the valid key: {o:?}");
}

/// B2: malformed keys are refused before any catalog lookup. The catalog's
/// lookup counter is not visible over HTTP, so this is observed through a
/// catalog that is down: a lookup would fail closed with 503, and malformed
/// keys get 401 at once, while a well-formed unknown key does reach for the
/// catalog (503). (At the unit level the counter itself is asserted by
/// `malformed_keys_never_reach_the_database` in `tenancy::conformance` and
/// `malformed_keys_are_refused_without_a_lookup` in `paste-api`.)
#[tokio::test]
async fn malformed_keys_are_refused_without_asking_the_catalog() {
    let url = format!(
        "postgres://postgres@127.0.0.1:{}/planshare",
        testkit::free_port()
    );
    let app = TestApp::spawn_configured(&[], |s| {
        s.catalog.url = url;
        s.catalog.connect_timeout_ms = 300;
        s.catalog.acquire_timeout_ms = 300;
    })
    .await;
    let key = unknown_key();
    let path = app.url("/api/v1/pastes");
    for bad in [
        bad_checksum(&key),
        key[..key.len() - 1].to_owned(),
        format!("{key}A"),
        format!("pst_live_{}", random_id()),
    ] {
        let o = send(app.client.get(&path).bearer_auth(&bad)).await;
        assert_eq!(o.status, 401, "{bad}: refused without a lookup: {o:?}");
    }
    let o = send(app.client.get(&path).bearer_auth(&key)).await;
    assert_eq!(
        o.status, 503,
        "a well-formed key is looked up (fails closed): {o:?}"
    );
    assert!(o.retry_after.is_some());
}

/// B3: keys are taken from the `Authorization` header only; in the query
/// string they authenticate nothing (the request is anonymous).
#[tokio::test]
async fn a_key_in_the_query_string_authenticates_nothing() {
    let app = ts::spawn(Db::Sqlite, &[], |_| {}).await;
    let t = ts::tenant(&app, "query", json!({})).await;
    let id = ts::create_v1_ok(&app, &t.key, "private").await;
    for param in ["api_key", "token", "access_token", "key"] {
        // (Key characters are URL-safe: base64url and `_`.)
        let query = format!("?{param}={}", t.key);
        let list = send(app.client.get(app.url(&format!("/api/v1/pastes{query}")))).await;
        assert_eq!(
            list.status, 401,
            "GET /api/v1/pastes?{param}=<key>: {list:?}"
        );
        assert_eq!(list.www_authenticate.as_deref(), Some("Bearer"));

        let delete = send(
            app.client
                .delete(app.url(&format!("/api/v1/pastes/{id}{query}"))),
        )
        .await;
        assert_eq!(delete.status, 401, "DELETE …?{param}=<key>: {delete:?}");
    }
    // Still there, and a create with the key in the URL lands on the default
    // tenant (anonymous), not on the key's.
    let get = send(ts::keyed(
        &app,
        Method::GET,
        &format!("/api/v1/pastes/{id}"),
        &t.key,
    ))
    .await;
    assert_eq!(get.status, 200, "{get:?}");
    let (status, created) = ts::status_json(
        app.client
            .post(app.url(&format!("/api/v1/pastes?api_key={}", t.key)))
            .header("content-type", "application/json")
            .body(json!({"data": "where does this go"}).to_string())
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let anonymous = created["id"].as_str().unwrap();
    let (status, list) = ts::status_json(
        ts::keyed(&app, Method::GET, "/api/v1/pastes", &t.key)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{list}");
    let ids: Vec<&str> = list["pastes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [id.as_str()],
        "the URL key did not make it the tenant's"
    );
    assert_ne!(anonymous, id);
}

// ---- A16: the not-found limiter ---------------------------------------------

/// 30 reads of absent pastes (compat GET, v1 GET and HEAD, v1 DELETE with a
/// delete token) are 404; the 31st is 429 + `Retry-After`, and so is any paste read
/// from that address while it is blocked; creates are not reads and pass,
/// and another address still gets its 404s and 200s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reading_absent_pastes_gets_an_address_blocked_after_thirty() {
    // Refill lowered to 1/min (the burst stays the default 30) so that no
    // token comes back during the run.
    let app = generous_ip(Db::Sqlite, |s| s.limits.not_found_per_min = 1).await;
    assert_eq!(app.settings.limits.not_found_burst, 30);
    let existing = compat_paste(&app, &app.client).await;
    let absent = |i: usize| {
        let id = random_id();
        match i % 4 {
            0 => app.client.get(app.url(&format!("/api/paste/{id}"))),
            1 => app.client.get(app.url(&format!("/api/v1/pastes/{id}"))),
            // Enumeration by HEAD counts as much as by GET.
            2 => app.client.head(app.url(&format!("/api/v1/pastes/{id}"))),
            _ => app
                .client
                .delete(app.url(&format!("/api/v1/pastes/{id}")))
                // well-formed, so it is looked up (a malformed one is a 401)
                .bearer_auth("A".repeat(43)),
        }
    };
    let (outcomes, _) = in_turn(30, absent).await;
    assert!(outcomes.iter().all(|o| o.status == 404), "{outcomes:?}");
    send(absent(32)).await.assert_limited("31st absent read");
    send(absent(33)).await.assert_limited("32nd absent read");
    let head = send(absent(34)).await;
    assert_eq!(head.status, 429, "a HEAD while blocked: {head:?}");
    assert!(head.retry_after.is_some(), "{head:?}");
    send(app.client.get(app.url(&format!("/api/paste/{existing}"))))
        .await
        .assert_limited("a present paste, read while blocked");
    compat_paste(&app, &app.client).await;

    let other = client_from("127.0.0.2");
    let o = send(other.get(app.url(&format!("/api/paste/{}", random_id())))).await;
    assert_eq!(o.status, 404, "another address: {o:?}");
    let o = send(other.get(app.url(&format!("/api/paste/{existing}")))).await;
    assert_eq!(o.status, 200, "another address: {o:?}");
}

// ---- D5: limiter memory ---------------------------------------------------

/// A server built here rather than through the test kit, to reach its state.
struct Direct {
    base_url: String,
    state: paste_api::AppState,
    _stop: tokio::sync::oneshot::Sender<()>,
    _dir: tempfile::TempDir,
}

async fn spawn_direct(adjust: impl FnOnce(&mut planshare_server::Settings)) -> Direct {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = testkit::settings_from_env(dir.path(), LIMITS_ON);
    adjust(&mut settings);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base_url = format!("http://{}", listener.local_addr().unwrap());
    let server = planshare_server::Server::build(&settings).await.unwrap();
    let state = server.state().clone();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(server.run(listener, async {
        let _ = stopped.await;
    }));
    Direct {
        base_url,
        state,
        _stop: stop,
        _dir: dir,
    }
}

/// D5: 500 guessed keys from 500 distinct source addresses (127.1.y.z):
/// each address has its own failed-auth bucket (all 401, none 429), the
/// server keeps answering, the limiters hold about one entry per address
/// and limiter, and the periodic cleaning (every 10 s) empties them again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_client_addresses_keep_limiter_memory_bounded() {
    // Fast refills make an idle address's entries reclaimable within 0.1 s.
    let server = spawn_direct(|s| s.limits.failed_auth_per_min = 600).await;
    let url = format!("{}/api/v1/pastes", server.base_url);
    let addresses: Vec<String> = (0..500)
        .map(|i| format!("127.1.{}.{}", i / 250, i % 250 + 1))
        .collect();
    let started = Instant::now();
    let mut tasks = JoinSet::new();
    for chunk in addresses.chunks(63) {
        let (chunk, url) = (chunk.to_vec(), url.clone());
        tasks.spawn(async move {
            let mut statuses = Vec::new();
            for (i, ip) in chunk.iter().enumerate() {
                let key = if i % 2 == 0 {
                    unknown_key()
                } else {
                    bad_checksum(&unknown_key())
                };
                let o = send(client_from(ip).get(&url).bearer_auth(key)).await;
                statuses.push((ip.clone(), o.status));
            }
            statuses
        });
    }
    let mut statuses = Vec::new();
    while let Some(part) = tasks.join_next().await {
        statuses.extend(part.unwrap());
    }
    assert_eq!(statuses.len(), 500);
    let refused: Vec<_> = statuses.iter().filter(|(_, s)| *s != 401).collect();
    assert!(
        refused.is_empty(),
        "each address gets its own 401: {refused:?}"
    );

    let client = Client::new();
    let health = client
        .get(format!("{}/readyz", server.base_url))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200, "still serving");
    let held = server.state.limiter_entries();
    assert!(
        held <= 1_010,
        "entries after 500 addresses (per-IP + failed-auth): {held}"
    );
    if started.elapsed() < Duration::from_secs(8) {
        // No cleaning has run yet (the first is 9 s after start-up).
        assert!(held >= 500, "one entry per address at least: {held}");
    }

    // The upkeep cleans every 10 s; wait for one cleaning after the last
    // request (a loaded machine may take longer than a cleaning period to
    // send the 500).
    let deadline = Instant::now() + Duration::from_secs(12);
    let mut left = held;
    while left > 5 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(250)).await;
        left = server.state.limiter_entries();
    }
    assert!(left <= 5, "idle entries reclaimed: {left} of {held} left");
}
