//! The promises docs/ARCHITECTURE.md makes about the code's shape, checked.

use std::process::Command;

#[test]
fn no_file_of_the_library_imports_a_file_that_imports_it_back() {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scripts/import-cycles.py"
    );
    let out = Command::new("python3")
        .arg(script)
        .output()
        .expect("python3 runs scripts/import-cycles.py");
    let cycles = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && cycles.trim().is_empty(),
        "import cycles:\n{cycles}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
