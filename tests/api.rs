//! The HTTP API's edges: bad requests get JSON 4xx errors, the read endpoints, no secrets.

use serde_json::{json, Value};

use crate::common::*;

async fn post_raw(app: &TestApp, body: impl Into<reqwest::Body>, content_type: &str) -> (u16, Value) {
    let resp = app
        .client
        .post(format!("{}/v1/chat", app.base))
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn bad_requests_get_json_errors() {
    let app = spawn_app_with(Setup::default(), |_| {}).await;
    let cases: Vec<(Vec<u8>, &str, u16, &str)> = vec![
        (b"{not json".to_vec(), "application/json", 400, "malformed_json"),
        (br#"{"query": "hi"}"#.to_vec(), "application/json", 400, "invalid_body"),
        (br#"{"query": 5, "user_id": "u"}"#.to_vec(), "application/json", 400, "invalid_body"),
        (br#"{"query": "  ", "user_id": "u"}"#.to_vec(), "application/json", 400, "empty_query"),
        (br#"{"query": "hi", "user_id": ""}"#.to_vec(), "application/json", 400, "invalid_user_id"),
        (
            br#"{"query": "hi", "user_id": "u", "thread_id": "has space"}"#.to_vec(),
            "application/json",
            400,
            "invalid_thread_id",
        ),
        (br#"{"query": "hi", "user_id": "u"}"#.to_vec(), "text/plain", 415, "unsupported_media_type"),
        (
            serde_json::to_vec(&json!({ "query": "长".repeat(4001), "user_id": "u" })).unwrap(),
            "application/json",
            400,
            "query_too_long",
        ),
        (
            serde_json::to_vec(&json!({ "query": "x".repeat(300 * 1024), "user_id": "u" })).unwrap(),
            "application/json",
            413,
            "payload_too_large",
        ),
    ];
    for (body, ct, status, code) in cases {
        let (got, err) = post_raw(&app, body, ct).await;
        assert_eq!((got, err["error"]["code"].as_str().unwrap_or_default()), (status, code), "{err}");
        assert!(err["error"]["message"].as_str().is_some_and(|m| !m.is_empty()));
    }
    let too_many: serde_json::Map<String, Value> = (0..40).map(|i| (format!("k{i}"), json!(i))).collect();
    let (got, err) = post_raw(
        &app,
        serde_json::to_vec(&json!({ "query": "hi", "user_id": "u", "slots": too_many })).unwrap(),
        "application/json",
    )
    .await;
    assert_eq!((got, err["error"]["code"].as_str().unwrap()), (400, "too_many_slots"));

    let resp = app.client.get(format!("{}/v1/nope", app.base)).send().await.unwrap();
    assert_eq!(resp.status(), 404);
    assert_eq!(resp.json::<Value>().await.unwrap()["error"]["code"], "not_found");
    let resp = app.client.get(format!("{}/v1/chat", app.base)).send().await.unwrap();
    assert_eq!(resp.status(), 405);
    assert_eq!(resp.json::<Value>().await.unwrap()["error"]["code"], "method_not_allowed");
    // Still healthy after all that.
    assert_eq!(app.get("/healthz").await["status"], "ok");
}

#[tokio::test]
async fn agents_endpoint_shows_cards_without_secrets() {
    std::env::set_var("SB_API_TEST_SECRET", "very-secret-value");
    let app = spawn_app_with(Setup::default(), |c| {
        c["agents"][0]["endpoint"]["headers"] = json!({ "Authorization": "Bearer ${SB_API_TEST_SECRET}" });
    })
    .await;
    let resp = app.client.get(format!("{}/v1/agents", app.base)).send().await.unwrap();
    let text = resp.text().await.unwrap();
    assert!(!text.contains("very-secret-value"));
    assert!(!text.contains("Authorization"), "headers are not shown");
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["version"], 1);
    assert_eq!(body["hash"].as_str().unwrap().len(), 64);
    let hotel = body["agents"].as_array().unwrap().iter().find(|a| a["id"] == "hotel_agent").unwrap();
    assert_eq!(hotel["required_semantic_keys"][0]["widget"], "city_picker");
    assert!(hotel["input_schema"]["properties"]["city"].is_object());
    // The secret is really sent to the agent.
    done(&app.ask("查航班CA1234", None).await);
    let call = &app.calls("flight_agent")[0];
    let auth = call.headers.iter().find(|(k, _)| k == "authorization").map(|(_, v)| v.as_str());
    assert_eq!(auth, Some("Bearer very-secret-value"));
}

#[tokio::test]
async fn widgets_config_health_and_readiness() {
    let app = spawn_app_with(Setup::default(), |_| {}).await;
    let widgets = app.get("/v1/widgets").await;
    let on_disk: Value =
        serde_json::from_str(&std::fs::read_to_string(repo().join("widgets_map.json")).unwrap()).unwrap();
    assert_eq!(widgets, on_disk);
    let config = app.get("/v1/config").await;
    assert_eq!(config["version"], 1);
    assert!(config["loaded_at"].is_string());
    assert!(config["last_error"].is_null());
    assert_eq!(app.get("/readyz").await["status"], "ready");
}

#[tokio::test]
async fn config_validate_checks_a_candidate_without_applying_it() {
    let app = spawn_app_with(Setup::default(), |_| {}).await;
    let url = format!("{}/v1/config/validate", app.base);
    let good = serde_yaml_ng::to_string(&app.config).unwrap();
    // An admin endpoint: the bearer token is required.
    let resp = app.client.post(&url).body(good.clone()).send().await.unwrap();
    assert_eq!(resp.status(), 401);
    let resp = app.client.post(&url).bearer_auth("test-admin").body(good).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.json::<Value>().await.unwrap()["valid"], true);

    let mut bad = app.config.clone();
    bad["agents"][0]["required_semantic_keys"][0]["widget"] = json!("ghost_widget");
    bad["agents"][1]["id"] = json!("Bad Id");
    let resp = app
        .client
        .post(&url)
        .bearer_auth("test-admin")
        .body(serde_yaml_ng::to_string(&bad).unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 422);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "invalid_config");
    assert!(!body["error"]["errors"].as_array().unwrap().is_empty());
    assert_eq!(app.get("/v1/config").await["version"], 1, "nothing applied");
}

#[tokio::test]
async fn config_validate_refuses_files_that_are_not_regular_or_too_large() {
    // Issue 12 #6: `widgets_map: /dev/zero` never answered and grew memory without bound.
    let app = spawn_app_with(Setup::default(), |_| {}).await;
    let url = format!("{}/v1/config/validate", app.base);
    let dir = app.config_path.parent().unwrap();
    let huge = dir.join("huge.json");
    let file = std::fs::File::create(&huge).unwrap();
    file.set_len(switchboard::files::MAX_FILE_BYTES + 1).unwrap();
    for (widgets, why) in
        [("/dev/zero", "not a regular file"), ("huge.json", "larger than"), (".", "not a regular file")]
    {
        let mut cfg = app.config.clone();
        cfg["widgets_map"] = json!(widgets);
        let resp = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            app.client.post(&url).bearer_auth("test-admin").body(serde_yaml_ng::to_string(&cfg).unwrap()).send(),
        )
        .await
        .unwrap_or_else(|_| panic!("validating widgets_map: {widgets} answered"))
        .unwrap();
        assert_eq!(resp.status(), 422, "{widgets}");
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["error"]["code"], "invalid_config");
        let errors = body["error"]["errors"].as_array().unwrap();
        assert!(
            errors.iter().any(|e| e["message"].as_str().unwrap().contains(why)
                && e["file"].as_str().unwrap().ends_with(widgets.trim_start_matches('/'))),
            "{widgets}: {body:#}"
        );
    }
}

#[tokio::test]
async fn every_error_has_the_json_error_shape() {
    // Issue 12 #10: 431 came with an empty body; 413 and 400 on /a2a, /v1/config/validate and
    // the /v1/sessions query string were plain text.
    let app = spawn_app_with(Setup::default(), |_| {}).await;
    let big = "x".repeat(300 * 1024);
    let mut many = reqwest::header::HeaderMap::new();
    for i in 0..80 {
        many.insert(
            reqwest::header::HeaderName::from_bytes(format!("x-h{i}").as_bytes()).unwrap(),
            "v".parse().unwrap(),
        );
    }
    let c = &app.client;
    let b = &app.base;
    let cases = [
        ("431 on too many headers", c.get(format!("{b}/healthz")).headers(many), 431, "headers_too_large"),
        ("413 on /a2a", c.post(format!("{b}/a2a")).body(big.clone()), 413, "payload_too_large"),
        (
            "413 on /v1/config/validate",
            c.post(format!("{b}/v1/config/validate")).bearer_auth("test-admin").body(big.clone()),
            413,
            "payload_too_large",
        ),
        (
            "400 on a bad /v1/sessions query",
            c.get(format!("{b}/v1/sessions/t?user_id=a&user_id=b")),
            400,
            "bad_request",
        ),
        ("404 on an unknown path", c.get(format!("{b}/nope")), 404, "not_found"),
    ];
    for (what, req, status, code) in cases {
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), status, "{what}");
        let ct = resp.headers()["content-type"].to_str().unwrap().to_string();
        assert!(ct.starts_with("application/json"), "{what}: {ct}");
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["error"]["code"], code, "{what}: {body}");
        assert!(!body["error"]["message"].as_str().unwrap().is_empty(), "{what}: {body}");
    }
    // JSON-RPC errors on /a2a stay JSON-RPC.
    let resp: Value = c.post(format!("{b}/a2a")).body("{not json").send().await.unwrap().json().await.unwrap();
    assert_eq!(resp["error"]["code"], -32700, "{resp}");
}

