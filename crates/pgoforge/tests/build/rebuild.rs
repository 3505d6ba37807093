//! Rebuildable by anyone (issue 56): a clang PGO+ThinLTO and a GCC PGO+LTO build of the fixture
//! project give the same bytes in directories of different names and depths from a profile
//! trained in a third (builder/relative.rs: sources named relative; builder/paths.rs: prefix
//! maps, and an older profile's static functions moved to the build's source);
//! and `pgoforge rebuild` / `package verify` on the stand-in run's package and its sidecar —
//! identical when nothing changed, and a tampered binary, a truncated profile, another package's
//! sidecar and another compiler version each refused with their own exit status, the file or
//! the versions named, nothing left half-written.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use pgoforge::builder::relative::SourcePaths;
use pgoforge::builder::{build, BuildOutput, BuildRequest, ProfileInput};
use pgoforge::profile::train;
use pgoforge::recipe::Recipe;
use pgoforge::source;
use pgoforge::toolchain::{Compiler, FlagFamily};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/pgofix")
}

/// The fixture copied to `src` and built there as `variant` in `work`, naming its sources as
/// its profile was trained (relative without one), as the pipeline does.
fn build_at(
    src: &Path,
    work: &Path,
    variant: &str,
    cc: &Compiler,
    profile: Option<&ProfileInput>,
) -> BuildOutput {
    build_with(
        src,
        work,
        variant,
        cc,
        profile,
        SourcePaths::of_profile(profile),
    )
}

fn build_with(
    src: &Path,
    work: &Path,
    variant: &str,
    cc: &Compiler,
    profile: Option<&ProfileInput>,
    source_paths: SourcePaths,
) -> BuildOutput {
    if !src.exists() {
        pgoforge::infra::fs::copy_tree(&fixture(), src).unwrap();
    }
    let recipe = Recipe::load(fixture().join("recipe.toml").to_str().unwrap()).unwrap();
    let s = source::fetch(&recipe, Some(src.to_str().unwrap()), None, work).unwrap();
    build(&BuildRequest {
        recipe: &recipe,
        source: &s,
        variant: variant.parse().unwrap(),
        compiler: cc,
        profile,
        work_dir: work,
        jobs: 2,
        progress: None,
        cluster: None,
        source_paths,
    })
    .unwrap_or_else(|e| panic!("{e:#}"))
}

/// A profile of the fixture copied to DIR/pgofix, trained there (DIR/work) by an instrumented
/// build that named its sources as `paths` says.
fn trained_as(dir: &Path, cc: &Compiler, paths: SourcePaths) -> ProfileInput {
    let gen = build_with(
        &dir.join("pgofix"),
        &dir.join("work"),
        "pgo-gen",
        cc,
        None,
        paths,
    );
    assert_eq!(gen.source_paths, paths);
    let raw = gen.profile_gen_dir.clone().unwrap();
    let st = Command::new(&gen.binary)
        .args(["all", "20000"])
        .env("LLVM_PROFILE_FILE", raw.join("%m-%p.profraw"))
        .status()
        .unwrap();
    assert!(st.success());
    match cc.family {
        FlagFamily::Clang => {
            ProfileInput::Profdata(train::merge_profraw(&gen, &raw, None).unwrap())
        }
        FlagFamily::Gcc => ProfileInput::GccDir(raw),
    }
}

/// A clang profile trained as the pipeline trains now (sources named relative).
fn trained(dir: &Path, clang: &Compiler) -> ProfileInput {
    trained_as(dir, clang, SourcePaths::Relative)
}

/// The fixture's "next release" at `to`: hash() gains a branch, so the control flow of
/// kv_workload, which inlines it, changes.
fn next_release(to: &Path) -> PathBuf {
    pgoforge::infra::fs::copy_tree(&fixture(), to).unwrap();
    let kv = to.join("src/kv.c");
    let text = fs::read_to_string(&kv).unwrap();
    let changed = text.replace(
        "static uint32_t hash(uint32_t k) { k ^= k >> 16;",
        "static uint32_t hash(uint32_t k) { if (k == 12345) return 7; k ^= k >> 16;",
    );
    assert_ne!(
        text, changed,
        "the fixture's hash() moved; update this test"
    );
    fs::write(&kv, changed).unwrap();
    to.to_path_buf()
}

fn stripped(bin: &Path, out: &Path) -> Vec<u8> {
    let st = Command::new("strip")
        .arg("--strip-all")
        .arg("-o")
        .arg(out)
        .arg(bin)
        .status()
        .unwrap();
    assert!(st.success());
    fs::read(out).unwrap()
}

