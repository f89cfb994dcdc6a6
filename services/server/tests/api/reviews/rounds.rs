//! The review loop over HTTP, on SQLite and PostgreSQL catalogs: rounds
//! through three decisions, approver links, decisions bound to a version
//! (`409 stale-version`), progress pushes that keep an approval and pushes
//! that void one, and two approvers deciding at once.

use serde_json::{Value, json};

use super::{Review, call, kinds};
use crate::tenants_support::{databases, spawn};

#[tokio::test]
async fn a_review_goes_through_rounds_to_an_approval_of_one_version() {
    for db in databases().await {
        let app = spawn(db, &[], |_| {}).await;
        let review = Review::create(&app, "cipher-v1").await;
        let (_, reviewer) = review.link(&app).await;
        let (ann_link, ann) = review.link_as(&app, "approver").await;

        // Round 1: the owner asks for changes on v1.
        let decided = review
            .decide(
                &app,
                &review.owner,
                "changes_requested",
                1,
                json!({"data": "fix-it"}),
            )
            .await;
        assert_eq!(decided.status, 200, "{db:?}: {}", decided.text);
        assert_eq!(
            (
                &decided.body["round"],
                &decided.body["version"],
                &decided.body["by"]["role"]
            ),
            (&json!(1), &json!(1), &json!("owner")),
            "{db:?}"
        );
        // Answers to the feedback are comments, still taken.
        let answer = review.comment(&app, &reviewer, "rex", "question").await;
        assert_eq!(answer.status, 200, "{db:?}: {}", answer.text);

        // The revision opens round 2 at the same links.
        let pushed = review.push(&app, 2, 1, false).await;
        assert_eq!(pushed.status, 201, "{db:?}: {}", pushed.text);
        assert_eq!(pushed.body, json!({"n": 2, "round": 2}), "{db:?}");
        let read = call(&app, "GET", &review.path(""), Some(&ann), None).await;
        assert_eq!(
            (
                &read.body["state"],
                &read.body["round"],
                &read.body["you"]["role"]
            ),
            (&json!("open"), &json!(2), &json!("approver")),
            "{db:?}"
        );
        assert!(
            read.body.get("decision").is_none(),
            "{db:?}: round 2 is undecided"
        );

        // A reviewer does not decide; an approver needs a name.
        let refused = review
            .decide(&app, &reviewer, "approved", 2, json!({}))
            .await;
        assert_eq!(
            (refused.status, refused.body["code"].as_str()),
            (403, Some("approver-only")),
            "{db:?}"
        );
        let nameless = review.decide(&app, &ann, "approved", 2, json!({})).await;
        assert_eq!(
            (nameless.status, nameless.body["code"].as_str()),
            (409, Some("name-required")),
            "{db:?}"
        );
        let taken = review
            .decide(&app, &ann, "approved", 2, json!({"name": "REX"}))
            .await;
        assert_eq!(
            (taken.status, taken.body["code"].as_str()),
            (409, Some("name-taken")),
            "{db:?}"
        );
        let decided = review
            .decide(&app, &ann, "changes_requested", 2, json!({"name": "Ann"}))
            .await;
        assert_eq!(decided.status, 200, "{db:?}: {}", decided.text);

        // Round 3: approved on v3.
        assert_eq!(review.push(&app, 3, 2, false).await.body["round"], 3);
        let approved = review.decide(&app, &ann, "approved", 3, json!({})).await;
        assert_eq!(approved.status, 200, "{db:?}: {}", approved.text);
        assert_eq!(
            approved.body["by"],
            json!({"role": "approver", "link": ann_link, "name": "Ann"})
        );

        // A progress push keeps the approval on v3.
        let progress = review.push(&app, 4, 3, true).await;
        assert_eq!(progress.body, json!({"n": 4, "round": 3}), "{db:?}");
        let read = call(&app, "GET", &review.path(""), Some(&reviewer), None).await;
        assert_eq!(
            (
                &read.body["state"],
                &read.body["latest"],
                &read.body["decision"]["version"]
            ),
            (&json!("approved"), &json!(4), &json!(3)),
            "{db:?}: still approved, on v3"
        );
        assert_eq!(read.body["versions"][3]["progress"], true, "{db:?}");
        let again = review
            .decide(&app, &review.owner, "approved", 4, json!({}))
            .await;
        assert_eq!(
            (again.status, again.body["code"].as_str()),
            (409, Some("review-decided")),
            "{db:?}"
        );

        // Any other push voids it and opens round 4.
        assert_eq!(review.push(&app, 5, 4, false).await.body["round"], 4);
        let read = call(&app, "GET", &review.path(""), Some(&review.owner), None).await;
        assert_eq!(
            (&read.body["state"], &read.body["round"]),
            (&json!("open"), &json!(4)),
            "{db:?}"
        );
        let history: Vec<Value> = read.body["decisions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                json!([
                    d["round"],
                    d["version"],
                    d["decision"],
                    d["by"]["name"],
                    d["voidedBy"]
                ])
            })
            .collect();
        assert_eq!(
            history,
            [
                json!([1, 1, "changes_requested", null, null]),
                json!([2, 2, "changes_requested", "Ann", null]),
                json!([3, 3, "approved", "Ann", 5]),
            ],
            "{db:?}"
        );
        assert_eq!(read.body["decisions"][0]["data"], "fix-it", "{db:?}");
        let roles: Vec<&Value> = read.body["links"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| &l["role"])
            .collect();
        assert!(roles.contains(&&json!("approver")) && roles.contains(&&json!("reviewer")));

        // The log says what each push did.
        let page = review.poll(&app, &review.owner, 0, 0).await;
        let versions: Vec<&Value> = page.body["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["event"] == "version")
            .map(|e| &e["data"])
            .collect();
        assert_eq!(
            versions,
            [
                &json!({"n": 1, "round": 1}),
                &json!({"n": 2, "round": 2, "reopened": true}),
                &json!({"n": 3, "round": 3, "reopened": true}),
                &json!({"n": 4, "round": 3, "progress": true}),
                &json!({"n": 5, "round": 4, "reopened": true, "voided": true}),
            ],
            "{db:?}"
        );
        assert_eq!(
            kinds(&page.body)
                .iter()
                .filter(|k| *k == "decision")
                .count(),
            3
        );
    }
}

