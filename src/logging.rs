//! Log output: `tracing` to stderr, human-readable or JSON (`SWITCHBOARD_LOG_FORMAT=json`, with
//! the current span's fields such as `trace_id` on every line), with personal data masked
//! (README.md, "Security"): mainland mobile numbers keep their first 3 and last 4 digits (any of
//! `13812345678`, `138-1234-5678`, `138 1234 5678`, with `86` / `+86` before), ID-card numbers
//! their first 6 and last 4 (18 digits) or 3 (15 digits), other `+`-prefixed phone numbers their
//! country code and last 3, e-mail addresses their first character and domain.
//! Masking happens in the writer, so no log line — whoever wrote it — carries them. The same
//! writer masks every `${ENV}` secret of every config this process loaded ([`remember_secrets`],
//! [`crate::redact`]).

use std::io::{self, Write};
use std::sync::{Arc, LazyLock, Mutex};

use arc_swap::ArcSwap;
use regex::Regex;

use crate::redact::Secrets;

/// At most this many secret values are remembered for the logs (the oldest are forgotten).
const MAX_LOG_SECRETS: usize = 1024;

static LOG_SECRETS: LazyLock<ArcSwap<Secrets>> = LazyLock::new(ArcSwap::default);
static SEEN_SECRETS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Adds `values` to the secrets masked in every log line. Values stay masked after a reload
/// dropped them (a rotated secret is still a secret).
pub fn remember_secrets<'a>(values: impl Iterator<Item = &'a str>) {
    let mut seen = SEEN_SECRETS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let before = seen.len();
    for v in values {
        if !seen.iter().any(|s| s == v) {
            seen.push(v.to_string());
        }
    }
    if seen.len() == before {
        return;
    }
    let extra = seen.len().saturating_sub(MAX_LOG_SECRETS);
    seen.drain(..extra);
    LOG_SECRETS.store(Arc::new(Secrets::new(seen.iter().cloned())));
}

/// A log line as written: secrets and personal data masked.
pub fn mask_log(text: &str) -> String {
    let secrets = LOG_SECRETS.load();
    mask_pii(&secrets.mask(text))
}

static ID_CARD_18: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(\d{6})\d{8}(\d{3}[\dXx])").expect("static regex"));
static ID_CARD_15: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(\d{6})\d{6}(\d{3})").expect("static regex"));
/// `13812345678`, `138-1234-5678`, `138 1234 5678`, with `86`, `+86`, `+86 ` or `+86-` before.
static CN_MOBILE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(\+?86[ -]?)?(1[3-9]\d)([ -]?)\d{4}([ -]?)(\d{4})").expect("static regex"));
static INTL_PHONE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(\+\d{1,3})[\d -]{4,10}(\d{3})").expect("static regex"));
static EMAIL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"([A-Za-z0-9_%+-])[A-Za-z0-9._%+-]*@([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,})")
        .expect("static regex")
});

/// Replaces the matches of `re` in `text` by `with` (`$1`-style), but only those that are a whole
/// number: not right after or before an ASCII letter or digit (a hex trace id, a longer number).
/// `None` when nothing matched (no new string).
fn replace_whole(re: &Regex, text: &str, with: &str) -> Option<String> {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    let replaced = re.replace_all(text, |caps: &regex::Captures<'_>| {
        let m = caps.get(0).expect("whole match");
        if word(text[..m.start()].chars().next_back()) || word(text[m.end()..].chars().next()) {
            return m.as_str().to_string();
        }
        let mut out = String::new();
        caps.expand(with, &mut out);
        out
    });
    changed(replaced)
}

/// The new string of a replacement, `None` when it replaced nothing.
fn changed(replaced: std::borrow::Cow<'_, str>) -> Option<String> {
    match replaced {
        std::borrow::Cow::Borrowed(_) => None,
        std::borrow::Cow::Owned(s) => Some(s),
    }
}