/// Builds `variant` from a profile trained in one tree, in that tree and in another of another
/// name and depth; both builds.
fn built_here_and_elsewhere(
    t: &Path,
    cc: &Compiler,
    variant: &str,
    paths: SourcePaths,
) -> (BuildOutput, BuildOutput) {
    let profile = trained_as(&t.join("train"), cc, paths);
    let a = build_at(
        &t.join("train/pgofix"),
        &t.join("a/work"),
        variant,
        cc,
        Some(&profile),
    );
    let b = build_at(
        &t.join("elsewhere/much/deeper/src"),
        &t.join("elsewhere/w"),
        variant,
        cc,
        Some(&profile),
    );
    for o in [&a, &b] {
        assert!(o.path_neutral, "{o:?}");
        assert_eq!(o.source_paths, paths, "named as the profile was trained");
    }
    (a, b)
}

#[test]
fn a_clang_pgo_thinlto_build_is_the_same_bytes_in_any_directory() {
    let t = tempfile::tempdir().unwrap();
    let clang = Compiler::find("clang-22", None).unwrap();
    // Sources named relative (builder/relative.rs): the profile's names fit in any tree as they
    // are, and not even the symbol table differs.
    let (a, b) = built_here_and_elsewhere(t.path(), &clang, "pgo+lto", SourcePaths::Relative);
    assert_eq!(a.profile_relocated, None);
    assert_eq!(b.profile_relocated, None, "relative names need no moving");
    assert_eq!(a.stale.as_ref().map(|s| s.mismatched), Some(0), "{a:?}");
    let text = fs::read_to_string(&a.log).unwrap();
    assert!(
        text.contains("cc-relative.sh"),
        "the launcher reaches CMake"
    );
    assert!(
        fs::read(&a.binary).unwrap() == fs::read(&b.binary).unwrap(),
        "the unstripped binaries differ"
    );
    // Not even the unstripped binaries name where they were built.
    let whole = fs::read(&a.binary).unwrap();
    let needle = t.path().to_string_lossy().into_owned();
    assert!(
        !whole.windows(needle.len()).any(|w| w == needle.as_bytes()),
        "{} names its build directory",
        a.binary.display()
    );

    // A profile trained before (absolute names): the build elsewhere moves its records to its
    // own tree, and the code is the same.
    let t = tempfile::tempdir().unwrap();
    let (a, b) = built_here_and_elsewhere(t.path(), &clang, "pgo+lto", SourcePaths::Absolute);
    assert_eq!(a.profile_relocated, None, "trained in this very tree");
    let r = b
        .profile_relocated
        .as_ref()
        .expect("the profile names the training source: moved to this build's");
    assert!(r.from.ends_with("/train/pgofix") && r.records >= 1, "{r:?}");
    let text = fs::read_to_string(&a.log).unwrap();
    assert!(
        text.contains("-ffile-prefix-map="),
        "the prefix maps reach the compiler"
    );
    let (sa, sb) = (
        stripped(&a.binary, &t.path().join("a.stripped")),
        stripped(&b.binary, &t.path().join("b.stripped")),
    );
    assert!(
        sa == sb,
        "the same source, flags and profile gave other bytes in another directory"
    );
}

/// GCC hashes a static function's source path into its profile id: with absolute names a build
/// in another tree finds no profile for them; named relative, it finds every one and gives the
/// same bytes, unstripped.
#[test]
fn a_gcc_pgo_lto_build_finds_its_whole_profile_in_any_directory() {
    let gcc = Compiler::find("gcc", None).unwrap();
    let t = tempfile::tempdir().unwrap();
    let (a, b) = built_here_and_elsewhere(t.path(), &gcc, "pgo+lto", SourcePaths::Relative);
    assert_eq!(
        b.missing_profile_warnings,
        a.missing_profile_warnings,
        "the build elsewhere lost part of its profile: {}",
        b.log.display()
    );
    // Whole files: GCC's command line (profile paths) stays out of the debug info, so even the
    // build id agrees.
    assert!(
        fs::read(&a.binary).unwrap() == fs::read(&b.binary).unwrap(),
        "GCC's builds differ between the two trees"
    );

    // The cause, shown: trained and built with absolute names, the same build elsewhere warns
    // of functions without a profile that its twin in the training's tree has.
    let t = tempfile::tempdir().unwrap();
    let (a, b) = built_here_and_elsewhere(t.path(), &gcc, "pgo+lto", SourcePaths::Absolute);
    assert!(
        b.missing_profile_warnings > a.missing_profile_warnings,
        "absolute names: {} missing in the other tree against {} (did GCC stop hashing the \
         path? then the launcher is not needed)",
        b.missing_profile_warnings,
        a.missing_profile_warnings
    );
}