#[tokio::test]
async fn a_decision_on_a_version_that_is_no_longer_the_latest_is_refused() {
    for db in databases().await {
        let app = spawn(db, &[], |_| {}).await;
        let review = Review::create(&app, "cipher-v1").await;
        let (_, ann) = review.link_as(&app, "approver").await;
        assert_eq!(review.push(&app, 2, 1, false).await.status, 201);
        // Ann reads v2; the owner pushes v3 meanwhile.
        let read = call(&app, "GET", &review.path(""), Some(&ann), None).await;
        assert_eq!(read.body["latest"], 2);
        assert_eq!(review.push(&app, 3, 2, false).await.status, 201);
        let stale = review
            .decide(&app, &ann, "approved", 2, json!({"name": "Ann"}))
            .await;
        assert_eq!(
            (stale.status, stale.body["code"].as_str()),
            (409, Some("stale-version")),
            "{db:?}: {}",
            stale.text
        );
        assert!(
            stale.body["error"].as_str().unwrap().contains("version 3"),
            "{}",
            stale.text
        );
        let read = call(&app, "GET", &review.path(""), Some(&ann), None).await;
        assert_eq!(
            (
                &read.body["state"],
                &read.body["decisions"],
                &read.body["you"]["name"]
            ),
            (&json!("open"), &json!([]), &Value::Null),
            "{db:?}: nothing changed, not even the name"
        );
        let fresh = review
            .decide(&app, &ann, "approved", 3, json!({"name": "Ann"}))
            .await;
        assert_eq!(fresh.status, 200, "{db:?}: {}", fresh.text);
    }
}

#[tokio::test]
async fn two_approvers_deciding_at_once_leave_one_decision() {
    for db in databases().await {
        let app = spawn(db, &[], |_| {}).await;
        for _ in 0..3 {
            let review = Review::create(&app, "cipher-v1").await;
            let (_, ann) = review.link_as(&app, "approver").await;
            let (_, bea) = review.link_as(&app, "approver").await;
            let (a, b) = tokio::join!(
                review.decide(&app, &ann, "approved", 1, json!({"name": "Ann"})),
                review.decide(&app, &bea, "changes_requested", 1, json!({"name": "Bea"})),
            );
            let mut statuses = [a.status, b.status];
            statuses.sort_unstable();
            assert_eq!(statuses, [200, 409], "{db:?}: {} / {}", a.text, b.text);
            let loser = if a.status == 409 { &a } else { &b };
            assert_eq!(loser.body["code"], "review-decided", "{db:?}");
            let read = call(&app, "GET", &review.path(""), Some(&review.owner), None).await;
            let winner = if a.status == 200 { "Ann" } else { "Bea" };
            assert_eq!(
                read.body["decisions"].as_array().unwrap().len(),
                1,
                "{db:?}"
            );
            assert_eq!(read.body["decision"]["by"]["name"], winner, "{db:?}");
        }
    }
}
