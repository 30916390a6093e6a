//! The one error type of the HTTP API: every failure is `{"error": {"code", "message"}}` with the
//! right status, including malformed JSON bodies (via [`ApiJson`]).

use axum::extract::rejection::JsonRejection;
use axum::extract::FromRequest;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// An API failure, mapped once to a status and the JSON error body.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 400: the request is malformed or fails a rule (`code` says which).
    #[error("{message}")]
    BadRequest {
        /// Stable machine-readable code.
        code: &'static str,
        /// Human-readable detail.
        message: String,
    },
    /// 413: the body is larger than allowed.
    #[error("request body too large")]
    PayloadTooLarge,
    /// 431: too many request headers, or too large ones.
    #[error("request headers too large: at most {MAX_HEADERS} headers of {MAX_HEADER_BYTES} bytes in all")]
    HeadersTooLarge,
    /// 414: the request target is longer than the HTTP parser accepts.
    #[error("the request URI is too long")]
    UriTooLong,
    /// 408: the body did not arrive in time (`--body-read-timeout`).
    #[error("the request body did not arrive in time")]
    RequestTimeout,
    /// 415: the body is not JSON.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// 401: a bearer token is required and missing or wrong.
    #[error("a valid admin bearer token is required")]
    Unauthorized,
    /// 403: the endpoint is disabled in this deployment.
    #[error("{0}")]
    Forbidden(String),
    /// 401 + `WWW-Authenticate`: the caller's credentials are missing, invalid or expired
    /// (`auth.mode` `jwt` / `trusted_header`).
    #[error("{message}")]
    Unauthenticated {
        /// The `WWW-Authenticate` value.
        challenge: String,
        /// What is wrong (never the token).
        message: String,
    },
    /// 403: the request names a user other than the verified one.
    #[error("the request names user {named:?}, but the credentials are those of another user")]
    UserMismatch {
        /// The user the request named.
        named: String,
    },
    /// 503: the keys to verify the caller's token cannot be fetched.
    #[error("{0}")]
    AuthUnavailable(String),
    /// 404: no such route or resource.
    #[error("{0}")]
    NotFound(String),
    /// 405: the route exists with another method.
    #[error("method not allowed")]
    MethodNotAllowed,
    /// 422: a config candidate failed validation (`errors` listed in the body).
    #[error("the config is invalid")]
    InvalidConfig(Vec<crate::config::ConfigError>),
    /// 503: the service cannot take the request now.
    #[error("{0}")]
    Unavailable(String),
    /// 503 + `Retry-After` (seconds): too many requests in flight.
    #[error("the supervisor is at capacity; retry in {0} s")]
    Overloaded(u64),
    /// 429 + `Retry-After` (seconds): this user's rate is exceeded.
    #[error("too many requests from this user; retry in {0} s")]
    RateLimited(u64),
}

