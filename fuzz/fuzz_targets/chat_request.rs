//! Arbitrary bytes as a `POST /v1/chat` body: parsing and validation must accept or reject,
//! never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(body) = serde_json::from_slice::<switchboard::api::chat::ChatBody>(data) {
        let _ = body.validate();
    }
});
