//! The reference web frontend (README, "Web frontend"): the chat at `/`, the ops page at `/ops`,
//! their assets under `/web/`. The files are `web/dist` (the committed esbuild bundle of `web/src`)
//! embedded in the binary at compile time, so serving them needs nothing at run time.

use axum::extract::Path;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use include_dir::{include_dir, Dir};

use super::error::ApiError;

static DIST: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/web/dist");

/// The `Content-Type` of an embedded file, by extension.
fn content_type(name: &str) -> &'static str {
    match name.rsplit('.').next() {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("json") => "application/json",
        _ => "application/octet-stream",
    }
}

/// The embedded file `name`, or 404.
fn file(name: &str) -> Response {
    let Some(f) = DIST.get_file(name) else {
        return ApiError::NotFound(format!("no web asset {name:?}")).into_response();
    };
    let mut response = (StatusCode::OK, f.contents()).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type(name)));
    // The pages always revalidate; assets too (their names carry no hash).
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    response
}

/// `GET /`: the chat.
pub async fn index() -> Response {
    file("index.html")
}

/// `GET /ops`: the ops page.
pub async fn ops() -> Response {
    file("ops.html")
}

/// `GET /web/{name}`: a script or stylesheet of the pages.
pub async fn asset(Path(name): Path<String>) -> Response {
    file(&name)
}
