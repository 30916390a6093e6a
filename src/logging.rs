//! Log output: `tracing` to stderr, human-readable or JSON (`SWITCHBOARD_LOG_FORMAT=json`, with
//! the current span's fields such as `trace_id` on every line), with personal data masked
//! (README.md, "Security"): mainland mobile numbers keep their first 3 and last 4 digits, ID-card
//! numbers their first 6 and last 4, other `+`-prefixed phone numbers their country code and
//! last 3.
//! Masking happens in the writer, so no log line — whoever wrote it — carries them.

use std::io::{self, Write};
use std::sync::LazyLock;

use regex::Regex;

static ID_CARD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(^|\D)(\d{6})\d{8}(\d{3}[\dXx])(\D|$)").expect("static regex"));
static CN_MOBILE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(^|\D)(1[3-9]\d)\d{4}(\d{4})(\D|$)").expect("static regex"));
static INTL_PHONE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(\+\d{1,3})[\d -]{4,10}(\d{3})").expect("static regex"));

/// `text` with phone and ID-card numbers masked.
pub fn mask_pii(text: &str) -> String {
    let masked = ID_CARD.replace_all(text, "${1}${2}********${3}${4}");
    let masked = CN_MOBILE.replace_all(&masked, "${1}${2}****${3}${4}");
    INTL_PHONE.replace_all(&masked, "${1}****${2}").into_owned()
}

/// A writer that masks personal data before writing to stderr.
#[derive(Debug, Clone, Copy, Default)]
pub struct MaskingStderr;

impl Write for MaskingStderr {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        io::stderr().write_all(mask_pii(&text).as_bytes())?;
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

/// Installs the global subscriber: `RUST_LOG` filter (default `info`), text or JSON, and — built
/// with `--features otel` and `OTEL_EXPORTER_OTLP_ENDPOINT` set — OTLP export of the spans.
pub fn init() {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::Layer;

    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    let json = std::env::var("SWITCHBOARD_LOG_FORMAT").is_ok_and(|f| f == "json");
    let fmt = if json {
        tracing_subscriber::fmt::layer()
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .with_writer(MaskingStderr)
            .boxed()
    } else {
        tracing_subscriber::fmt::layer().with_writer(MaskingStderr).boxed()
    };
    let registry = tracing_subscriber::registry().with(filter).with(fmt);
    #[cfg(feature = "otel")]
    let registry = registry.with(otel::layer());
    registry.init();
}

#[cfg(feature = "otel")]
mod otel {
    use opentelemetry::trace::TracerProvider as _;
    use tracing_subscriber::Layer;

    /// The OTLP layer when `OTEL_EXPORTER_OTLP_ENDPOINT` is set.
    pub fn layer<S>() -> Option<impl Layer<S>>
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
    use super::mask_pii;

    #[test]
    fn phones_and_id_numbers_are_masked() {
        assert_eq!(mask_pii("电话13812345678，谢谢"), "电话138****5678，谢谢");
        assert_eq!(mask_pii("id 110101199003071234 ok"), "id 110101********1234 ok");
        assert_eq!(mask_pii("身份证11010119900307123X"), "身份证110101********123X");
        assert_eq!(mask_pii("call +44 20 7946 0958"), "call +44****958");
        assert_eq!(
            mask_pii("flight CA1234 at 2026-12-01T14:30"),
            "flight CA1234 at 2026-12-01T14:30",
            "no false positives"
        );
        assert_eq!(mask_pii("trace 4bf92f3577b34da6a3ce929d0e0e4736"), "trace 4bf92f3577b34da6a3ce929d0e0e4736");
    }
}
