//! Concurrent changes of one review: exactly one winner, nothing half done.

use serde_json::json;
use testkit::TestApp;

use super::{Review, call, digest};

#[tokio::test]
async fn two_pushes_on_one_parent_give_one_version_and_one_conflict() {
    let app = TestApp::spawn(&[]).await;
    for round in 0..5u32 {
        let review = Review::create(&app, "v1").await;
        let versions = review.path("/versions");
        let push = |n: u32| {
            call(
                &app,
                "POST",
                &versions,
                Some(&review.owner),
                Some(json!({"data": format!("v2-{n}"), "digest": digest(100 + n), "parent": 1})),
            )
        };
        let (a, b) = tokio::join!(push(1), push(2));
        let mut statuses = [a.status, b.status];
        statuses.sort_unstable();
        assert_eq!(
            statuses,
            [201, 409],
            "round {round}: {} / {}",
            a.text,
            b.text
        );
        let loser = if a.status == 409 { &a } else { &b };
        assert_eq!(loser.body["code"], "stale-parent");
        let read = call(&app, "GET", &review.path(""), Some(&review.owner), None).await;
        assert_eq!(read.body["latest"], 2);
        assert_eq!(read.body["versions"].as_array().unwrap().len(), 2);
    }
}

#[tokio::test]
async fn two_links_claiming_one_name_at_once_leave_one_holder() {
    let app = TestApp::spawn(&[]).await;
    for round in 0..5 {
        let review = Review::create(&app, "v1").await;
        let (_, a) = review.link(&app).await;
        let (_, b) = review.link(&app).await;
        let (ra, rb) = tokio::join!(
            review.comment(&app, &a, "Sam", "from a"),
            review.comment(&app, &b, "sam", "from b"),
        );
        let mut statuses = [ra.status, rb.status];
        statuses.sort_unstable();
        assert_eq!(
            statuses,
            [200, 409],
            "round {round}: {} / {}",
            ra.text,
            rb.text
        );
        let loser = if ra.status == 409 { &ra } else { &rb };
        assert_eq!(loser.body["code"], "name-taken");
        let read = call(&app, "GET", &review.path(""), Some(&review.owner), None).await;
        assert_eq!(
            read.body["comments"].as_array().unwrap().len(),
            1,
            "the loser stored nothing"
        );
    }
}

#[tokio::test]
async fn one_link_writing_from_two_tabs_under_two_names_keeps_one() {
    let app = TestApp::spawn(&[]).await;
    for round in 0..5 {
        let review = Review::create(&app, "v1").await;
        let (_, token) = review.link(&app).await;
        let (first, second) = tokio::join!(
            review.comment(&app, &token, "tab one", "one"),
            review.comment(&app, &token, "tab two", "two"),
        );
        let mut statuses = [first.status, second.status];
        statuses.sort_unstable();
        assert_eq!(
            statuses,
            [200, 409],
            "round {round}: {} / {}",
            first.text,
            second.text
        );
        let loser = if first.status == 409 { &first } else { &second };
        assert_eq!(loser.body["code"], "name-bound");
        let read = call(&app, "GET", &review.path(""), Some(&token), None).await;
        let name = read.body["you"]["name"].as_str().unwrap().to_owned();
        assert_eq!(read.body["comments"][0]["name"], name.as_str());
        let expected_data = if name == "tab one" { "one" } else { "two" };
        assert_eq!(read.body["comments"][0]["data"], expected_data);
    }
}

#[tokio::test]
async fn a_revoked_links_name_can_be_taken_again() {
    let app = TestApp::spawn(&[]).await;
    let review = Review::create(&app, "v1").await;
    let (first_link, first) = review.link(&app).await;
    let (_, second) = review.link(&app).await;
    assert_eq!(review.comment(&app, &first, "robin", "a").await.status, 200);
    let taken = review.comment(&app, &second, "ROBIN", "b").await;
    assert_eq!(
        (taken.status, taken.body["code"].as_str()),
        (409, Some("name-taken"))
    );
    let revoked = call(
        &app,
        "DELETE",
        &review.path(&format!("/links/{first_link}")),
        Some(&review.owner),
        None,
    )
    .await;
    assert_eq!(revoked.status, 204);
    assert_eq!(
        review.comment(&app, &second, "robin", "b").await.status,
        200
    );
}

#[tokio::test]
async fn reads_never_fail_while_comment_sets_are_replaced_and_withdrawn() {
    // Each replacement or withdrawal removes the blob the previous set was
    // in right after its commit: a read that took the catalog's snapshot
    // before it must read again, never answer that the review is gone.
    let app = std::sync::Arc::new(TestApp::spawn(&[]).await);
    let review = Review::create(&app, "v1").await;
    let mut writers = Vec::new();
    for name in ["ana", "ben", "cy"] {
        let (_, token) = review.link(&app).await;
        writers.push((token, name));
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let written = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let mut tasks = Vec::new();
    for (token, name) in writers {
        let (app, review, stop, written) =
            (app.clone(), review.path(""), stop.clone(), written.clone());
        tasks.push(tokio::spawn(async move {
            let comments = format!("{review}/comments");
            let mut round = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let answer = if round % 3 == 2 {
                    call(&app, "DELETE", &comments, Some(&token), None).await
                } else {
                    let body =
                        json!({"name": name, "version": 1, "data": format!("{name} {round}")});
                    call(&app, "PUT", &comments, Some(&token), Some(body)).await
                };
                assert!(answer.status < 300, "{name}: {}", answer.text);
                round += 1;
                written.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            round
        }));
    }
    let mut reads = 0;
    let mut failures = Vec::new();
    let started = std::time::Instant::now();
    // Reads go on until the writers made enough changes to race with,
    // however busy the machine is.
    while reads < 400
        || started.elapsed() < std::time::Duration::from_secs(2)
        || written.load(std::sync::atomic::Ordering::Relaxed) < 150
    {
        let read = call(&app, "GET", &review.path(""), Some(&review.owner), None).await;
        if read.status != 200 {
            failures.push(format!("{} {}", read.status, read.text));
        }
        reads += 1;
        if started.elapsed() > std::time::Duration::from_secs(60) {
            break;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut writes = 0;
    for task in tasks {
        writes += task.await.unwrap();
    }
    assert!(writes > 100, "the writers kept writing ({writes} writes)");
    assert!(
        failures.is_empty(),
        "{} of {reads} reads failed during {writes} writes, e.g. {:?}",
        failures.len(),
        failures.first()
    );
}
