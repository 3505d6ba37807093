//! What makes a package the same bytes every time it is packed from the same build: one date from
//! the source (SOURCE_DATE_EPOCH, as Debian's reproducible builds take it) for every timestamp,
//! entries in name order with fixed owners and modes, and single-threaded compression at a fixed
//! level. The time of packing is no part of the package (it is written beside it).

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use anyhow::{Context, Result};

pub use crate::source::date::{changelog_epoch, source_date_epoch, FALLBACK_EPOCH};

/// `root` as NAME/ in a tar.zst at `out`: every entry in name order (directories before what they
/// hold), owned by root:root (0/0), mode 0755 for directories and executables and 0644 for other
/// files, every time `epoch`; zstd level 12 in one thread. Symbolic links are kept as links.
pub fn write_tar_zst(root: &Path, name: &str, epoch: u64, out: &Path) -> Result<()> {
    let file = File::create(out).with_context(|| format!("creating {}", out.display()))?;
    let enc = zstd::Encoder::new(BufWriter::new(file), 12)?;
    let mut tar = tar::Builder::new(enc);
    tar.follow_symlinks(false);
    append_sorted(&mut tar, root, Path::new(name), epoch)
        .with_context(|| format!("archiving into {}", out.display()))?;
    let enc = tar.into_inner()?;
    let mut w = enc.finish()?;
    w.flush()?;
    w.into_inner()
        .map_err(|e| e.into_error())?
        .sync_all()
        .with_context(|| format!("writing {}", out.display()))?;
    Ok(())
}

fn header(kind: tar::EntryType, mode: u32, size: u64, epoch: u64) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(kind);
    h.set_mode(mode);
    h.set_size(size);
    h.set_mtime(epoch);
    h.set_uid(0);
    h.set_gid(0);
    // Names, not just numbers: unpacked by root, the files belong to root on any system.
    let _ = h.set_username("root");
    let _ = h.set_groupname("root");
    h
}

fn append_sorted<W: Write>(
    tar: &mut tar::Builder<W>,
    dir: &Path,
    at: &Path,
    epoch: u64,
) -> Result<()> {
    let mut h = header(tar::EntryType::Directory, 0o755, 0, epoch);
    tar.append_data(&mut h, at, std::io::empty())?;
    let mut entries: Vec<_> = fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .collect::<std::io::Result<_>>()?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let p = e.path();
        let inside = at.join(e.file_name());
        let meta = fs::symlink_metadata(&p).with_context(|| format!("reading {}", p.display()))?;
        if meta.file_type().is_symlink() {
            let target = fs::read_link(&p)?;
            let mut h = header(tar::EntryType::Symlink, 0o777, 0, epoch);
            tar.append_link(&mut h, &inside, &target)?;
        } else if meta.is_dir() {
            append_sorted(tar, &p, &inside, epoch)?;
        } else {
            let mode = if meta.permissions().mode() & 0o111 != 0 {
                0o755
            } else {
                0o644
            };
            let mut h = header(tar::EntryType::Regular, mode, meta.len(), epoch);
            let f = File::open(&p).with_context(|| format!("reading {}", p.display()))?;
            tar.append_data(&mut h, &inside, f)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(root: &Path, order: &[&str]) {
        // The same files, made in another order (directory order differs) and at another time.
        for name in order {
            let p = root.join(name);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(&p, format!("content of {name}\n")).unwrap();
        }
        let exe = root.join("bin/server");
        fs::set_permissions(&exe, fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::symlink("server", root.join("bin/link")).unwrap();
    }

    #[test]
    fn the_same_files_pack_to_the_same_bytes_whatever_their_order_times_and_modes() {
        let t = tempfile::tempdir().unwrap();
        let (a, b) = (t.path().join("a/pkg"), t.path().join("elsewhere/b/pkg"));
        tree(
            &a,
            &[
                "bin/server",
                "share/x/errmsg.sys",
                "manifest.json",
                "SHA256SUMS",
            ],
        );
        std::thread::sleep(std::time::Duration::from_millis(1100));
        tree(
            &b,
            &[
                "SHA256SUMS",
                "manifest.json",
                "share/x/errmsg.sys",
                "bin/server",
            ],
        );
        fs::set_permissions(b.join("manifest.json"), fs::Permissions::from_mode(0o600)).unwrap();
        let (ta, tb) = (t.path().join("a.tar.zst"), t.path().join("b.tar.zst"));
        write_tar_zst(&a, "pkg", 1_700_000_000, &ta).unwrap();
        write_tar_zst(&b, "pkg", 1_700_000_000, &tb).unwrap();
        assert_eq!(fs::read(&ta).unwrap(), fs::read(&tb).unwrap());
        // Another date is other bytes: the date is in the package.
        let tc = t.path().join("c.tar.zst");
        write_tar_zst(&b, "pkg", 1_700_000_001, &tc).unwrap();
        assert_ne!(fs::read(&ta).unwrap(), fs::read(&tc).unwrap());
        // What is inside: sorted, root-owned, modes normalized, the link kept.
        let mut ar = tar::Archive::new(zstd::Decoder::new(File::open(&ta).unwrap()).unwrap());
        let seen: Vec<(String, u32, u64)> = ar
            .entries()
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let h = e.header();
                (
                    e.path().unwrap().display().to_string(),
                    h.mode().unwrap(),
                    h.uid().unwrap() + h.gid().unwrap(),
                )
            })
            .collect();
        let names: Vec<&str> = seen.iter().map(|s| s.0.as_str()).collect();
        assert_eq!(
            names,
            [
                "pkg",
                "pkg/SHA256SUMS",
                "pkg/bin",
                "pkg/bin/link",
                "pkg/bin/server",
                "pkg/manifest.json",
                "pkg/share",
                "pkg/share/x",
                "pkg/share/x/errmsg.sys"
            ]
        );
        let mode = |n: &str| seen.iter().find(|s| s.0 == n).unwrap().1;
        assert_eq!(mode("pkg/bin/server"), 0o755);
        assert_eq!(mode("pkg/manifest.json"), 0o644);
        assert!(seen.iter().all(|s| s.2 == 0));
    }
}
