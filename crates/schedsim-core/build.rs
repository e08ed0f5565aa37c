//! Fingerprint of the model: a hash of every source and data file of the core, so that stored
//! results (the experiment store keys runs by it) are not reused after the model changes.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let mut files = Vec::new();
    for dir in ["src", "data"] {
        collect(&root.join(dir), &mut files);
        println!("cargo:rerun-if-changed={dir}");
    }
    files.sort();
    let mut h = DefaultHasher::new();
    for f in &files {
        f.strip_prefix(&root).unwrap_or(f).hash(&mut h);
        std::fs::read(f).unwrap_or_default().hash(&mut h);
    }
    println!(
        "cargo:rustc-env=SCHEDSIM_MODEL_FINGERPRINT={:016x}",
        h.finish()
    );
}