#[tokio::test]
async fn the_bearer_scheme_is_case_insensitive() {
    // Issue 12 #11: `bearer` in lower case was refused (RFC 7235: the scheme is case-insensitive).
    let app = spawn_app_with(Setup::default(), |_| {}).await;
    let url = format!("{}/v1/admin/reload", app.base);
    for (value, status) in [
        ("bearer test-admin", 200),
        ("BEARER test-admin", 200),
        ("Bearer  test-admin ", 200),
        ("Bearer test-admi", 401),
        ("Basic test-admin", 401),
        ("bearer", 401),
        ("test-admin", 401),
    ] {
        let resp = app.client.post(&url).header("authorization", value).send().await.unwrap();
        assert_eq!(resp.status(), status, "{value:?}");
    }
}

#[tokio::test]
async fn the_web_frontend_is_served_from_the_binary() {
    let app = spawn_app_with(Setup::default(), |_| {}).await;
    let get = |path: &str| app.client.get(format!("{}{path}", app.base)).send();
    for (path, kind, needle) in [
        ("/", "text/html", "/web/app.js"),
        ("/ops", "text/html", "/web/ops.js"),
        ("/web/app.js", "text/javascript", "/v1/ag-ui"),
        ("/web/style.css", "text/css", ".subagent"),
    ] {
        let resp = get(path).await.unwrap();
        assert_eq!(resp.status(), 200, "{path}");
        let ct = resp.headers()["content-type"].to_str().unwrap().to_string();
        assert!(ct.starts_with(kind), "{path}: {ct}");
        assert!(resp.text().await.unwrap().contains(needle), "{path} is the committed bundle");
    }
    let missing = get("/web/nope.js").await.unwrap();
    assert_eq!(missing.status(), 404);
    assert_eq!(missing.json::<Value>().await.unwrap()["error"]["code"], "not_found");
}
