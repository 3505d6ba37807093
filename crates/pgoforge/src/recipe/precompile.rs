//! The recipe's precompiled-headers setting (`[build.precompile_headers]`, used by
//! `builder::pch`): its values end up inside a CMake file, so they are checked here, where the
//! recipe is read.

use std::collections::BTreeMap;

use anyhow::{bail, Result};

/// Recipe values end up inside a CMake file: targets and header paths are held to characters
/// that cannot end a string or start a variable, generator expression or list.
pub fn check(map: &BTreeMap<String, Vec<String>>) -> Result<()> {
    for (target, headers) in map {
        let target_ok = !target.is_empty()
            && target
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '+'));
        if !target_ok {
            bail!(
                "build.precompile_headers: target '{}' must be a CMake target name (letters, \
                 digits, '_', '-', '.', '+')",
                target.escape_debug()
            );
        }
        if headers.is_empty() {
            bail!(
                "build.precompile_headers: target {target} lists no header (give at least one, \
                 or leave the target out)"
            );
        }
        for h in headers {
            let chars_ok = !h.is_empty()
                && h.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '+' | '/'));
            let relative = !h.starts_with('/') && !h.split('/').any(|part| part == "..");
            if !chars_ok || !relative {
                bail!(
                    "build.precompile_headers: header '{}' of target {target} must be a path \
                     relative to the source directory, without '..' (letters, digits, '_', '-', \
                     '.', '+', '/')",
                    h.escape_debug()
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// One target with its headers (builder::pch's tests use it too).
    pub(crate) fn map(target: &str, headers: &[&str]) -> BTreeMap<String, Vec<String>> {
        BTreeMap::from([(
            target.to_string(),
            headers.iter().map(|h| h.to_string()).collect(),
        )])
    }

    #[test]
    fn hostile_values_are_refused_before_they_reach_cmake() {
        assert!(check(&map("sql_main", &["sql/sql_class.h", "sql/item.h"])).is_ok());
        for bad_target in ["", "a b", "x)\nexecute_process(", "${X}", "a;b"] {
            let e = check(&map(bad_target, &["a.h"])).unwrap_err().to_string();
            assert!(e.contains("CMake target name"), "{e}");
        }
        for bad in [
            "/etc/passwd",
            "../x.h",
            "sql/../../x.h",
            "a\".h",
            "$<1:x>",
            "a;b.h",
            "",
        ] {
            let e = check(&map("t", &[bad])).unwrap_err().to_string();
            assert!(e.contains("relative to the source directory"), "{bad}: {e}");
        }
        let e = check(&map("t", &[])).unwrap_err().to_string();
        assert!(e.contains("lists no header"), "{e}");
    }
}