/// The longest run of ASCII digits in `text`.
fn longest_digit_run(text: &str) -> usize {
    text.split(|c: char| !c.is_ascii_digit()).map(str::len).max().unwrap_or(0)
}

/// `text` with personal data masked: mainland mobile numbers (`138****5678`, separators and a
/// `86` / `+86` prefix kept), ID-card numbers (18 digits: first 6 and last 4 kept; 15 digits:
/// first 6 and last 3), other `+`-prefixed phone numbers (country code and last 3) and e-mail
/// addresses (first character and domain). A pass whose pattern cannot match (no run of 15
/// digits for an ID card, no run of 3 for a mobile number, no `+`, no `@`) is skipped: most log
/// lines need one pass or none.
pub fn mask_pii(text: &str) -> String {
    let run = longest_digit_run(text);
    let mut masked: Option<String> = None;
    let mut pass = |wanted: bool, re: &Regex, with: &str, whole: bool| {
        if !wanted {
            return;
        }
        let current = masked.as_deref().unwrap_or(text);
        let next = if whole { replace_whole(re, current, with) } else { changed(re.replace_all(current, with)) };
        if next.is_some() {
            masked = next;
        }
    };
    pass(run >= 17, &ID_CARD_18, "${1}********${2}", true);
    pass(run >= 15, &ID_CARD_15, "${1}******${2}", true);
    pass(run >= 3, &CN_MOBILE, "${1}${2}${3}****${4}${5}", true);
    pass(text.contains('+'), &INTL_PHONE, "${1}****${2}", true);
    pass(text.contains('@'), &EMAIL, "${1}***@${2}", false);
    masked.unwrap_or_else(|| text.to_string())
}

/// A writer that masks personal data before writing to stderr.
#[derive(Debug, Clone, Copy, Default)]
pub struct MaskingStderr;

