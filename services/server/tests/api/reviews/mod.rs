//! `/api/v1/reviews`: live shared reviews over HTTP, on every store backend.
//! Bodies carry opaque text where clients put ciphertext: the server never
//! reads it (the CLI's tests use real encryption end to end).

mod bad_input;
mod events;
mod flow;
mod races;
mod roles;
mod rounds;
mod stale;

use serde_json::{Value, json};
use testkit::TestApp;

/// A 43-character digest-shaped string, distinct per `n`.
pub fn digest(n: u32) -> String {
    format!("d{n:0>42}")
}

/// An answer: status and JSON body (`Null` when empty or not JSON).
pub struct Answer {
    pub status: u16,
    pub body: Value,
    pub text: String,
}

/// Sends `method path` with an optional bearer token and JSON body.
pub async fn call(
    app: &TestApp,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> Answer {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut request = app.client.request(method, app.url(path));
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_string());
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    Answer {
        status,
        body: serde_json::from_str(&text).unwrap_or(Value::Null),
        text,
    }
}

/// A review created on `app`: its id and owner token.
pub struct Review {
    pub id: String,
    pub owner: String,
}

impl Review {
    /// Creates a review whose first version is `data`.
    pub async fn create(app: &TestApp, data: &str) -> Review {
        let answer = call(
            app,
            "POST",
            "/api/v1/reviews",
            None,
            Some(json!({"version": {"data": data, "digest": digest(1)}})),
        )
        .await;
        assert_eq!(answer.status, 201, "create: {}", answer.text);
        Review {
            id: answer.body["id"].as_str().unwrap().to_owned(),
            owner: answer.body["ownerToken"].as_str().unwrap().to_owned(),
        }
    }

    pub fn path(&self, rest: &str) -> String {
        format!("/api/v1/reviews/{}{rest}", self.id)
    }

    /// Mints a reviewer link: its id and token.
    pub async fn link(&self, app: &TestApp) -> (String, String) {
        self.link_with(app, json!({})).await
    }

    /// Mints a link with role `role` (`reviewer` or `approver`).
    pub async fn link_as(&self, app: &TestApp, role: &str) -> (String, String) {
        self.link_with(app, json!({"role": role})).await
    }

    async fn link_with(&self, app: &TestApp, body: Value) -> (String, String) {
        let answer = call(
            app,
            "POST",
            &self.path("/links"),
            Some(&self.owner),
            Some(body),
        )
        .await;
        assert_eq!(answer.status, 201, "link: {}", answer.text);
        (
            answer.body["id"].as_str().unwrap().to_owned(),
            answer.body["token"].as_str().unwrap().to_owned(),
        )
    }

    /// `PUT …/comments` as `token`.
    pub async fn comment(&self, app: &TestApp, token: &str, name: &str, data: &str) -> Answer {
        call(
            app,
            "PUT",
            &self.path("/comments"),
            Some(token),
            Some(json!({"name": name, "version": 1, "data": data})),
        )
        .await
    }

    /// `POST …/decision` as `token` on `version`, with an optional body
    /// extra (`name`, `data`).
    pub async fn decide(
        &self,
        app: &TestApp,
        token: &str,
        decision: &str,
        version: u64,
        extra: Value,
    ) -> Answer {
        let mut body = json!({"decision": decision, "version": version});
        if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
            body.extend(extra.clone());
        }
        call(
            app,
            "POST",
            &self.path("/decision"),
            Some(token),
            Some(body),
        )
        .await
    }

    /// `POST …/versions` as the owner: `data` with digest `digest(n)` on
    /// `parent`, a progress push or not.
    pub async fn push(&self, app: &TestApp, n: u32, parent: u64, progress: bool) -> Answer {
        let mut body =
            json!({"data": format!("cipher-v{n}"), "digest": digest(n), "parent": parent});
        if progress {
            body["progress"] = json!(true);
        }
        call(
            app,
            "POST",
            &self.path("/versions"),
            Some(&self.owner),
            Some(body),
        )
        .await
    }

    /// The long poll after `after`, waiting up to `wait` seconds.
    pub async fn poll(&self, app: &TestApp, token: &str, after: u64, wait: u64) -> Answer {
        let response = app
            .client
            .get(app.url(&self.path(&format!("/events?after={after}&wait={wait}"))))
            .header("authorization", format!("Bearer {token}"))
            .header("accept", "application/json")
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        Answer {
            status,
            body: serde_json::from_str(&text).unwrap_or(Value::Null),
            text,
        }
    }
}

/// The kinds of a long poll's events, in order.
pub fn kinds(page: &Value) -> Vec<String> {
    page["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap().to_owned())
        .collect()
}