/// A profile trained on one release applied to the next (a changed function, another tree): its
/// records fit the new tree as they are (named relative), and the function whose code changed is
/// named as stale.
#[test]
fn the_next_releases_build_names_the_functions_its_profile_no_longer_fits() {
    let t = tempfile::tempdir().unwrap();
    let clang = Compiler::find("clang-22", None).unwrap();
    let profile = trained(&t.path().join("old"), &clang);
    // The next release: one function's control flow changed (inlined into kv_workload).
    let next = next_release(&t.path().join("next/pgofix"));
    let out = build_at(
        &next,
        &t.path().join("next/work"),
        "pgo+lto",
        &clang,
        Some(&profile),
    );
    assert_eq!(out.source_paths, SourcePaths::Relative, "{out:?}");
    assert_eq!(out.profile_relocated, None, "{out:?}");
    let st = out
        .stale
        .expect("a build with a profile says how stale it was");
    assert!(st.mismatched >= 1, "{st:?}");
    assert!(
        st.hottest
            .iter()
            .any(|(n, c)| n == "kv_workload" && c.is_some()),
        "{st:?}"
    );
}

/// BOLT's profile of one release carried to the next in its YAML form: BOLT infers the counts of
/// the function whose code changed, where the .fdata form leaves it unprofiled.
#[test]
fn a_bolt_profile_of_the_last_release_is_inferred_onto_the_next() {
    use pgoforge::profile::bolt;
    let t = tempfile::tempdir().unwrap();
    let b = pgoforge::toolchain::Bolt::find().expect("bolt is installed");
    let gcc = Compiler::find("gcc", None).unwrap();
    let old = build_at(
        &t.path().join("old/pgofix"),
        &t.path().join("old/work"),
        "baseline+bolt",
        &gcc,
        None,
    );
    let fdata_dir = t.path().join("fdata");
    fs::create_dir_all(&fdata_dir).unwrap();
    let inst = t.path().join("pgofix.inst");
    bolt::instrument_binary(&b, &old.binary, &fdata_dir, &inst, &t.path().join("i.log")).unwrap();
    assert!(Command::new(&inst)
        .args(["all", "20000"])
        .status()
        .unwrap()
        .success());
    let fdata = t.path().join("merged.fdata");
    bolt::merge_fdata(&b, &fdata_dir, &fdata).unwrap();
    let yaml = t.path().join("profile.yaml");
    bolt::yaml_profile(&b, &old.binary, &fdata, &yaml).unwrap();
    assert!(bolt::is_yaml(&yaml) && !bolt::is_yaml(&fdata));
    let text = fs::read_to_string(&yaml).unwrap();
    assert!(
        !text.contains(&*t.path().to_string_lossy()),
        "the YAML names a directory of this machine"
    );
    // The next release: hash() changed, so kv_workload's code moved.
    let next = next_release(&t.path().join("next/pgofix"));
    let new = build_at(
        &next,
        &t.path().join("next/work"),
        "baseline+bolt",
        &gcc,
        None,
    );
    let mut flags = bolt::probe_flags(&b).unwrap();
    flags.push(bolt::INFER_STALE.into());
    let out = t.path().join("out/pgofix.bolt");
    fs::create_dir_all(out.parent().unwrap()).unwrap();
    let log = t.path().join("opt.log");
    bolt::optimize_binary(&b, &new.binary, &yaml, &flags, &out, &log).unwrap();
    let said = fs::read_to_string(&log).unwrap();
    let inferred = said
        .lines()
        .find(|l| l.contains("inferred profile for"))
        .unwrap_or_else(|| panic!("no inference: {said}"));
    let n: u64 = inferred
        .split("inferred profile for ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(n >= 1, "{inferred}");
    assert_eq!(
        Command::new(&out)
            .args(["all", "20000"])
            .output()
            .unwrap()
            .stdout,
        Command::new(&new.binary)
            .args(["all", "20000"])
            .output()
            .unwrap()
            .stdout,
        "the BOLTed next release computes what it did before BOLT"
    );
}

/// pgoforge's exit status and all it printed (stdout, then stderr).
fn pgoforge(args: &[&str]) -> (i32, String) {
    let r = crate::common::pgoforge(args);
    (r.code, r.stdout + &r.stderr)
}

/// `dir` (holding one top directory NAME) packed as `out` the way pgoforge packs.
fn repack(dir: &Path, out: &Path) {
    let top = fs::read_dir(dir).unwrap().next().unwrap().unwrap();
    let name = top.file_name().to_string_lossy().into_owned();
    pgoforge::package::reproducible::write_tar_zst(&top.path(), &name, 1, out).unwrap();
}

fn unpacked(tarball: &Path, into: &Path) -> PathBuf {
    fs::create_dir_all(into).unwrap();
    pgoforge::package::unpack::unpack(tarball, into).unwrap()
}

/// A file of an unpacked package or sidecar changed, and its SHA256SUMS line made to match: the
/// manifest (or the sidecar's record) is what must catch it.
fn alter(root: &Path, rel: &str, change: impl Fn(&mut Vec<u8>)) {
    let p = root.join(rel);
    let mut bytes = fs::read(&p).unwrap();
    change(&mut bytes);
    fs::write(&p, &bytes).unwrap();
    let sums = fs::read_to_string(root.join("SHA256SUMS")).unwrap();
    let new = pgoforge::infra::fs::sha256_file(&p).unwrap();
    let fixed: String = sums
        .lines()
        .map(|l| match l.split_once("  ") {
            Some((_, n)) if n == rel => format!("{new}  {n}\n"),
            _ => format!("{l}\n"),
        })
        .collect();
    fs::write(root.join("SHA256SUMS"), fixed).unwrap();
}

/// The stand-in run's package `pkg` (its sidecar beside it): rebuilt elsewhere, the same bytes;
/// verified; and each kind of tampering refused with its status. Called by the pipeline test,
/// which made the package.
pub fn rebuild_and_tamper(pkg: &Path, standin: &Path, scratch: &Path) {
    let sidecar = pgoforge::package::sidecar::beside(pkg);
    assert!(sidecar.is_file(), "no sidecar beside {}", pkg.display());
    let p = pkg.to_str().unwrap();
    let w2 = scratch.join("another/place/work");
    let ran = crate::common::pgoforge(&[
        "rebuild",
        p,
        "--source",
        standin.to_str().unwrap(),
        "--work-dir",
        w2.to_str().unwrap(),
        "--json",
    ]);
    let out = format!("{}{}", ran.stdout, ran.stderr);
    assert_eq!(ran.code, 0, "{out}");
    let r: serde_json::Value =
        serde_json::from_str(&ran.stdout).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(r["binary_identical"], true, "{out}");
    assert_eq!(r["package_identical"], true, "{out}");
    let (code, out) = pgoforge(&["package", "verify", p, "--no-start"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("provenance: sidecar"), "{out}");

    // A swapped binary, its SHA256SUMS line made to match: the manifest's hash catches it.
    let pdir = scratch.join("tampered-package");
    let root = unpacked(pkg, &pdir);
    alter(&root, "bin/mariadbd", |b| b.extend_from_slice(b"\0evil"));
    let bad_pkg = scratch.join(pkg.file_name().unwrap());
    repack(&pdir, &bad_pkg);
    fs::copy(&sidecar, pgoforge::package::sidecar::beside(&bad_pkg)).unwrap();
    let (code, out) = pgoforge(&["package", "verify", bad_pkg.to_str().unwrap(), "--no-start"]);
    assert_eq!(code, 9, "{out}");
    assert!(out.contains("bin/mariadbd: its sha256"), "{out}");

    // A truncated profile in the sidecar (its own SHA256SUMS made to match).
    let sdir = scratch.join("tampered-sidecar");
    let sroot = unpacked(&sidecar, &sdir);
    let rel = "profiles/compiler.gcda/a.gcda";
    alter(&sroot, rel, |b| b.truncate(b.len() / 2));
    let bad_side = scratch.join("truncated.rebuild.tar.zst");
    repack(&sdir, &bad_side);
    let (code, out) = pgoforge(&[
        "package",
        "verify",
        p,
        "--no-start",
        "--sidecar",
        bad_side.to_str().unwrap(),
    ]);
    assert_eq!(code, 9, "{out}");
    assert!(out.contains("profiles/compiler.gcda"), "{out}");
    let w3 = scratch.join("w3");
    let (code, out) = pgoforge(&[
        "rebuild",
        p,
        "--sidecar",
        bad_side.to_str().unwrap(),
        "--source",
        standin.to_str().unwrap(),
        "--work-dir",
        w3.to_str().unwrap(),
    ]);
    assert_eq!(code, 9, "{out}");
    assert!(out.contains("profiles/compiler.gcda"), "{out}");

    // Another package's sidecar.
    let fdir = scratch.join("foreign-sidecar");
    let froot = unpacked(&sidecar, &fdir);
    alter(&froot, "rebuild.json", |b| {
        let s = String::from_utf8(b.clone()).unwrap();
        let v: serde_json::Value = serde_json::from_str(&s).unwrap();
        let name = v["package"].as_str().unwrap().to_string();
        *b = s.replace(&name, "mariadb-10.11.99-other").into_bytes();
    });
    let foreign = scratch.join("foreign.rebuild.tar.zst");
    repack(&fdir, &foreign);
    let (code, out) = pgoforge(&[
        "package",
        "verify",
        p,
        "--no-start",
        "--sidecar",
        foreign.to_str().unwrap(),
    ]);
    assert_eq!(code, 9, "{out}");
    assert!(
        out.contains("belongs to package mariadb-10.11.99-other"),
        "{out}"
    );

    // A consistent forgery: the binary changed, and the manifest, SHA256SUMS and sidecar all
    // made to agree with it. Verification cannot tell; a rebuild can (exit 11), and names the
    // section that differs.
    let gdir = scratch.join("forged-package");
    let groot = unpacked(pkg, &gdir);
    alter(&groot, "bin/mariadbd", |b| {
        let at = b
            .windows(7)
            .position(|w| w == b"MariaDB")
            .expect("the server names itself");
        b[at] = b'X';
    });
    let forged_sha = pgoforge::infra::fs::sha256_file(&groot.join("bin/mariadbd")).unwrap();
    alter(&groot, "manifest.json", |b| {
        let mut v: serde_json::Value = serde_json::from_slice(b).unwrap();
        v["binary_sha256"] = forged_sha.clone().into();
        *b = (serde_json::to_string_pretty(&v).unwrap() + "\n").into_bytes();
    });
    let manifest_sha = pgoforge::infra::fs::sha256_file(&groot.join("manifest.json")).unwrap();
    let forged = scratch.join("forged").join(pkg.file_name().unwrap());
    fs::create_dir_all(forged.parent().unwrap()).unwrap();
    repack(&gdir, &forged);
    let sfdir = scratch.join("forged-sidecar");
    let sfroot = unpacked(&sidecar, &sfdir);
    alter(&sfroot, "rebuild.json", |b| {
        let mut v: serde_json::Value = serde_json::from_slice(b).unwrap();
        v["binary_sha256"] = forged_sha.clone().into();
        v["manifest_sha256"] = manifest_sha.clone().into();
        *b = serde_json::to_vec_pretty(&v).unwrap();
    });
    repack(&sfdir, &pgoforge::package::sidecar::beside(&forged));
    let f = forged.to_str().unwrap();
    let (code, out) = pgoforge(&["package", "verify", f, "--no-start"]);
    assert_eq!(code, 0, "a consistent forgery passes verification: {out}");
    let (code, out) = pgoforge(&[
        "rebuild",
        f,
        "--source",
        standin.to_str().unwrap(),
        "--work-dir",
        scratch.join("w6").to_str().unwrap(),
    ]);
    assert_eq!(code, 11, "{out}");
    assert!(
        out.contains("DIFFERS")
            && out
                .lines()
                .any(|l| l.contains("section .") && l.contains("(loaded)")),
        "{out}"
    );

    // Another compiler version: refused before anything is fetched or built.
    let tdir = scratch.join("toolchain-sidecar");
    let troot = unpacked(&sidecar, &tdir);
    alter(&troot, "rebuild.json", |b| {
        let mut v: serde_json::Value = serde_json::from_slice(b).unwrap();
        v["toolchain"]["compiler_version"] = "gcc (Debian 11.3.0-1) 11.3.0".into();
        *b = serde_json::to_vec_pretty(&v).unwrap();
    });
    let other_cc = scratch.join("othercc.rebuild.tar.zst");
    repack(&tdir, &other_cc);
    let w4 = scratch.join("w4");
    let (code, out) = pgoforge(&[
        "rebuild",
        p,
        "--sidecar",
        other_cc.to_str().unwrap(),
        "--source",
        standin.to_str().unwrap(),
        "--work-dir",
        w4.to_str().unwrap(),
    ]);
    assert_eq!(code, 10, "{out}");
    assert!(
        out.contains("gcc (Debian 11.3.0-1) 11.3.0") && out.contains("--allow-toolchain-change"),
        "{out}"
    );
    assert!(
        !w4.join("builds").exists() && !w4.join("sources").exists(),
        "a refused rebuild fetched or built something"
    );
    let leftovers: Vec<_> = fs::read_dir(w4.join("rebuild"))
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}
