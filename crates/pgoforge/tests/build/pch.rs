//! Precompiled headers (builder/pch.rs) on a copy of the fixture project with gcc and clang: the
//! recipe's headers are compiled once and read by the target's C++ sources, a source that defines
//! something before its first include goes without, the instructions compiled are the same as
//! without them, the setting is in the build key, and a PGO cycle through them finds every
//! unit's profile.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use pgoforge::builder::{build, BuildOutput, BuildRequest, ProfileInput};
use pgoforge::recipe::Recipe;
use pgoforge::source::{self, Source};
use pgoforge::toolchain::Compiler;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/pgofix")
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            fs::copy(e.path(), dest).unwrap();
        }
    }
}

/// The fixture plus a header to precompile and a source that sets a macro up before its headers.
fn project(dir: &Path) {
    copy_dir(&fixture(), dir);
    fs::write(
        dir.join("src/pch.h"),
        "#include <algorithm>\n#include <string>\n#include <vector>\n#include \"fix.h\"\n",
    )
    .unwrap();
    fs::write(
        dir.join("src/defined.cpp"),
        "// Sets a macro before its first include: must be compiled without the precompiled header.\n\
         #define PGOFIX_DEFINED_FIRST 7\n#include <string>\n#include \"fix.h\"\n\
         extern \"C\" uint64_t defined_first(void) { return std::string(\"x\").size() + PGOFIX_DEFINED_FIRST; }\n",
    )
    .unwrap();
    let cm = dir.join("CMakeLists.txt");
    let text = fs::read_to_string(&cm).unwrap();
    fs::write(
        &cm,
        format!("{text}target_sources(pgofix PRIVATE src/defined.cpp)\n"),
    )
    .unwrap();
}

fn recipe(pch: bool) -> Recipe {
    let mut r = Recipe::load(fixture().join("recipe.toml").to_str().unwrap()).unwrap();
    r.build
        .cmake_args
        .push("-DCMAKE_EXPORT_COMPILE_COMMANDS=ON".into());
    if pch {
        r.build.precompile_headers =
            BTreeMap::from([("pgofix".to_string(), vec!["src/pch.h".to_string()])]);
    }
    r
}

fn make(
    work: &Path,
    recipe: &Recipe,
    src: &Source,
    variant: &str,
    cc: &Compiler,
    profile: Option<&ProfileInput>,
) -> BuildOutput {
    build(&BuildRequest {
        recipe,
        source: src,
        variant: variant.parse().unwrap(),
        compiler: cc,
        profile,
        work_dir: work,
        jobs: 2,
        progress: None,
        cluster: None,
        source_paths: pgoforge::builder::relative::SourcePaths::of_profile(profile),
    })
    .unwrap_or_else(|e| panic!("building {variant}: {e:#}"))
}

fn run(bin: &Path) -> String {
    let out = Command::new(bin).args(["all", "20000"]).output().unwrap();
    assert!(out.status.success(), "{} failed", bin.display());
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The compile command of each source (by file name) in the build's compile_commands.json.
fn commands(b: &BuildOutput) -> BTreeMap<String, String> {
    let db: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(b.build_dir.join("compile_commands.json")).unwrap(),
    )
    .unwrap();
    db.as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let file = e["file"].as_str().unwrap();
            let name = Path::new(file).file_name().unwrap().to_string_lossy();
            (name.to_string(), e["command"].as_str().unwrap().to_string())
        })
        .collect()
}

/// Every function of an object with its instructions, addresses and symbolic labels left out:
/// what was compiled, whatever the order of functions or the numbering of local labels.
fn functions(obj: &Path) -> BTreeMap<String, Vec<String>> {
    let out = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn"])
        .arg(obj)
        .output()
        .unwrap();
    assert!(out.status.success());
    let mut map = BTreeMap::new();
    let mut cur: Option<(String, Vec<String>)> = None;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let t = line.trim();
        if t.ends_with(">:") && !t.contains('\t') {
            if let Some((n, body)) = cur.take() {
                map.insert(n, body);
            }
            let name = t
                .split_once('<')
                .map_or(t, |(_, n)| n)
                .trim_end_matches(">:");
            cur = Some((name.to_string(), Vec::new()));
        } else if let (Some((_, body)), Some((_, ins))) = (cur.as_mut(), line.split_once('\t')) {
            let ins = ins.split('<').next().unwrap_or("").trim();
            // A call or jump's target address is an offset into a section whose layout may
            // differ; keep the mnemonic and operands without it.
            let ins: String = ins
                .split_whitespace()
                .filter(|w| !w.chars().all(|c| c.is_ascii_hexdigit()))
                .collect::<Vec<_>>()
                .join(" ");
            body.push(ins);
        }
    }
    if let Some((n, body)) = cur {
        map.insert(n, body);
    }
    map
}

