//! Arbitrary text as `agents_config.yaml`: loading must return a config or errors, never panic.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

/// Copies `from` (a directory) to `to`, recursively.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("dir entry");
        let dest = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), dest).expect("copy");
        }
    }
}

/// A temp directory (made once per process) holding copies of the repository's
/// `widgets_map.json` and `schemas/`, so the references in the seed configs resolve.
fn base_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let dir = tempfile::Builder::new().prefix("switchboard-fuzz-").tempdir().expect("tempdir").keep();
        std::fs::copy(repo.join("widgets_map.json"), dir.join("widgets_map.json")).expect("copy widgets_map.json");
        copy_dir(&repo.join("schemas"), &dir.join("schemas"));
        dir
    })
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = switchboard::config::load_from_str(&text, Path::new("fuzz/agents_config.yaml"), base_dir(), &|_| None);
});