impl Write for MaskingStderr {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        io::stderr().write_all(mask_log(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for MaskingStderr {
    type Writer = MaskingStderr;

    fn make_writer(&'a self) -> Self::Writer {
        *self
    }
}

/// What keeps the log writer thread running: hold it until the process ends; dropping it writes
/// the lines still queued and stops the thread.
#[must_use = "dropping the guard stops the log writer"]
pub struct LogGuard(#[allow(dead_code)] tracing_appender::non_blocking::WorkerGuard);

/// Lines queued for the log writer thread at most; a turn that logs past this waits for room
/// (no line is dropped).
const LOG_QUEUE_LINES: usize = 64 * 1024;

/// Installs the global subscriber: `RUST_LOG` filter (default `info`), text (coloured only on a
/// terminal, and not with `NO_COLOR` set) or JSON, and — built
/// with `--features otel` and `OTEL_EXPORTER_OTLP_ENDPOINT` set — OTLP export of the spans.
///
/// Lines are formatted where they are logged and handed to one writer thread
/// (`tracing-appender`, lossless) that masks and writes them ([`MaskingStderr`]): a slow stderr
/// (a full pipe to a log collector) and the masking never hold a request's worker thread. Keep
/// the returned guard alive for as long as lines may be logged.
pub fn init() -> LogGuard {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::Layer;

    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .lossy(false)
        .buffered_lines_limit(LOG_QUEUE_LINES)
        .thread_name("log-writer")
        .finish(MaskingStderr);
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    let json = std::env::var("SWITCHBOARD_LOG_FORMAT").is_ok_and(|f| f == "json");
    let fmt = if json {
        tracing_subscriber::fmt::layer()
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .with_writer(writer)
            .boxed()
    } else {
        // Colours only for a terminal: a log file or collector gets plain text.
        let ansi = std::io::IsTerminal::is_terminal(&io::stderr()) && std::env::var_os("NO_COLOR").is_none();
        tracing_subscriber::fmt::layer().with_ansi(ansi).with_writer(writer).boxed()
    };
    let registry = tracing_subscriber::registry().with(filter).with(fmt);
    #[cfg(feature = "otel")]
    let registry = registry.with(otel::layer());
    registry.init();
    LogGuard(guard)
}

#[cfg(feature = "otel")]
mod otel {
    use opentelemetry::trace::TracerProvider as _;
    use tracing_subscriber::Layer;

    /// The OTLP layer when `OTEL_EXPORTER_OTLP_ENDPOINT` is set.
    pub(super) fn layer<S>() -> Option<impl Layer<S>>
    where
        S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    {
        std::env::var_os("OTEL_EXPORTER_OTLP_ENDPOINT")?;
        let exporter = match opentelemetry_otlp::SpanExporter::builder().with_http().build() {
            Ok(e) => e,
            Err(e) => {
                eprintln!("OpenTelemetry export disabled: {e}");
                return None;
            }
        };
        let resource = opentelemetry_sdk::Resource::builder().with_service_name("switchboard").build();
        let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build();
        let tracer = provider.tracer("switchboard");
        opentelemetry::global::set_tracer_provider(provider);
        Some(tracing_opentelemetry::layer().with_tracer(tracer))
    }
}

#[cfg(test)]
mod tests {
    use super::{mask_log, mask_pii, remember_secrets};

    #[test]
    fn remembered_secrets_are_masked_in_log_lines() {
        remember_secrets(["logging-test-secret-1"].into_iter());
        remember_secrets(["logging-test-secret-2"].into_iter());
        let line = "agent said Bearer logging-test-secret-1 and logging-test-secret-2, phone 13812345678";
        assert_eq!(mask_log(line), "agent said Bearer *** and ***, phone 138****5678");
    }

    #[test]
    fn phones_ids_and_emails_are_masked_in_every_common_format() {
        let cases = [
            // Mainland mobile numbers: first 3 and last 4 digits kept, country code kept.
            ("电话13812345678，谢谢", "电话138****5678，谢谢"),
            ("call 138-1234-5678 now", "call 138-****-5678 now"),
            ("call 138 1234 5678 now", "call 138 **** 5678 now"),
            ("tel:8613812345678", "tel:86138****5678"),
            ("tel:+8613812345678", "tel:+86138****5678"),
            ("tel +86 138 1234 5678.", "tel +86 138 **** 5678."),
            ("tel +86-138-1234-5678", "tel +86-138-****-5678"),
            ("13812345678,13912345678", "138****5678,139****5678"),
            (r#"{"phone":"13812345678"}"#, r#"{"phone":"138****5678"}"#),
            // ID-card numbers: 18 digits keep the first 6 and last 4, 15 digits the first 6 and last 3.
            ("id 110101199003071234 ok", "id 110101********1234 ok"),
            ("身份证11010119900307123X", "身份证110101********123X"),
            ("身份证号110105491231002。", "身份证号110105******002。"),
            // Other international numbers: country code and last 3 digits.
            ("call +44 20 7946 0958", "call +44****958"),
            // E-mail addresses: the first character of the local part and the domain.
            ("mail zhang.san@example.com.cn ok", "mail z***@example.com.cn ok"),
            (r#"{"email":"a@b.io"}"#, r#"{"email":"a***@b.io"}"#),
            // Not personal data.
            ("flight CA1234 at 2026-12-01T14:30", "flight CA1234 at 2026-12-01T14:30"),
            ("trace 4bf92f3577b34da6a3ce929d0e0e4736", "trace 4bf92f3577b34da6a3ce929d0e0e4736"),
            ("elapsed_ms=1732350000123", "elapsed_ms=1732350000123"),
            ("order 12345678901234567890", "order 12345678901234567890"),
            ("version 1.2.3 at 10:30", "version 1.2.3 at 10:30"),
        ];
        for (input, want) in cases {
            assert_eq!(mask_pii(input), want, "{input}");
        }
    }
}
