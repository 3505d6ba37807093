//! The promises docs/ARCHITECTURE.md makes about the code's shape, checked: no import cycles
//! between files, and no module importing one of a layer above it.

use std::path::Path;
use std::process::{Command, Output};

fn check(src: &Path) -> Output {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scripts/import-cycles.py"
    );
    Command::new("python3")
        .arg(script)
        .arg(src)
        .output()
        .expect("python3 runs scripts/import-cycles.py")
}

#[test]
fn no_file_imports_a_file_that_imports_it_back_and_no_layer_imports_one_above_it() {
    // pgoforge's own layers, and the two bottom ones that live in the mysqld crate (which Cargo
    // already keeps from importing pgoforge).
    for src in ["src", "../mysqld/src"] {
        let out = check(&Path::new(env!("CARGO_MANIFEST_DIR")).join(src));
        let found = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && found.trim().is_empty(),
            "architecture of {src}:\n{found}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The check can fail: a copy of the source in which the recipe (a low layer) imports the gate
/// (a higher one) — the edge that once slipped in — is refused, naming both.
#[test]
fn an_upward_import_is_found() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    let status = Command::new("cp")
        .arg("-r")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
        .arg(&src)
        .status()
        .unwrap();
    assert!(status.success());
    let recipe = src.join("recipe/mod.rs");
    let text = std::fs::read_to_string(&recipe).unwrap();
    std::fs::write(&recipe, format!("use crate::gate::GateMode;\n{text}")).unwrap();
    let out = check(&src);
    let found = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{found}");
    assert!(
        found.contains("upward import: recipe (layer recipe) uses gate (layer gate"),
        "{found}"
    );
}
