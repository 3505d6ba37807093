//! The README is a guide a newcomer reads in five minutes (issue 49): at most 250 lines, the two
//! commands within its first 40, and every `pgoforge` command it and the user's guide show accepted
//! by the CLI as written — so the guide cannot drift from the flags. Each command runs with
//! `--help` appended: clap checks every flag and value before it, and nothing is fetched or built.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `pgoforge …` commands of a Markdown file's indented code blocks, continuation lines joined
/// and comments cut, as argument lists without the program.
fn commands(text: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut pending = String::new();
    for line in text.lines() {
        let Some(code) = line.strip_prefix("    ") else {
            pending.clear();
            continue;
        };
        let code = match code.find(" #") {
            Some(i) => &code[..i],
            None => code,
        }
        .trim_end();
        if let Some(head) = code.strip_suffix('\\') {
            pending.push_str(head);
            pending.push(' ');
            continue;
        }
        let full = std::mem::take(&mut pending) + code;
        // `cargo build --release && target/release/pgoforge run …`: the part after the binary.
        let Some(i) = full.find("pgoforge ") else {
            continue;
        };
        let before = &full[..i];
        if !(before.trim().is_empty() || before.ends_with('/')) {
            continue;
        }
        let args: Vec<String> = full[i + "pgoforge ".len()..]
            .split_whitespace()
            .map(str::to_string)
            .collect();
        out.push(args);
    }
    out
}

fn accepted(args: &[String]) -> Result<(), String> {
    let out = Command::new(env!("CARGO_BIN_EXE_pgoforge"))
        .args(args)
        .arg("--help")
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn the_readme_is_short_and_starts_with_the_two_commands() {
    let text = fs::read_to_string(root().join("README.md")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() <= 250, "README.md has {} lines", lines.len());
    let head = lines[..40.min(lines.len())].join("\n");
    for cmd in [
        "target/release/pgoforge run --install-deps",
        "scripts/install-test-deps.sh && scripts/check.sh",
    ] {
        assert!(
            head.contains(cmd),
            "not in the README's first 40 lines: {cmd}"
        );
    }
}

#[test]
fn every_command_the_readme_and_the_guide_show_is_accepted_as_written() {
    let mut refused = Vec::new();
    let mut checked = 0;
    for doc in ["README.md", "docs/GUIDE.md"] {
        let text = fs::read_to_string(root().join(doc)).unwrap();
        let cmds = commands(&text);
        assert!(
            cmds.len() >= 10,
            "{doc}: only {} commands found",
            cmds.len()
        );
        for args in cmds {
            checked += 1;
            if let Err(e) = accepted(&args) {
                refused.push(format!(
                    "{doc}: pgoforge {}\n  {}",
                    args.join(" "),
                    e.trim()
                ));
            }
        }
    }
    assert!(
        refused.is_empty(),
        "{} of {checked} commands refused:\n{}",
        refused.len(),
        refused.join("\n")
    );
}

#[test]
fn the_command_finder_reads_continuations_comments_and_the_binary_path() {
    let md = "text pgoforge run --not-code\n\n    cargo build --release && target/release/pgoforge run --install-deps\n    pgoforge run --variants pgo \\\n        --threads 1,8   # a comment\n    apt-get install x\n";
    assert_eq!(
        commands(md),
        vec![
            vec!["run".to_string(), "--install-deps".into()],
            vec![
                "run".into(),
                "--variants".into(),
                "pgo".into(),
                "--threads".into(),
                "1,8".into()
            ],
        ]
    );
    // A refused flag is caught, so the check can fail.
    assert!(accepted(&["run".into(), "--no-such-flag".into()]).is_err());
}