fn object(b: &BuildOutput, name: &str) -> PathBuf {
    let mut found = Vec::new();
    let mut stack = vec![b.build_dir.clone()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|f| f == name) {
                found.push(p);
            }
        }
    }
    assert_eq!(
        found.len(),
        1,
        "{name} in {}: {found:?}",
        b.build_dir.display()
    );
    found.remove(0)
}

fn pch_artifact(b: &BuildOutput) -> bool {
    let mut stack = vec![b.build_dir.clone()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let n = p.file_name().unwrap().to_string_lossy().to_string();
            if p.is_dir() {
                stack.push(p);
            } else if n == "cmake_pch.hxx.gch" || n == "cmake_pch.hxx.pch" {
                return fs::metadata(&p).unwrap().len() > 0;
            }
        }
    }
    false
}

fn check(cc_name: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let proj = tmp.path().join("project");
    project(&proj);
    let work = tmp.path().join("work");
    let (with, without) = (recipe(true), recipe(false));
    let src = source::fetch(&with, Some(proj.to_str().unwrap()), None, &work).unwrap();
    let cc = Compiler::find(cc_name, None).unwrap();

    let plain = make(&work, &without, &src, "baseline", &cc, None);
    let pch = make(&work, &with, &src, "baseline", &cc, None);
    assert_ne!(plain.key, pch.key, "{cc_name}: the setting is in the key");
    assert!(pch_artifact(&pch), "{cc_name}: no precompiled header built");
    assert!(!pch_artifact(&plain), "{cc_name}: one without the setting");
    assert_eq!(run(&pch.binary), run(&plain.binary), "{cc_name}");

    let cmds = commands(&pch);
    for (file, with_pch) in [
        ("parse.cpp", true),
        ("workers.cpp", true),
        ("defined.cpp", false),
        ("kv.c", false),
        ("main.c", false),
    ] {
        let cmd = &cmds[file];
        assert_eq!(
            cmd.contains("cmake_pch"),
            with_pch,
            "{cc_name}: {file}: {cmd}"
        );
    }
    let log = fs::read_to_string(&pch.log).unwrap();
    assert!(
        log.contains("precompiled headers for pgofix: 2 sources with, 1 without"),
        "{cc_name}: {log}"
    );
    for obj in ["parse.cpp.o", "workers.cpp.o", "defined.cpp.o"] {
        let (a, b) = (
            functions(&object(&plain, obj)),
            functions(&object(&pch, obj)),
        );
        assert!(!a.is_empty(), "{cc_name}: {obj}: no function");
        assert_eq!(a, b, "{cc_name}: {obj}: the code compiled differs");
    }
    let cache = |b: &BuildOutput| fs::read_to_string(b.build_dir.join("CMakeCache.txt")).unwrap();
    assert!(cache(&pch).contains("CMAKE_PROJECT_INCLUDE"), "{cc_name}");
    assert!(
        !cache(&plain).contains("CMAKE_PROJECT_INCLUDE:"),
        "{cc_name}"
    );
}

#[test]
fn precompiled_headers_change_the_build_time_not_the_code() {
    check("gcc");
    check("clang");
}

#[test]
fn a_gcc_pgo_cycle_through_precompiled_headers_finds_every_units_profile() {
    let tmp = tempfile::tempdir().unwrap();
    let proj = tmp.path().join("project");
    project(&proj);
    let work = tmp.path().join("work");
    let r = recipe(true);
    let src = source::fetch(&r, Some(proj.to_str().unwrap()), None, &work).unwrap();
    let gcc = Compiler::find("gcc", None).unwrap();
    let base = make(&work, &r, &src, "baseline", &gcc, None);
    let expected = run(&base.binary);
    let gen = make(&work, &r, &src, "pgo-gen", &gcc, None);
    assert!(pch_artifact(&gen));
    assert_eq!(run(&gen.binary), expected);
    let gen_dir = gen.profile_gen_dir.clone().unwrap();
    let pgo = make(
        &work,
        &r,
        &src,
        "pgo",
        &gcc,
        Some(&ProfileInput::GccDir(gen_dir)),
    );
    assert!(pch_artifact(&pgo));
    // defined.cpp is never run: GCC says so as a missing profile for that unit, and only that.
    let log = fs::read_to_string(&pgo.log).unwrap();
    let missing: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("[-Wmissing-profile]"))
        .collect();
    assert!(
        missing.iter().all(|l| l.contains("defined.cpp")),
        "{missing:?}"
    );
    assert_eq!(run(&pgo.binary), expected);
}
