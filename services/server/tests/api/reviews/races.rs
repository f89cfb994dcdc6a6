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