impl ApiError {
    /// A 400 with `code` and `message`.
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::BadRequest { code, message: message.into() }
    }

    /// The error's status and its JSON body `{"error": {"code", "message"}}` (with `errors` for
    /// [`ApiError::InvalidConfig`]).
    pub fn status_and_body(&self) -> (StatusCode, serde_json::Value) {
        let (status, code) = self.status_and_code();
        let mut body = json!({ "error": { "code": code, "message": self.to_string() } });
        if let Self::InvalidConfig(errors) = self {
            body["error"]["errors"] = json!(errors);
        }
        (status, body)
    }

    fn status_and_code(&self) -> (StatusCode, &'static str) {
        match self {
            Self::BadRequest { code, .. } => (StatusCode::BAD_REQUEST, code),
            Self::PayloadTooLarge => (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large"),
            Self::RequestTimeout => (StatusCode::REQUEST_TIMEOUT, "request_timeout"),
            Self::HeadersTooLarge => (StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, "headers_too_large"),
            Self::UriTooLong => (StatusCode::URI_TOO_LONG, "uri_too_long"),
            Self::UnsupportedMediaType(_) => (StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type"),
            Self::Unauthorized => (StatusCode::UNAUTHORIZED, "unauthorized"),
            Self::Forbidden(_) => (StatusCode::FORBIDDEN, "forbidden"),
            Self::Unauthenticated { .. } => (StatusCode::UNAUTHORIZED, "unauthenticated"),
            Self::UserMismatch { .. } => (StatusCode::FORBIDDEN, "user_mismatch"),
            Self::AuthUnavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "auth_unavailable"),
            Self::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            Self::MethodNotAllowed => (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
            Self::InvalidConfig(_) => (StatusCode::UNPROCESSABLE_ENTITY, "invalid_config"),
            Self::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            Self::Overloaded(_) => (StatusCode::SERVICE_UNAVAILABLE, "overloaded"),
            Self::RateLimited(_) => (StatusCode::TOO_MANY_REQUESTS, "rate_limited"),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, body) = self.status_and_body();
        let mut resp = (status, axum::Json(body)).into_response();
        if let Self::Unauthenticated { challenge, .. } = &self {
            if let Ok(v) = axum::http::HeaderValue::from_str(challenge) {
                resp.headers_mut().insert(axum::http::header::WWW_AUTHENTICATE, v);
            }
        }
        if let Self::Overloaded(secs) | Self::RateLimited(secs) = self {
            if let Ok(v) = axum::http::HeaderValue::from_str(&secs.to_string()) {
                resp.headers_mut().insert(axum::http::header::RETRY_AFTER, v);
            }
        }
        resp
    }
}

impl From<JsonRejection> for ApiError {
    fn from(rejection: JsonRejection) -> Self {
        match rejection {
            JsonRejection::MissingJsonContentType(_) => {
                Self::UnsupportedMediaType("expected Content-Type: application/json".into())
            }
            JsonRejection::BytesRejection(r) if r.status() == StatusCode::PAYLOAD_TOO_LARGE => Self::PayloadTooLarge,
            JsonRejection::BytesRejection(r) if timed_out(&r) => Self::RequestTimeout,
            JsonRejection::JsonSyntaxError(e) => Self::bad_request("malformed_json", e.body_text()),
            JsonRejection::JsonDataError(e) => Self::bad_request("invalid_body", e.body_text()),
            other => Self::bad_request("bad_request", other.body_text()),
        }
    }
}

/// Most request headers accepted (431 beyond). The server's HTTP/1 parser allows more, so that the
/// answer is this JSON error rather than its own empty 431.
pub const MAX_HEADERS: usize = 64;
/// Largest total size of the request headers, names and values, in bytes (431 beyond).
pub const MAX_HEADER_BYTES: usize = 32 * 1024;

/// Refuses requests with more than [`MAX_HEADERS`] headers or [`MAX_HEADER_BYTES`] of them (431).
pub async fn limit_headers(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let headers = req.headers();
    let bytes: usize = headers.iter().map(|(n, v)| n.as_str().len() + v.len()).sum();
    if headers.len() > MAX_HEADERS || bytes > MAX_HEADER_BYTES {
        return ApiError::HeadersTooLarge.into_response();
    }
    next.run(req).await
}

/// Gives every error response the one JSON shape: a 4xx / 5xx that is not JSON yet (an extractor's
/// plain-text rejection: a query string, a path, a body limit on a raw body) gets
/// `{"error": {"code", "message"}}` with its text as the message; its status and other headers
/// are kept. JSON bodies (ours, and JSON-RPC on `/a2a`) are left alone.
pub async fn json_errors(resp: Response) -> Response {
    let status = resp.status();
    let is_json = resp
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    let text = match axum::body::to_bytes(body, 4096).await {
        Ok(b) if !b.is_empty() => String::from_utf8_lossy(&b).into_owned(),
        _ => status.canonical_reason().unwrap_or("error").to_string(),
    };
    let code = match status {
        StatusCode::BAD_REQUEST => "bad_request",
        StatusCode::NOT_FOUND => "not_found",
        StatusCode::METHOD_NOT_ALLOWED => "method_not_allowed",
        StatusCode::REQUEST_TIMEOUT => "request_timeout",
        StatusCode::PAYLOAD_TOO_LARGE => "payload_too_large",
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
        StatusCode::UNPROCESSABLE_ENTITY => "unprocessable",
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => "headers_too_large",
        StatusCode::URI_TOO_LONG => "uri_too_long",
        StatusCode::TOO_MANY_REQUESTS => "rate_limited",
        StatusCode::SERVICE_UNAVAILABLE => "unavailable",
        s if s.is_server_error() => "internal",
        _ => "error",
    };
    let body = json!({ "error": { "code": code, "message": text } }).to_string();
    parts.headers.insert(axum::http::header::CONTENT_TYPE, axum::http::HeaderValue::from_static("application/json"));
    parts.headers.remove(axum::http::header::CONTENT_LENGTH);
    Response::from_parts(parts, axum::body::Body::from(body))
}

/// `true` when reading the body failed because it did not arrive within the body read timeout.
pub fn timed_out(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(error);
    while let Some(e) = cause {
        if e.is::<tower_http::timeout::TimeoutError>() {
            return true;
        }
        cause = e.source();
    }
    false
}

/// `axum::Json` whose rejections are [`ApiError`]s.
#[derive(Debug, FromRequest)]
#[from_request(via(axum::Json), rejection(ApiError))]
pub struct ApiJson<T>(pub T);
