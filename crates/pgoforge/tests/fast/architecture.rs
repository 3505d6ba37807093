//! The promises docs/ARCHITECTURE.md makes about the code's shape, checked: no import cycles
//! between files, and no module importing one of a layer above it.

use std::path::Path;
use std::process::{Command, Output};

fn check(src: &Path) -> Output {
    check_with(src, &[])
}

fn check_with(src: &Path, flags: &[&str]) -> Output {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scripts/import-cycles.py"
    );
    Command::new("python3")
        .arg(script)
        .arg(src)
        .args(flags)
        .output()
        .expect("python3 runs scripts/import-cycles.py")
}

#[test]
fn no_file_imports_a_file_that_imports_it_back_and_no_layer_imports_one_above_it() {
    // pgoforge's own layers, and the two bottom ones that live in the mysqld crate (which Cargo
    // already keeps from importing pgoforge).
    // Every other crate (oltp, stats, testsupport, and any added later) has no layer table: no file of
    // it may import a file that imports it back.
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut checked = Vec::new();
    for e in std::fs::read_dir(&crates).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let src = e.path().join("src");
        if !src.is_dir() {
            continue;
        }
        let flags: &[&str] = if name == "pgoforge" || name == "mysqld" {
            &[]
        } else {
            &["--cycles-only"]
        };
        let out = check_with(&src, flags);
        let found = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && found.trim().is_empty(),
            "architecture of crates/{name}/src:\n{found}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        checked.push(name);
    }
    checked.sort();
    assert_eq!(
        checked,
        ["mysqld", "oltp", "pgoforge", "stats", "testsupport"]
    );
}

/// The cycle check can fail on a crate without layers: oltp's old circle (the protocol's error
/// reading its code with the packet's reader, the packet using the error) put back on a copy.
#[test]
fn a_cycle_in_a_crate_without_layers_is_found() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    let status = Command::new("cp")
        .arg("-r")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../oltp/src"))
        .arg(&src)
        .status()
        .unwrap();
    assert!(status.success());
    let error = src.join("proto/error.rs");
    let text = std::fs::read_to_string(&error).unwrap();
    std::fs::write(
        &error,
        text.replace("super::int::get_u16", "super::packet::get_u16"),
    )
    .unwrap();
    let out = check_with(&src, &["--cycles-only"]);
    let found = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{found}");
    assert!(
        found.contains("proto/error -> proto/packet -> proto/error"),
        "{found}"
    );
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

/// No function of the non-test code is over 120 lines (scripts/function-length.py); and the
/// check can fail: a copy of a source file with one function grown past the limit is found.
#[test]
fn no_function_is_over_120_lines_and_a_longer_one_is_found() {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scripts/function-length.py"
    );
    let run = |dir: &Path| {
        Command::new("python3")
            .arg(script)
            .arg(dir)
            .output()
            .expect("python3 runs scripts/function-length.py")
    };
    let out = run(&Path::new(env!("CARGO_MANIFEST_DIR")).join(".."));
    assert!(
        out.status.success(),
        "functions over 120 lines (split them by what their steps are):\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let t = tempfile::tempdir().unwrap();
    let body: String = (0..130)
        .map(|i| format!("    let _x{i} = {i};\n"))
        .collect();
    std::fs::write(
        t.path().join("long.rs"),
        format!("pub fn grown() {{\n{body}}}\n\n#[cfg(test)]\nmod tests {{}}\n"),
    )
    .unwrap();
    let out = run(t.path());
    let found = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{found}");
    assert!(found.contains("fn grown is 132 lines"), "{found}");
}
