//! The cost of a hot reload of a 1,000-agent config (`cargo bench --bench reload`), by stage:
//! reading and validating the file (`config::load`), compiling the snapshot
//! (`Registry::from_config`: validators, recognizer, semantic card texts), and the whole swap
//! (`RegistryHandle::apply` of a file differing from the serving one by one description). The
//! config is `bench/reload.py gen` (the bench's two agents plus 998 generated cards, ~600 KiB),
//! written to a temporary directory; `SB_RELOAD_CONFIG=path` measures another file instead. The
//! semantic stage's card texts are embedded once before measuring, as the server's background
//! warm-up does after its first load. Not part of `cargo test`: never a timed assertion.

#![allow(missing_docs)] // criterion_group! generates undocumented items.

use std::hint::black_box;
use std::path::{Path, PathBuf};

/// The server's allocator (see `src/main.rs`): glibc's malloc makes the frees of a dropped
/// snapshot cost far more than they do in the server.
#[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use switchboard::config;
use switchboard::registry::{Registry, RegistryHandle};

/// The config to reload and a copy with one card's description changed.
fn configs(dir: &Path) -> (PathBuf, PathBuf) {
    let a = match std::env::var_os("SB_RELOAD_CONFIG") {
        Some(path) => PathBuf::from(path),
        None => {
            let a = dir.join("agents.yaml");
            let root = Path::new(env!("CARGO_MANIFEST_DIR"));
            let status = std::process::Command::new("python3")
                .arg(root.join("bench/reload.py"))
                .args(["gen".as_ref(), a.as_os_str(), "1000".as_ref()])
                .status()
                .expect("python3 runs bench/reload.py");
            assert!(status.success(), "bench/reload.py gen failed");
            a
        }
    };
    let text = std::fs::read_to_string(&a).unwrap();
    let at = text.find("description: ").expect("a card with a description") + "description: ".len();
    let b = a.with_file_name("agents-edited.yaml");
    std::fs::write(&b, format!("{}Edited. {}", &text[..at], &text[at..])).unwrap();
    (a, b)
}

fn reload(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("switchboard-reload-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b) = configs(&dir);
    let handle = RegistryHandle::open(&a).unwrap();
    handle.load().recognizer.warm();
    println!("{} agents", handle.load().agents().len());

    let mut group = c.benchmark_group("reload_1000_agents");
    group.sample_size(20);
    group.bench_function("load", |bench| bench.iter(|| black_box(config::load(&a).unwrap())));
    group.bench_function("from_config", |bench| {
        bench.iter_batched(
            || config::load(&a).unwrap(),
            |loaded| black_box(Registry::from_config(loaded, 2).unwrap()),
            BatchSize::LargeInput,
        )
    });
    let mut flip = false;
    group.bench_function("apply_one_changed_description", |bench| {
        bench.iter(|| {
            flip = !flip;
            black_box(handle.apply(config::load(if flip { &b } else { &a })))
        })
    });
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, reload);
criterion_main!(benches);
